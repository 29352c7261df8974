package sqlstore

import (
	"fmt"

	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

const runCols = `id, dag_id, run_id, run_type, logical_date, state, conf, note, note_by, note_at, no_queue,
	COALESCE(owner, ''), queued_at, start_date, end_date, COALESCE(reason_code, ''), COALESCE(reason, ''),
	COALESCE(version, 0), COALESCE(backfill, 0)`

func scanRun(sc interface{ Scan(...any) error }) (store.Run, error) {
	var r store.Run
	var logical, queued int64
	var noteAt, start, end sql.NullInt64
	err := sc.Scan(&r.PK, &r.DAGID, &r.RunID, &r.RunType, &logical, &r.State, &r.Conf, &r.Note, &r.NoteBy, &noteAt,
		&r.NoQueue, &r.Owner, &queued, &start, &end, &r.ReasonCode, &r.Reason, &r.Version, &r.Backfill)
	r.LogicalDate, r.QueuedAt, r.StartDate, r.EndDate = store.FromMicros(logical), store.FromMicros(queued), timeOf(start), timeOf(end)
	r.NoteAt = timeOf(noteAt)
	return r, err
}

// InsertRun creates a run, with the id r.PK when it is set (from NextIDs), else the next one
// NextIDs names, so that the id of a deleted run is never given again (SQLite's rowid would be
// MAX(id) + 1); a scheduled fire that another daemon created already is ErrConflict. The run's
// note (a trigger's) is written with who and when.
func (t *Tx) InsertRun(r *store.Run) error {
	pk := r.PK
	if pk == 0 {
		var err error
		if pk, _, err = t.NextIDs(); err != nil {
			return err
		}
	}
	// ON CONFLICT DO NOTHING rather than a unique violation: on PostgreSQL a failed statement
	// would end the whole pass's transaction.
	id, ok, err := t.insertID(`INSERT INTO dag_runs (id, dag_id, run_id, run_type, logical_date, state, conf, note,
		note_by, note_at, no_queue, owner, queued_at, start_date, end_date, reason_code, reason, version, backfill, seq)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING RETURNING id`, pk, r.DAGID, r.RunID, r.RunType, store.Micros(r.LogicalDate), r.State,
		orJSON(r.Conf), r.Note, r.NoteBy, nullMicros(r.NoteAt), r.NoQueue, nullString(r.Owner), store.Micros(r.QueuedAt),
		nullMicros(r.StartDate), nullMicros(r.EndDate), nullString(string(r.ReasonCode)), nullString(r.Reason),
		nullInt(r.Version), nullInt64(r.Backfill), t.stamp())
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("%w: dag run %s of %s exists", store.ErrConflict, r.RunID, r.DAGID)
	}
	if err := t.idsTaken("dag_runs", pk); err != nil {
		return err
	}
	r.PK = id
	return nil
}

// NextIDs reads the ids the next run and the next queue entry inserted get. Under the
// writers' lock they are exact: a pass gives its new runs and entries their ids itself
// (InsertRun, InsertEntries with ids set) and decides on them before it writes.
func (t *Tx) NextIDs() (run, entry int64, err error) {
	err = t.queryRow(t.s.d.NextIDs).Scan(&run, &entry)
	return run, entry, unavailable(err)
}

// idsTaken tells the id generator of table that ids up to max are used.
func (t *Tx) idsTaken(table string, max int64) error {
	if t.s.d.IDsTaken == nil {
		return nil
	}
	return unavailable(t.s.d.IDsTaken(txRows{t}, table, max))
}

// RunExists reports whether dag dagID has a run runID.
func (t *Tx) RunExists(dagID, runID string) (bool, error) {
	var n int
	err := t.queryRow(`SELECT COUNT(*) FROM dag_runs WHERE dag_id = ? AND run_id = ?`, dagID, runID).Scan(&n)
	return n > 0, unavailable(err)
}

func orJSON(s string) string {
	if s == "" {
		return "{}"
	}
	return s
}

