package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/poolflow/poolflow/store"
)

// errTodo marks the issue 18 store methods being written.
var errTodo = errors.New("not implemented yet")

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

// DeleteRun deletes a run.
func (t *Tx) DeleteRun(pk int64) error { return errTodo }

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
	var where []string
	var args []any
	eq := func(col, v string) {
		if v != "" {
			where, args = append(where, col+" = ?"), append(args, v)
		}
	}
	eq("dag_id", f.DAGID)
	eq("run_id", f.RunID)
	eq("task_id", f.TaskID)
	eq("action", string(f.Action))
	eq("actor", f.Actor)
	if !f.After.IsZero() {
		where, args = append(where, "at >= ?"), append(args, store.Micros(f.After))
	}
	if !f.Before.IsZero() {
		where, args = append(where, "at < ?"), append(args, store.Micros(f.Before))
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	var total int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM events`+cond, args...).Scan(&total); err != nil {
		return nil, 0, unavailable(err)
	}
	switch {
	case f.Limit <= 0:
		f.Limit = eventsLimit
	case f.Limit > eventsMaxLimit:
		f.Limit = eventsMaxLimit
	}
	f.Offset = max(f.Offset, 0)
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
