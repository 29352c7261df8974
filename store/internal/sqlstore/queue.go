package sqlstore

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// InsertEntry queues one entry with its requirement rows (InsertEntries of one).
func (t *Tx) InsertEntry(e *store.Entry) error { return t.InsertEntries([]*store.Entry{e}) }

// insertEntriesChunk bounds the entries of one InsertEntries statement (15 arguments each).
const insertEntriesChunk = 64

// InsertEntries queues entries with their requirement rows; the queue IDs follow the order
// given, so callers insert in (due time, run_id, task order) order (§4.4). Entries whose ID is
// set (from NextIDs, in order) are inserted with it; a batch has ids on all or none. Per chunk, one
// INSERT of the entries (those without ids read theirs back, readIDs) and one of their
// requirement rows: a pass that starts a 3,000-task fan-out queues it in about a hundred
// statements instead of 6,000.
func (t *Tx) InsertEntries(es []*store.Entry) error {
	explicit := len(es) > 0 && es[0].ID != 0
	var maxID int64
	for len(es) > 0 {
		chunk := es[:min(len(es), insertEntriesChunk)]
		es = es[len(chunk):]
		args := make([]any, 0, 16*len(chunk))
		for _, e := range chunk {
			if explicit {
				args = append(args, e.ID)
				maxID = max(maxID, e.ID)
			}
			args = append(args, e.Run, e.TaskID, e.TryNumber, e.Label, e.Priority, store.Micros(e.Due), nullMicros(e.Deadline),
				e.State, e.Force, nullString(e.Rule), nullString(e.RuleSkipped), e.Replay, e.Fingerprint, store.Micros(e.CreatedAt), t.stamp())
		}
		cols, tuple := "", "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
		if explicit {
			cols, tuple = "id, ", "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
		}
		q := `INSERT INTO queue_entries (` + cols + `run, task_id, try_number, label, priority, due, deadline, state, force, rule,
			rule_skipped, replay, fingerprint, created_at, seq) VALUES ` + rowsOf(len(chunk), tuple)
		if explicit {
			// The ids are the entries' own: nothing to read back (a row that is not inserted
			// fails the statement).
			if _, err := t.exec(q, args...); err != nil {
				return err
			}
		} else if err := t.readIDs(q+` RETURNING id, run, task_id, try_number`, args, chunk); err != nil {
			return err
		}
		args = args[:0]
		n := 0
		for _, e := range chunk {
			for _, r := range e.Needs {
				args = append(args, e.ID, r.Pool, r.Slots, r.Implicit, capacityOf(r))
				n++
			}
		}
		for n > 0 {
			// At most 200 rows (1,000 arguments) per statement.
			m := min(n, 200)
			if _, err := t.exec(`INSERT INTO entry_requirements (entry, pool, slots, implicit, capacity) VALUES `+
				rowsOf(m, "(?, ?, ?, ?, ?)"), args[:5*m]...); err != nil {
				return err
			}
			args, n = args[5*m:], n-m
		}
	}
	if explicit {
		return t.idsTaken("queue_entries", maxID)
	}
	return nil
}

// readIDs runs an INSERT … RETURNING of entries without ids and gives each entry of chunk its
// id, matched back by (run, task, try) since RETURNING promises no order.
func (t *Tx) readIDs(q string, args []any, chunk []*store.Entry) error {
	rows, err := t.query(q, args...)
	if err != nil {
		return err
	}
	ids := make(map[tryKey]int64, len(chunk))
	for rows.Next() {
		var k tryKey
		var id int64
		if err := rows.Scan(&id, &k.run, &k.task, &k.try); err != nil {
			rows.Close()
			return unavailable(err)
		}
		ids[k] = id
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return t.fail(q, err)
	}
	t.wrote = true
	for _, e := range chunk {
		id, ok := ids[tryKey{e.Run, e.TaskID, e.TryNumber}]
		if !ok {
			return fmt.Errorf("%w: entry %s try %d of run %d was not inserted", store.ErrUnavailable, e.TaskID, e.TryNumber, e.Run)
		}
		e.ID = id
	}
	return nil
}

// capacityOf is a requirement's capacity column: the limit of an implicit pool, NULL otherwise.
func capacityOf(n store.Requirement) any {
	if n.Implicit {
		return n.Capacity
	}
	return nil
}

