package sqlstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/poolflow/poolflow/store"
)

// The store half of repairing runs (§10): notes, deletion and the audit log. Clear and mark are
// commands (InsertCommand with their Params) that the executor applies with the writes it has.

// SetNote writes the note of run (taskID "") or of one of its task instances, with who wrote it
// and when, and stamps the row so other daemons' refresh sees it. No other write touches these
// columns after a row is created. A run or task instance that does not exist is ErrNotFound,
// and the transaction stays usable.
func (t *Tx) SetNote(run int64, taskID, note, by string, at time.Time) error {
	q, args := `UPDATE dag_runs SET note = ?, note_by = ?, note_at = ?, seq = ? WHERE id = ?`,
		[]any{note, by, nullMicros(at), t.stamp(), run}
	if taskID != "" {
		q, args = `UPDATE task_instances SET note = ?, note_by = ?, note_at = ?, seq = ? WHERE run = ? AND task_id = ?`,
			append(args, taskID)
	}
	res, err := t.exec(q, args...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if taskID != "" {
			return fmt.Errorf("%w: run %d has no task instance %s", store.ErrNotFound, run, taskID)
		}
		return fmt.Errorf("%w: no run %d", store.ErrNotFound, run)
	}
	return nil
}

// tombstoneAge is how long a deleted run's tombstone stays: every daemon refreshes its memory
// each pass (ChangesSince), so a day is far more than a live daemon goes without; one silent
// for longer lost its lease long before, and would miss the deletion.
const tombstoneAge = 24 * time.Hour

// DeleteRun deletes run pk with everything it holds and leaves a tombstone for other daemons.
//
// The task instances, attempts, queue entries and commands of the run, and the entries'
// requirement rows and claims, go by the schema's ON DELETE CASCADE (every one of those tables
// references its parent so), in the one statement that deletes the run: the schema, not a list
// here, says what belongs to a run. A run with an admitted entry is ErrConflict: its attempt
// runs and holds its claims, which only its end may release. A run that does not exist is
// ErrNotFound. Both refusals come before any write, so the transaction stays usable (for the
// event that records the refusal).
//
// The tombstone carries this transaction's change number, so ChangesSince reports the run in
// DeletedRuns once. Tombstones older than tombstoneAge are pruned here, except the one of the
// highest run id: SQLite's next run id is counted past it (a deleted run's id is never given
// again, or a daemon would forget the new run with the old).
func (t *Tx) DeleteRun(pk int64) error {
	var exists, admitted int
	if err := t.queryRow(`SELECT (SELECT COUNT(*) FROM dag_runs WHERE id = ?),
		(SELECT COUNT(*) FROM queue_entries WHERE run = ? AND state = 'admitted')`, pk, pk).Scan(&exists, &admitted); err != nil {
		return unavailable(t.s.d.Classify(err))
	}
	switch {
	case exists == 0:
		return fmt.Errorf("%w: no run %d", store.ErrNotFound, pk)
	case admitted > 0:
		return fmt.Errorf("%w: run %d has an attempt running; it must end (or be stopped) first", store.ErrConflict, pk)
	}
	// Its entries leave the claim history: their slices are drawn again without them.
	if err := t.markRunsUse([]any{pk}, 0); err != nil {
		return err
	}
	if _, err := t.exec(`DELETE FROM dag_runs WHERE id = ?`, pk); err != nil {
		return err
	}
	now := time.Now()
	if _, err := t.exec(`INSERT INTO deleted_runs (run, seq, deleted_at) VALUES (?, ?, ?)`, pk, t.stamp(),
		store.Micros(now)); err != nil {
		return err
	}
	_, err := t.exec(`DELETE FROM deleted_runs WHERE deleted_at < ? AND run < (SELECT MAX(run) FROM deleted_runs)`,
		store.Micros(now.Add(-tombstoneAge)))
	return err
}

// deletedSince lists the runs deleted by the transactions stamped in (seq, upto], by id.
func (t *Tx) deletedSince(seq, upto int64) ([]int64, error) {
	rows, err := t.query(`SELECT run FROM deleted_runs WHERE seq > ? AND seq <= ? ORDER BY run`, seq, upto)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var pk int64
		if err := rows.Scan(&pk); err != nil {
			return nil, unavailable(err)
		}
		out = append(out, pk)
	}
	return out, unavailable(rows.Err())
}

// InsertEvent writes an audit event in the transaction of the change it records and sets its
// ID. An action that is not one of vocab.Actions() is ErrConstraint: the schema keeps the list
// open (see migration 0006), this binary guards it.
func (t *Tx) InsertEvent(e *store.Event) error {
	if !e.Action.Valid() {
		return fmt.Errorf("%w: unknown audit action %q", store.ErrConstraint, e.Action)
	}
	if e.Actor == "" {
		return fmt.Errorf("%w: audit event %s without an actor", store.ErrConstraint, e.Action)
	}
	id, _, err := t.insertID(`INSERT INTO events (at, actor, action, dag_id, run_id, task_id, try_number, pool, params,
		outcome) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`, store.Micros(e.At), e.Actor, e.Action, e.DAGID, e.RunID,
		e.TaskID, e.Try, e.Pool, e.Params, e.Outcome)
	if err != nil {
		return err
	}
	e.ID = id
	return nil
}

// Bounds of ListEvents' page.
const (
	eventsLimit    = 100  // when the filter gives none
	eventsMaxLimit = 1000 // the most one page holds
)

// ListEvents lists the audit events f selects, newest first (by time, then by id: the order of
// their commits), and how many it selects in all.
func (s *DB) ListEvents(ctx context.Context, f store.EventFilter) ([]store.Event, int, error) {
	var w listWhere
	w.eq("dag_id", f.DAGID)
	w.eq("run_id", f.RunID)
	w.eq("task_id", f.TaskID)
	w.eq("action", string(f.Action))
	w.eq("actor", f.Actor)
	w.since("at", f.After, f.Before)
	cond, args := w.sql(), w.args
	var total int
	count, countArgs := `SELECT COUNT(*) FROM events`+cond, args
	if f.CountAtMost > 0 { // stop counting past the bound: a DAG's card need not walk its whole history
		count, countArgs = `SELECT COUNT(*) FROM (SELECT 1 FROM events`+cond+` LIMIT ?) c`, append(slices.Clone(args), f.CountAtMost+1)
	}
	if err := s.queryRow(ctx, count, countArgs...).Scan(&total); err != nil {
		return nil, 0, unavailable(err)
	}
	f.Limit, f.Offset = pageBounds(f.Limit, f.Offset, eventsLimit, eventsMaxLimit)
	rows, err := s.query(ctx, `SELECT id, at, actor, action, dag_id, run_id, task_id, try_number, pool, params, outcome
		FROM events`+cond+` ORDER BY at DESC, id DESC LIMIT ? OFFSET ?`, append(args, f.Limit, f.Offset)...)
	if err != nil {
		return nil, 0, unavailable(err)
	}
	defer rows.Close()
	var out []store.Event
	for rows.Next() {
		var e store.Event
		var at int64
		if err := rows.Scan(&e.ID, &at, &e.Actor, &e.Action, &e.DAGID, &e.RunID, &e.TaskID, &e.Try, &e.Pool, &e.Params,
			&e.Outcome); err != nil {
			return nil, 0, unavailable(err)
		}
		e.At = store.FromMicros(at)
		out = append(out, e)
	}
	return out, total, unavailable(rows.Err())
}