// UpdateRun writes a run's state, dates, reason and owner; never its note, which the caller's
// copy may hold from before a SetNote. A run's version is what it was created with: written
// only when it had none (a run dags trigger created, taken by a daemon).
func (t *Tx) UpdateRun(r *store.Run) error {
	_, err := t.exec(`UPDATE dag_runs SET state = ?, start_date = ?, end_date = ?, reason_code = ?, reason = ?, owner = ?,
		version = COALESCE(version, ?), backfill = COALESCE(?, backfill), seq = ? WHERE id = ?`, r.State,
		nullMicros(r.StartDate), nullMicros(r.EndDate), nullString(string(r.ReasonCode)), nullString(r.Reason),
		nullString(r.Owner), nullInt(r.Version), nullInt64(r.Backfill), t.stamp(), r.PK)
	return err
}

// OpenRuns lists every queued and running run, whoever owns it: a daemon needs them all to count
// runs across daemons (§9) and to tell its own from the live and the dead owners' ones.
func (t *Tx) OpenRuns() ([]store.Run, error) {
	rows, err := t.query(`SELECT ` + runCols + ` FROM dag_runs WHERE state IN ('queued', 'running') ORDER BY id`)
	if err != nil {
		return nil, err
	}
	return scanRuns(rows)
}

func scanRuns(rows *sql.Rows) ([]store.Run, error) {
	defer rows.Close()
	var out []store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, unavailable(err)
		}
		out = append(out, r)
	}
	return out, unavailable(rows.Err())
}

// RunByPK reads a run by its key; ErrNotFound for none.
func (t *Tx) RunByPK(pk int64) (store.Run, error) {
	r, err := scanRun(t.queryRow(`SELECT `+runCols+` FROM dag_runs WHERE id = ?`, pk))
	if errors.Is(err, sql.ErrNoRows) {
		return r, store.ErrNotFound
	}
	return r, unavailable(err)
}