// rowsOf repeats a VALUES tuple n times.
func rowsOf(n int, tuple string) string {
	return strings.TrimSuffix(strings.Repeat(tuple+", ", n), ", ")
}

const entryCols = `e.id, e.run, e.task_id, e.try_number, e.label, e.priority, e.due, e.deadline, e.state, e.force,
	COALESCE(e.reason_code, ''), COALESCE(e.reason, ''), COALESCE(e.rule, ''), COALESCE(e.rule_skipped, ''), e.replay, e.not_before, e.fingerprint,
	e.created_at, e.admitted_at, e.ended_at, COALESCE(r.owner, ''), r.dag_id, r.run_id, r.run_type, COALESCE(e.version, 0), COALESCE(r.backfill, 0)`

func scanEntry(sc interface{ Scan(...any) error }) (store.Entry, error) {
	var e store.Entry
	var due, created int64
	var deadline, admitted, ended, notBefore sql.NullInt64
	err := sc.Scan(&e.ID, &e.Run, &e.TaskID, &e.TryNumber, &e.Label, &e.Priority, &due, &deadline, &e.State, &e.Force,
		&e.ReasonCode, &e.Reason, &e.Rule, &e.RuleSkipped, &e.Replay, &notBefore, &e.Fingerprint, &created, &admitted, &ended, &e.Owner,
		&e.DAGID, &e.RunID, &e.RunType, &e.Version, &e.Backfill)
	e.Due, e.CreatedAt, e.NotBefore = store.FromMicros(due), store.FromMicros(created), timeOf(notBefore)
	e.Deadline, e.AdmittedAt, e.EndedAt = timeOf(deadline), timeOf(admitted), timeOf(ended)
	return e, err
}

// Entries lists entries in the given states (all waiting and admitted entries of every daemon,
// for instance) with their requirement rows, ordered by queue ID.
func (t *Tx) Entries(states ...vocab.EntryState) ([]store.Entry, error) {
	return entries(t.ctx, t.q(), states, 0)
}

// EndEntry gives a waiting entry a terminal state (expired, cancelled, rejected, retired, or done
// for a sensor that timed out between pokes) with a reason, and releases any claim it kept.
func (t *Tx) EndEntry(id int64, state vocab.EntryState, code vocab.ReasonCode, reason string, now time.Time) error {
	if err := t.moveEntry(id, state, `reason_code = ?, reason = ?, ended_at = ?`,
		nullString(string(code)), nullString(reason), store.Micros(now)); err != nil {
		return err
	}
	_, err := t.exec(`DELETE FROM claims WHERE entry = ?`, id)
	return err
}

// SetForce marks an entry for a force start (§4.4).
func (t *Tx) SetForce(id int64) error {
	_, err := t.exec(`UPDATE queue_entries SET force = TRUE, seq = ? WHERE id = ?`, t.stamp(), id)
	return err
}

// Admit debits every requirement of an entry in claims rows and marks it admitted. Together
// with the other admissions of a pass it commits or rolls back as one (§4.3).
func (t *Tx) Admit(e *store.Entry, daemon string, epoch int64, now, leaseUntil time.Time) error {
	const set = `admitted_at = ?, version = ?, reason_code = NULL, reason = NULL`
	t.markUse(store.Micros(now))
	if t.s.d.WritingWith && t.failAfter == nil && len(e.Needs) > 0 {
		// The move and the claims in one statement: no claim is written unless the move is.
		q, args := t.moveStatement(e.ID, vocab.EntryAdmitted, set, store.Micros(now), nullInt(e.Version))
		args = append(args, daemon, epoch, store.Micros(leaseUntil))
		for _, n := range e.Needs {
			args = append(args, n.Pool, n.Slots)
		}
		res, err := t.exec(`WITH m AS (`+q+` RETURNING id) INSERT INTO claims (entry, pool, slots, daemon, epoch, lease_until)
			SELECT m.id, v.pool, v.slots, ?::text, ?::bigint, ?::bigint FROM m, (VALUES `+
			rowsOf(len(e.Needs), "(?::text, ?::bigint)")+`) AS v (pool, slots)`, args...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return t.entryStateError(e.ID, vocab.EntryAdmitted)
		}
		return nil
	}
	if err := t.moveEntry(e.ID, vocab.EntryAdmitted, set, store.Micros(now), nullInt(e.Version)); err != nil {
		return err
	}
	if t.failAfter != nil {
		// Failure injection debits pool by pool so a test can fail between two pools.
		for _, n := range e.Needs {
			if *t.failAfter--; *t.failAfter == 0 {
				return fmt.Errorf("insert claim %s for entry %d: %w", n.Pool, e.ID, store.ErrInjected)
			}
			if _, err := t.exec(`INSERT INTO claims (entry, pool, slots, daemon, epoch, lease_until) VALUES (?, ?, ?, ?, ?, ?)`,
				e.ID, n.Pool, n.Slots, daemon, epoch, store.Micros(leaseUntil)); err != nil {
				return err
			}
		}
	} else if len(e.Needs) > 0 {
		args := make([]any, 0, 6*len(e.Needs))
		for _, n := range e.Needs {
			args = append(args, e.ID, n.Pool, n.Slots, daemon, epoch, store.Micros(leaseUntil))
		}
		if _, err := t.exec(`INSERT INTO claims (entry, pool, slots, daemon, epoch, lease_until) VALUES `+
			rowsOf(len(e.Needs), "(?, ?, ?, ?, ?, ?)"), args...); err != nil {
			return err
		}
	}
	return nil
}

