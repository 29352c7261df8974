package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Backfills (§11): the request and state of each, its dates in the order it takes them, and
// what it did with each. Progress is counted on read from the dates and their runs' states, so
// no counter can drift from the runs.

const backfillCols = `id, dag_id, from_date, to_date, reprocess, max_active_runs, run_backwards, conf, max_slots, paused,
	state, COALESCE(owner, ''), created_by, created_at, updated_at, completed_at`

func scanBackfill(sc interface{ Scan(...any) error }) (store.Backfill, error) {
	var b store.Backfill
	var from, to, created, updated int64
	var completed sql.NullInt64
	var slots string
	err := sc.Scan(&b.ID, &b.DAGID, &from, &to, &b.Reprocess, &b.MaxActiveRuns, &b.Backwards, &b.Conf, &slots, &b.Paused,
		&b.State, &b.Owner, &b.CreatedBy, &created, &updated, &completed)
	if err != nil {
		return b, err
	}
	b.From, b.To, b.CreatedAt, b.UpdatedAt = store.FromMicros(from), store.FromMicros(to), store.FromMicros(created),
		store.FromMicros(updated)
	b.CompletedAt = timeOf(completed)
	if slots != "" && slots != "{}" {
		if err := json.Unmarshal([]byte(slots), &b.MaxSlots); err != nil {
			return b, fmt.Errorf("backfill %d: max_slots: %w", b.ID, err)
		}
	}
	return b, nil
}