// InsertTI creates a task instance, without a note (only SetNote writes a task instance's).
func (t *Tx) InsertTI(ti *store.TaskInstance) error {
	_, err := t.exec(`INSERT INTO task_instances (run, task_id, state, try_number, max_tries, start_date, end_date, next_at,
		reason_code, reason, map_first, map_next, map_length, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, ti.Run, ti.TaskID, ti.State,
		ti.TryNumber, ti.MaxTries, nullMicros(ti.StartDate), nullMicros(ti.EndDate), nullMicros(ti.NextAt),
		nullString(string(ti.ReasonCode)), nullString(ti.Reason), ti.MapFirst, ti.MapNext, ti.MapLength, t.stamp())
	return err
}

// UpdateTI writes a task instance, but not its note: the caller's copy may hold one from before
// a SetNote.
func (t *Tx) UpdateTI(ti *store.TaskInstance) error {
	_, err := t.exec(`UPDATE task_instances SET state = ?, try_number = ?, max_tries = ?, start_date = ?, end_date = ?,
		next_at = ?, reason_code = ?, reason = ?, map_first = ?, map_next = ?, map_length = ?, seq = ? WHERE run = ? AND task_id = ?`, ti.State,
		ti.TryNumber, ti.MaxTries, nullMicros(ti.StartDate), nullMicros(ti.EndDate), nullMicros(ti.NextAt),
		nullString(string(ti.ReasonCode)), nullString(ti.Reason), ti.MapFirst, ti.MapNext, ti.MapLength, t.stamp(), ti.Run, ti.TaskID)
	return err
}

// putTIsChunk bounds the rows of one PutTIs statement; each distinct count is its own prepared
// statement, so they stay few.
const putTIsChunk = 64

// PutTIs writes task instances, inserting those that do not exist yet: one statement for up to
// putTIsChunk of them, so a pass writes the task instances it changed in a few statements. As
// UpdateTI, it leaves their notes as they are.
func (t *Tx) PutTIs(tis []*store.TaskInstance) error {
	for len(tis) > 0 {
		n := min(len(tis), putTIsChunk)
		args := make([]any, 0, 14*n)
		stamp := t.stamp()
		for _, ti := range tis[:n] {
			args = append(args, ti.Run, ti.TaskID, ti.State, ti.TryNumber, ti.MaxTries, nullMicros(ti.StartDate),
				nullMicros(ti.EndDate), nullMicros(ti.NextAt), nullString(string(ti.ReasonCode)), nullString(ti.Reason),
				ti.MapFirst, ti.MapNext, ti.MapLength, stamp)
		}
		if _, err := t.exec(`INSERT INTO task_instances (run, task_id, state, try_number, max_tries, start_date, end_date,
			next_at, reason_code, reason, map_first, map_next, map_length, seq) VALUES `+rowsOf(n, "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")+`
			ON CONFLICT (run, task_id) DO UPDATE SET state = excluded.state, try_number = excluded.try_number,
			max_tries = excluded.max_tries, start_date = excluded.start_date, end_date = excluded.end_date,
			next_at = excluded.next_at, reason_code = excluded.reason_code, reason = excluded.reason,
			map_first = excluded.map_first, map_next = excluded.map_next, map_length = excluded.map_length, seq = excluded.seq`, args...); err != nil {
			return err
		}
		tis = tis[n:]
	}
	return nil
}

// ReserveEntryIDs takes the queue IDs up to last: no entry inserted later is given one of
// them (NextIDs answers past it), so a mapped task's line can queue its instances with the
// IDs its expansion reserved (§14).
func (t *Tx) ReserveEntryIDs(last int64) error {
	if t.s.d.ReserveIDs != nil {
		return unavailable(t.s.d.ReserveIDs(txRows{t}, "queue_entries", last))
	}
	return t.idsTaken("queue_entries", last)
}

// TaskInstances lists a run's task instances.
func (t *Tx) TaskInstances(run int64) ([]store.TaskInstance, error) {
	rows, err := t.query(withLines(`run = ?`), run, run)
	if err != nil {
		return nil, err
	}
	return scanLines(rows)
}

// withLines selects the task instances whose run matches where (a condition on the column run,
// whose arguments are given twice), with the mapped instances that wait in their task's line
// without a row yet (§14): instance i of a mapped task, for i from its map_next to its
// map_length, is none with reason code map_line until the scheduler writes its row when it
// queues it. The rows are generated by the database, so a mapped task of 10,000 items is one
// row until its instances are queued, and every reader lists all of them.
func withLines(where string) string {
	return `WITH RECURSIVE line(run, task, n, head, last) AS (
		SELECT run, task_id, map_next, map_next, map_length FROM task_instances WHERE ` + where + ` AND map_next < map_length
		UNION ALL SELECT run, task, n + 1, head, last FROM line WHERE n + 1 < last)
	SELECT ` + tiCols + `, 0 FROM task_instances WHERE ` + where + `
	UNION ALL SELECT line.run, ` + lineID + `, 'none', 0, NULL, NULL, NULL, 'map_line', '', 0, '', '', NULL, 0, 0, 0, NULL,
		line.n - line.head
	FROM line WHERE NOT EXISTS (SELECT 1 FROM task_instances x WHERE x.run = line.run AND x.task_id = ` + lineID + `)`
}

// lineID is the task id of line's instance: "task[n]".
const lineID = `line.task || '[' || CAST(line.n AS TEXT) || ']'`

// tiCols are the columns scanTIs reads.
const tiCols = `run, task_id, state, try_number, start_date, end_date, next_at, COALESCE(reason_code, ''),
	COALESCE(reason, ''), max_tries, note, note_by, note_at, map_first, map_next, map_length, ` + tiOutput

// tiOutput is a task instance's output: its successful attempt's (§14), found by the attempts'
// primary key; NULL unless the task instance is a success.
const tiOutput = `(SELECT a.output FROM attempts a WHERE a.run = task_instances.run AND a.task_id = task_instances.task_id
	AND a.try_number = task_instances.try_number AND a.state = 'success' AND task_instances.state = 'success')`

func scanTIs(rows *sql.Rows) ([]store.TaskInstance, error) { return scanTIRows(rows, false) }

// scanLines reads the rows of a withLines query: tiCols and each one's Ahead.
func scanLines(rows *sql.Rows) ([]store.TaskInstance, error) { return scanTIRows(rows, true) }

func scanTIRows(rows *sql.Rows, ahead bool) ([]store.TaskInstance, error) {
	defer rows.Close()
	var out []store.TaskInstance
	for rows.Next() {
		var ti store.TaskInstance
		var start, end, next, noteAt sql.NullInt64
		var output sql.NullString
		dest := []any{&ti.Run, &ti.TaskID, &ti.State, &ti.TryNumber, &start, &end, &next, &ti.ReasonCode,
			&ti.Reason, &ti.MaxTries, &ti.Note, &ti.NoteBy, &noteAt, &ti.MapFirst, &ti.MapNext, &ti.MapLength, &output}
		if ahead {
			dest = append(dest, &ti.Ahead)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, unavailable(err)
		}
		ti.Output = output.String
		ti.StartDate, ti.EndDate, ti.NextAt, ti.NoteAt = timeOf(start), timeOf(end), timeOf(next), timeOf(noteAt)
		out = append(out, ti)
	}
	return out, unavailable(rows.Err())
}

// InsertAttempt records an ended attempt (replacing a row of the same try after a replay).
func (t *Tx) InsertAttempt(a *store.Attempt) error { return t.PutAttempts([]*store.Attempt{a}) }

// tryKey names one try of a task instance: an entry's or an attempt's natural key.
type tryKey struct {
	run  int64
	task string
	try  int
}

// putAttemptsChunk bounds the rows of one PutAttempts statement.
const putAttemptsChunk = 64

// PutAttempts writes the ended attempts of a pass: one upsert per putAttemptsChunk of them (a
// statement may not touch a row twice, so a repeated try keeps its last version only).
func (t *Tx) PutAttempts(as []*store.Attempt) error {
	last := make(map[tryKey]int, len(as))
	for i, a := range as {
		last[tryKey{a.Run, a.TaskID, a.TryNumber}] = i
	}
	rows := make([]*store.Attempt, 0, len(as))
	for i, a := range as {
		if last[tryKey{a.Run, a.TaskID, a.TryNumber}] == i {
			rows = append(rows, a)
		}
	}
	for len(rows) > 0 {
		n := min(len(rows), putAttemptsChunk)
		args := make([]any, 0, 11*n)
		for _, a := range rows[:n] {
			args = append(args, a.Run, a.TaskID, a.TryNumber, a.State, nullMicros(a.StartDate), nullMicros(a.EndDate),
				nullString(string(a.ReasonCode)), nullString(a.Reason), nullString(a.Daemon), nullInt(a.Version),
				nullString(a.Output))
		}
		if _, err := t.exec(`INSERT INTO attempts (run, task_id, try_number, state, start_date, end_date, reason_code, reason,
			daemon, version, output) VALUES `+rowsOf(n, "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")+` ON CONFLICT (run, task_id, try_number) DO UPDATE SET
			state = excluded.state, start_date = excluded.start_date, end_date = excluded.end_date,
			reason_code = excluded.reason_code, reason = excluded.reason, daemon = excluded.daemon,
			version = excluded.version, output = excluded.output`, args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// UpsertDAG records a loaded DAG, keeping its paused flag and checkpoint. New DAGs start unpaused.
func (t *Tx) UpsertDAG(dagID, file, schedule string, now time.Time) error {
	_, err := t.exec(`INSERT INTO dags (dag_id, file, schedule, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (dag_id) DO UPDATE SET file = excluded.file, schedule = excluded.schedule, updated_at = excluded.updated_at`,
		dagID, file, schedule, store.Micros(now))
	return err
}

// DAGStates reads every stored DAG's flags.
func (t *Tx) DAGStates() (map[string]store.DAGState, error) {
	return dagStates(t.ctx, t.q())
}

func dagStates(ctx context.Context, q querier) (map[string]store.DAGState, error) {
	rows, err := q.QueryContext(ctx, `SELECT dag_id, paused, checkpoint FROM dags`)
	if err != nil {
		return nil, unavailable(err)
	}
	defer rows.Close()
	out := map[string]store.DAGState{}
	for rows.Next() {
		var d store.DAGState
		var cp sql.NullInt64
		if err := rows.Scan(&d.DAGID, &d.Paused, &cp); err != nil {
			return nil, unavailable(err)
		}
		d.Checkpoint = timeOf(cp)
		out[d.DAGID] = d
	}
	return out, unavailable(rows.Err())
}

// SetCheckpoint advances a DAG's scheduling checkpoint.
func (t *Tx) SetCheckpoint(dagID string, at time.Time) error {
	_, err := t.exec(`UPDATE dags SET checkpoint = ? WHERE dag_id = ?`, store.Micros(at), dagID)
	return err
}

// SetPaused pauses or unpauses a DAG; an unknown DAG is ErrNotFound.
func (t *Tx) SetPaused(dagID string, paused bool, now time.Time) error {
	res, err := t.exec(`UPDATE dags SET paused = ?, updated_at = ? WHERE dag_id = ?`, paused, store.Micros(now), dagID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.ErrNotFound
	}
	return nil
}

// SetImportErrors replaces the stored import errors.
func (t *Tx) SetImportErrors(errs map[string]string, now time.Time) error {
	if _, err := t.exec(`DELETE FROM import_errors`); err != nil {
		return err
	}
	for file, msg := range errs {
		if _, err := t.exec(`INSERT INTO import_errors (file, message, updated_at) VALUES (?, ?, ?)`, file, msg, store.Micros(now)); err != nil {
			return err
		}
	}
	return nil
}

// InsertCommand queues a command for the daemon that owns run.
func (t *Tx) InsertCommand(c *store.Command, now time.Time) error {
	id, _, err := t.insertID(`INSERT INTO commands (kind, run, task_id, who, note, params, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`, c.Kind, c.Run, c.TaskID, c.Who, c.Note, c.Params, store.Micros(now))
	c.ID = id
	return err
}

// PendingCommands lists undone commands for runs owned by one of owners (a daemon applies its
// own and those of dead owners whose work it holds, §9), and for runs that have ended, which
// any daemon refuses.
func (t *Tx) PendingCommands(owners []string) ([]store.Command, error) {
	q := `SELECT c.id, c.kind, c.run, c.task_id, c.who, c.note, c.params FROM commands c JOIN dag_runs r ON r.id = c.run
		WHERE c.done_at IS NULL AND (r.state NOT IN ('queued', 'running')`
	args := make([]any, 0, len(owners))
	if len(owners) > 0 {
		q += ` OR r.owner IN (?` + strings.Repeat(", ?", len(owners)-1) + `)`
		for _, o := range owners {
			args = append(args, o)
		}
	}
	rows, err := t.q().QueryContext(t.ctx, q+`) ORDER BY c.id`, args...)
	if err != nil {
		return nil, unavailable(err)
	}
	defer rows.Close()
	var out []store.Command
	for rows.Next() {
		var c store.Command
		if err := rows.Scan(&c.ID, &c.Kind, &c.Run, &c.TaskID, &c.Who, &c.Note, &c.Params); err != nil {
			return nil, unavailable(err)
		}
		out = append(out, c)
	}
	return out, unavailable(rows.Err())
}

// HasPendingCommand reports whether run already has an undone command of kind.
func (t *Tx) HasPendingCommand(run int64, kind vocab.CommandKind) (bool, error) {
	var n int
	err := t.queryRow(`SELECT COUNT(*) FROM commands WHERE run = ? AND kind = ? AND done_at IS NULL`,
		run, kind).Scan(&n)
	return n > 0, unavailable(err)
}

// DoneCommand marks a command as handled, with the reason it was refused if it was.
func (t *Tx) DoneCommand(id int64, now time.Time, refused error) error {
	var msg any
	if refused != nil {
		msg = refused.Error()
	}
	_, err := t.exec(`UPDATE commands SET done_at = ?, error = ? WHERE id = ?`, store.Micros(now), msg, id)
	return err
}