// FailClaimAfter makes the n-th claim insert of this transaction fail (tests only).
func (t *Tx) FailClaimAfter(n int) { t.failAfter = &n }

// SetPGIDs records the process groups of admitted entries' attempts on their claims: one
// statement for the starts of a pass.
func (t *Tx) SetPGIDs(pgids map[int64]int, daemon string, epoch int64) error {
	if len(pgids) == 0 {
		return nil
	}
	entries := make([]int64, 0, len(pgids))
	for id := range pgids {
		entries = append(entries, id)
	}
	slices.Sort(entries) // one statement text per count, the same arguments for the same starts
	args := make([]any, 0, 3*len(entries)+2)
	for _, id := range entries {
		args = append(args, id, pgids[id])
	}
	args = append(args, daemon, epoch)
	for _, id := range entries {
		args = append(args, id)
	}
	_, err := t.exec(`UPDATE claims SET pgid = CASE entry`+strings.Repeat(` WHEN ? THEN CAST(? AS BIGINT)`, len(entries))+
		` END WHERE daemon = ? AND epoch = ? AND entry IN (?`+strings.Repeat(`, ?`, len(entries)-1)+`)`, args...)
	return err
}

// HoldsClaim reports whether daemon still holds entry's claims under epoch (the fencing check
// before a completion is written, §4.8).
func (t *Tx) HoldsClaim(entry int64, daemon string, epoch int64) (bool, error) {
	var n int
	err := t.queryRow(`SELECT COUNT(*) FROM claims WHERE entry = ? AND daemon = ? AND epoch = ?`,
		entry, daemon, epoch).Scan(&n)
	return n > 0, unavailable(err)
}

// Claims lists every held claim with its entry's label. The label is a lookup per claim by the
// entry's key: joined, PostgreSQL without statistics on a table that just grew hashes every
// entry ever queued on each pass.
func (t *Tx) Claims() ([]store.Claim, error) {
	rows, err := t.query(`SELECT c.entry, c.pool, c.slots, c.daemon, c.epoch, COALESCE(c.pgid, 0), c.lease_until,
		(SELECT e.label FROM queue_entries e WHERE e.id = c.entry)
		FROM claims c ORDER BY c.entry, c.pool`)
	if err != nil {
		return nil, err
	}
	return scanClaims(rows)
}

func scanClaims(rows *sql.Rows) ([]store.Claim, error) {
	defer rows.Close()
	var out []store.Claim
	var pool, daemon sql.RawBytes
	for rows.Next() {
		var c store.Claim
		var lease int64
		if err := rows.Scan(&c.Entry, &pool, &c.Slots, &daemon, &c.Epoch, &c.PGID, &lease, &c.Label); err != nil {
			return nil, unavailable(err)
		}
		// A pass reads every claim: the few pool and daemon names are not allocated each time.
		c.Pool, c.Daemon = names.of(pool), names.of(daemon)
		c.LeaseUntil = store.FromMicros(lease)
		out = append(out, c)
	}
	return out, unavailable(rows.Err())
}