func slotsJSON(m map[string]int) string {
	if len(m) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// backfillDatesChunk bounds the rows of one insert of a backfill's dates.
const backfillDatesChunk = 200

// InsertBackfill creates a backfill with its dates, in the order given (ordinal 0 first), every
// one pending; b.ID is set.
func (t *Tx) InsertBackfill(b *store.Backfill, dates []time.Time) error {
	id, _, err := t.insertID(`INSERT INTO backfills (dag_id, from_date, to_date, reprocess, max_active_runs, run_backwards,
		conf, max_slots, paused, state, owner, created_by, created_at, updated_at, completed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`, b.DAGID, store.Micros(b.From), store.Micros(b.To),
		b.Reprocess, b.MaxActiveRuns, b.Backwards, orJSON(b.Conf), slotsJSON(b.MaxSlots), b.Paused, b.State,
		nullString(b.Owner), b.CreatedBy, store.Micros(b.CreatedAt), store.Micros(b.CreatedAt), nullMicros(b.CompletedAt))
	if err != nil {
		return err
	}
	b.ID = id
	for i := 0; i < len(dates); i += backfillDatesChunk {
		n := min(len(dates)-i, backfillDatesChunk)
		args := make([]any, 0, 3*n)
		for j := 0; j < n; j++ {
			args = append(args, id, i+j, store.Micros(dates[i+j]))
		}
		// Not prepared: a statement per distinct count would be prepared for the store's life.
		if _, err := t.execOnce(`INSERT INTO backfill_dates (backfill, ordinal, logical_date) VALUES `+
			rowsOf(n, "(?, ?, ?)"), args...); err != nil {
			return err
		}
	}
	t.wrote = true
	return nil
}

// BackfillByID reads a backfill (without its progress); ErrNotFound for none.
func (t *Tx) BackfillByID(id int64) (store.Backfill, error) {
	b, err := scanBackfill(t.queryRow(`SELECT `+backfillCols+` FROM backfills WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return b, fmt.Errorf("%w: backfill %d", store.ErrNotFound, id)
	}
	return b, unavailable(err)
}

// OpenBackfills lists the open backfills (running or cancelling) of a DAG, or of every DAG
// for "", oldest first.
func (t *Tx) OpenBackfills(dagID string) ([]store.Backfill, error) {
	q := `SELECT ` + backfillCols + ` FROM backfills WHERE state IN ('running', 'cancelling')`
	var args []any
	if dagID != "" {
		q += ` AND dag_id = ?`
		args = append(args, dagID)
	}
	rows, err := t.query(q+` ORDER BY id`, args...)
	if err != nil {
		return nil, err
	}
	return scanBackfills(rows)
}

func scanBackfills(rows *sql.Rows) ([]store.Backfill, error) {
	defer rows.Close()
	var out []store.Backfill
	for rows.Next() {
		b, err := scanBackfill(rows)
		if err != nil {
			return nil, unavailable(err)
		}
		out = append(out, b)
	}
	return out, unavailable(rows.Err())
}

// BackfillWork reads every open backfill with its next pending dates (at most limit each, in
// order) and the run its DAG already has at each of those logical dates (a scheduled,
// catch-up or backfill run: the runs unique per date, §11).
func (t *Tx) BackfillWork(limit int) ([]store.BackfillWork, error) {
	open, err := t.OpenBackfills("")
	if err != nil || len(open) == 0 {
		return nil, err
	}
	out := make([]store.BackfillWork, 0, len(open))
	for _, b := range open {
		w := store.BackfillWork{Backfill: b}
		if err := t.queryRow(`SELECT COUNT(*) FROM backfill_dates WHERE backfill = ? AND action = 'pending'`, b.ID).
			Scan(&w.Pending); err != nil {
			return nil, unavailable(err)
		}
		if w.Pending > 0 && b.State == vocab.BackfillRunning {
			rows, err := t.query(`SELECT d.ordinal, d.logical_date, `+runColsR+`
				FROM (SELECT ordinal, logical_date FROM backfill_dates WHERE backfill = ? AND action = 'pending'
					ORDER BY ordinal LIMIT ?) d
				LEFT JOIN dag_runs r ON r.dag_id = ? AND r.logical_date = d.logical_date
					AND r.run_type IN ('schedule', 'catchup', 'backfill')
				ORDER BY d.ordinal`, b.ID, limit, b.DAGID)
			if err != nil {
				return nil, err
			}
			if w.Todo, err = scanTodos(rows, b.ID); err != nil {
				return nil, err
			}
		}
		out = append(out, w)
	}
	return out, nil
}

// runColsR are runCols of the run aliased r (a LEFT JOIN: every column may be NULL).
const runColsR = `r.id, r.dag_id, r.run_id, r.run_type, r.logical_date, r.state, r.conf, r.note, r.note_by, r.note_at,
	r.no_queue, r.owner, r.queued_at, r.start_date, r.end_date, r.reason_code, r.reason, r.version, r.backfill`

func scanTodos(rows *sql.Rows, backfill int64) ([]store.BackfillTodo, error) {
	defer rows.Close()
	var out []store.BackfillTodo
	for rows.Next() {
		var td store.BackfillTodo
		var logical int64
		var pk, rLogical, queued sql.NullInt64
		var dagID, runID, runType, state, conf, note, noteBy, owner, code, reason sql.NullString
		var noteAt, start, end sql.NullInt64
		var noQueue sql.NullBool
		var version, bf sql.NullInt64
		if err := rows.Scan(&td.Date.Ordinal, &logical, &pk, &dagID, &runID, &runType, &rLogical, &state, &conf, &note,
			&noteBy, &noteAt, &noQueue, &owner, &queued, &start, &end, &code, &reason, &version, &bf); err != nil {
			return nil, unavailable(err)
		}
		td.Date.Backfill, td.Date.LogicalDate, td.Date.Action = backfill, store.FromMicros(logical), vocab.BackfillPending
		if pk.Valid {
			r := &td.Existing
			r.PK, r.DAGID, r.RunID, r.RunType, r.State = pk.Int64, dagID.String, runID.String, vocab.RunType(runType.String),
				vocab.RunState(state.String)
			r.LogicalDate, r.Conf, r.Note, r.NoteBy, r.NoteAt = store.FromMicros(rLogical.Int64), conf.String, note.String,
				noteBy.String, timeOf(noteAt)
			r.NoQueue, r.Owner, r.QueuedAt, r.StartDate, r.EndDate = noQueue.Bool, owner.String, store.FromMicros(queued.Int64),
				timeOf(start), timeOf(end)
			r.ReasonCode, r.Reason, r.Version, r.Backfill = vocab.ReasonCode(code.String), reason.String, int(version.Int64), bf.Int64
		}
		out = append(out, td)
	}
	return out, unavailable(rows.Err())
}

// StepBackfill writes what a pass did with a backfill: the owner becomes s.To when it is s.From
// still, each date taken was pending still, and the state changes when s.State is set (a
// terminal state sets completed_at). Anything else is ErrConflict: the pass read a backfill
// another process has changed since.
func (t *Tx) StepBackfill(s store.BackfillStep, now time.Time) error {
	q := `UPDATE backfills SET owner = ?, updated_at = ?`
	args := []any{nullString(s.To), store.Micros(now)}
	if s.State != "" {
		q += `, state = ?`
		args = append(args, s.State)
		if s.State.Terminal() {
			q += `, completed_at = ?`
			args = append(args, store.Micros(now))
		}
	}
	q += ` WHERE id = ? AND COALESCE(owner, '') = ? AND state IN ('running', 'cancelling')`
	args = append(args, s.ID, s.From)
	res, err := t.exec(q, args...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("%w: backfill %d changed since it was read", store.ErrConflict, s.ID)
	}
	for _, d := range s.Dates {
		res, err := t.exec(`UPDATE backfill_dates SET action = ?, run = ?, reason = ?
			WHERE backfill = ? AND ordinal = ? AND action = 'pending'`, d.Action, nullInt64(d.Run), d.Reason, s.ID, d.Ordinal)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("%w: backfill %d's date %d was taken already", store.ErrConflict, s.ID, d.Ordinal)
		}
	}
	return nil
}

// SetBackfillPaused pauses or unpauses an open backfill; ErrNotFound for none, ErrConflict
// once it is over.
func (t *Tx) SetBackfillPaused(id int64, paused bool, now time.Time) error {
	return t.changeBackfill(id, `paused = ?`, []any{paused}, now)
}

// CancelBackfill asks the daemon that drives an open backfill to cancel it (state
// cancelling): it creates no more runs and fails its runs' waiting work (§11).
func (t *Tx) CancelBackfill(id int64, now time.Time) error {
	return t.changeBackfill(id, `state = 'cancelling'`, nil, now)
}

func (t *Tx) changeBackfill(id int64, set string, args []any, now time.Time) error {
	args = append(args, store.Micros(now), id)
	res, err := t.exec(`UPDATE backfills SET `+set+`, updated_at = ? WHERE id = ? AND state IN ('running', 'cancelling')`,
		args...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	b, err := t.BackfillByID(id)
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: backfill %d is %s", store.ErrConflict, id, b.State)
}

// AdoptBackfills moves a dead daemon's open backfills to the daemon taking over its work (§9).
func (t *Tx) AdoptBackfills(from, to string) (int, error) {
	res, err := t.exec(`UPDATE backfills SET owner = ? WHERE owner = ? AND state IN ('running', 'cancelling')`, to, from)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// RunsBetween lists the runs of a DAG that are unique per logical date (scheduled, catch-up
// and backfill runs) whose logical date is in [from, to], by logical date.
func (t *Tx) RunsBetween(dagID string, from, to time.Time) ([]store.Run, error) {
	return runsBetween(t.ctx, t.q(), dagID, from, to)
}

// ListRunsBetween is Tx.RunsBetween for readers (a dry run).
func (s *DB) ListRunsBetween(ctx context.Context, dagID string, from, to time.Time) ([]store.Run, error) {
	return runsBetween(ctx, s.readers(), dagID, from, to)
}

func runsBetween(ctx context.Context, q querier, dagID string, from, to time.Time) ([]store.Run, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+runCols+` FROM dag_runs WHERE dag_id = ? AND logical_date >= ?
		AND logical_date <= ? AND run_type IN ('schedule', 'catchup', 'backfill') ORDER BY logical_date`,
		dagID, store.Micros(from), store.Micros(to))
	if err != nil {
		return nil, unavailable(err)
	}
	return scanRuns(rows)
}

// ListBackfills lists the backfills of a DAG ("" for every DAG), newest first, with their
// progress, and how many there are in all.
func (s *DB) ListBackfills(ctx context.Context, dagID string, limit, offset int) ([]store.Backfill, int, error) {
	where, args := "", []any{}
	if dagID != "" {
		where, args = ` WHERE dag_id = ?`, append(args, dagID)
	}
	var total int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM backfills`+where, args...).Scan(&total); err != nil {
		return nil, 0, unavailable(err)
	}
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.query(ctx, `SELECT `+backfillCols+` FROM backfills`+where+` ORDER BY id DESC LIMIT ? OFFSET ?`,
		append(args, limit, offset)...)
	if err != nil {
		return nil, 0, unavailable(err)
	}
	out, err := scanBackfills(rows)
	if err != nil {
		return nil, 0, err
	}
	return out, total, s.progress(ctx, out)
}

// GetBackfill reads a backfill with its progress; ErrNotFound for none.
func (s *DB) GetBackfill(ctx context.Context, id int64) (store.Backfill, error) {
	b, err := scanBackfill(s.queryRow(ctx, `SELECT `+backfillCols+` FROM backfills WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return b, fmt.Errorf("%w: backfill %d", store.ErrNotFound, id)
	}
	if err != nil {
		return b, unavailable(err)
	}
	out := []store.Backfill{b}
	err = s.progress(ctx, out)
	return out[0], err
}

// progress counts the dates of each backfill by what came of them.
func (s *DB) progress(ctx context.Context, bs []store.Backfill) error {
	for i := range bs {
		p := &bs[i].Progress
		err := s.queryRow(ctx, `SELECT COUNT(*),
			COALESCE(SUM(CASE WHEN d.action = 'pending' THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN d.action = 'skipped' THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN d.action IN ('created', 'cleared') AND r.state = 'success' THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN d.action IN ('created', 'cleared') AND r.state = 'failed' THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN d.action IN ('created', 'cleared') AND r.state IN ('queued', 'running') THEN 1 ELSE 0 END), 0)
			FROM backfill_dates d LEFT JOIN dag_runs r ON r.id = d.run WHERE d.backfill = ?`, bs[i].ID).
			Scan(&p.Total, &p.Left, &p.Skipped, &p.Done, &p.Failed, &p.Running)
		if err != nil {
			return unavailable(err)
		}
	}
	return nil
}

// ListBackfillDates lists a backfill's dates in the order it takes them, with their runs' ids
// and states, and how many it has.
func (s *DB) ListBackfillDates(ctx context.Context, id int64, limit, offset int) ([]store.BackfillDate, int, error) {
	var total int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM backfill_dates WHERE backfill = ?`, id).Scan(&total); err != nil {
		return nil, 0, unavailable(err)
	}
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.query(ctx, `SELECT d.ordinal, d.logical_date, d.action, COALESCE(d.run, 0), d.reason,
		COALESCE(r.run_id, ''), COALESCE(r.state, '') FROM backfill_dates d LEFT JOIN dag_runs r ON r.id = d.run
		WHERE d.backfill = ? ORDER BY d.ordinal LIMIT ? OFFSET ?`, id, limit, offset)
	if err != nil {
		return nil, 0, unavailable(err)
	}
	defer rows.Close()
	var out []store.BackfillDate
	for rows.Next() {
		d := store.BackfillDate{Backfill: id}
		var logical int64
		if err := rows.Scan(&d.Ordinal, &logical, &d.Action, &d.Run, &d.Reason, &d.RunID, &d.RunState); err != nil {
			return nil, 0, unavailable(err)
		}
		d.LogicalDate = store.FromMicros(logical)
		out = append(out, d)
	}
	return out, total, unavailable(rows.Err())
}