// names interns pool and daemon names read from claims, up to a bound (a name past it is
// allocated as usual).
var names = &nameTable{m: map[string]string{}}

type nameTable struct {
	mu sync.Mutex
	m  map[string]string
}

func (t *nameTable) of(b []byte) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(t.m) < 4096 {
		t.m[s] = s
	}
	return s
}

// QueuedCount counts entries that hold a backlog place in a pool: waiting ones, and ended ones
// the task scheduler has not observed yet (§4.6).
func (t *Tx) QueuedCount(pool string) (int, error) {
	var n int
	err := t.queryRow(`SELECT COUNT(*) FROM entry_requirements q JOIN queue_entries e ON e.id = q.entry
		WHERE q.pool = ? AND e.state = 'waiting'`, pool).Scan(&n)
	return n, unavailable(err)
}

// RequeueEntry releases an admitted entry's claims at once and puts it back in the queue with the
// same try number, its task instance back to scheduled (recovery, lost leases, shutdown, §4.8).
// The entry's next run appends to the same attempt log after a replay line.
func (t *Tx) RequeueEntry(id int64) error {
	// The admission leaves the history: its slice is drawn again without it.
	if err := t.markEntryUse(id); err != nil {
		return err
	}
	if err := t.moveEntry(id, vocab.EntryWaiting, `replay = TRUE, admitted_at = NULL`); err != nil {
		return err
	}
	if _, err := t.exec(`DELETE FROM claims WHERE entry = ?`, id); err != nil {
		return err
	}
	_, err := t.exec(`UPDATE task_instances SET state = 'scheduled', seq = ?
		WHERE (run, task_id) = (SELECT run, task_id FROM queue_entries WHERE id = ?) AND state = 'running'`, t.stamp(), id)
	return err
}

// ReleaseEntry releases every claim of an entry whose holder is gone or whose lease lapsed: an
// admitted entry goes back to the queue (RequeueEntry); a waiting one (a sensor between pokes)
// only loses the claims it kept. It returns the state the entry was in.
func (t *Tx) ReleaseEntry(id int64) (vocab.EntryState, error) {
	var cur vocab.EntryState
	if err := t.queryRow(`SELECT state FROM queue_entries WHERE id = ?`, id).Scan(&cur); err != nil {
		return "", unavailable(err)
	}
	if cur == vocab.EntryAdmitted {
		return cur, t.RequeueEntry(id)
	}
	_, err := t.exec(`DELETE FROM claims WHERE entry = ?`, id)
	return cur, err
}

// ReleaseHeld is the release of a completion: it marks the entry done and deletes its claims
// only if daemon still holds them under epoch (the fencing check of §4.8). It reports false,
// changing nothing, when the claims are gone or belong to another epoch.
func (t *Tx) ReleaseHeld(id int64, daemon string, epoch int64, now time.Time) (bool, error) {
	if t.s.d.WritingWith {
		// The fenced delete and the move in one statement; the move only when the delete found
		// the claims.
		q, args := t.moveStatement(id, vocab.EntryDone, `ended_at = ?`, store.Micros(now))
		var deleted, moved int
		q = `WITH d AS (DELETE FROM claims WHERE entry = ? AND daemon = ? AND epoch = ? RETURNING entry),
			m AS (` + q + ` AND EXISTS (SELECT 1 FROM d) RETURNING id)
			SELECT (SELECT COUNT(*) FROM d), (SELECT COUNT(*) FROM m)`
		if err := t.queryRow(q, append([]any{id, daemon, epoch}, args...)...).Scan(&deleted, &moved); err != nil {
			return false, t.fail(q, err)
		}
		t.wrote = t.wrote || deleted > 0
		switch {
		case deleted == 0:
			return false, nil
		case moved == 0:
			return false, t.entryStateError(id, vocab.EntryDone)
		}
		t.markUse(store.Micros(now))
		return true, nil
	}
	// The fenced delete is the check: an entry's claims are all written by one holder under one
	// epoch, so none are deleted when another holds them. A refused state move below rolls the
	// transaction (and the delete) back.
	res, err := t.exec(`DELETE FROM claims WHERE entry = ? AND daemon = ? AND epoch = ?`, id, daemon, epoch)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	t.markUse(store.Micros(now))
	return true, t.moveEntry(id, vocab.EntryDone, `ended_at = ?`, store.Micros(now))
}

// RequeueHeld is RequeueEntry for the holder itself (shutdown, a lost lease): it acts only while
// daemon still holds the entry's claims under epoch, and reports whether it did.
func (t *Tx) RequeueHeld(id int64, daemon string, epoch int64) (bool, error) {
	held, err := t.HoldsClaim(id, daemon, epoch)
	if err != nil || !held {
		return false, err
	}
	return true, t.RequeueEntry(id)
}

// RetireOrphans retires the waiting entries of runs that have ended (§4.6: if the DAG run
// already ended, the entry is retired and its backlog place released), with the claims they
// kept, and reports how many it retired.
func (t *Tx) RetireOrphans(now time.Time) (int, error) {
	const orphan = `state = 'waiting' AND run IN (SELECT id FROM dag_runs WHERE state NOT IN ('queued', 'running'))`
	if _, err := t.exec(`DELETE FROM claims WHERE entry IN (SELECT id FROM queue_entries WHERE ` + orphan + `)`); err != nil {
		return 0, err
	}
	res, err := t.exec(`UPDATE queue_entries SET state = 'retired', reason_code = 'retired', reason = 'the run has ended',
		ended_at = ?, seq = ? WHERE `+orphan, store.Micros(now), t.stamp())
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// FinishDrain switches a draining pool to its new capacity once no entry waits for it (§4.7),
// a change of the capacity history at now.
func (t *Tx) FinishDrain(name string, now time.Time) (bool, error) {
	res, err := t.exec(`UPDATE pools SET slots = target_slots, target_slots = NULL
		WHERE name = ? AND target_slots IS NOT NULL AND NOT EXISTS (
			SELECT 1 FROM entry_requirements q JOIN queue_entries e ON e.id = q.entry
			WHERE q.pool = pools.name AND e.state = 'waiting')`, name)
	if err != nil {
		return false, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	_, err = t.exec(`INSERT INTO pool_capacity (pool, at, slots) SELECT name, ?, slots FROM pools WHERE name = ?`, store.Micros(now), name)
	return err == nil, err
}

// Reschedule puts an admitted reschedule sensor back in the queue between pokes with the same
// queue ID, try number and due time: it releases every claim except those in keep (its
// include_deferred pools, §5.1) and is not admitted again before notBefore.
func (t *Tx) Reschedule(id int64, keep []string, notBefore time.Time) error {
	q := `DELETE FROM claims WHERE entry = ?`
	args := []any{id}
	if len(keep) > 0 {
		q += ` AND pool NOT IN (?` + strings.Repeat(", ?", len(keep)-1) + `)`
		for _, k := range keep {
			args = append(args, k)
		}
	}
	if err := t.markEntryUse(id); err != nil {
		return err
	}
	if err := t.moveEntry(id, vocab.EntryWaiting, `not_before = ?, admitted_at = NULL`, store.Micros(notBefore)); err != nil {
		return err
	}
	_, err := t.exec(q, args...)
	return err
}

// RecordEnd writes the end of entry id's attempt for a writer that no longer has its run in
// memory: the attempt row, and the task instance's final state and dates if it still shows the
// attempt running.
func (t *Tx) RecordEnd(id int64, a *store.Attempt) error {
	var version int
	if err := t.queryRow(`SELECT run, task_id, COALESCE(version, 0) FROM queue_entries WHERE id = ?`, id).Scan(&a.Run,
		&a.TaskID, &version); err != nil {
		return unavailable(err)
	}
	if a.Version == 0 {
		a.Version = version // the version it was admitted under: the one it ran
	}
	if err := t.InsertAttempt(a); err != nil {
		return err
	}
	_, err := t.exec(`UPDATE task_instances SET state = ?, try_number = ?, start_date = ?, end_date = ?, next_at = NULL,
		reason_code = ?, reason = ?, seq = ? WHERE run = ? AND task_id = ? AND state = 'running'`, a.State, a.TryNumber,
		nullMicros(a.StartDate), nullMicros(a.EndDate), nullString(string(a.ReasonCode)), nullString(a.Reason), t.stamp(),
		a.Run, a.TaskID)
	return err
}
