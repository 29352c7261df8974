package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Reads for the CLI, the API and the UI. They use the reader pool and never wait for the
// scheduler loop's transaction.

// ListPools lists every pool.
func (s *DB) ListPools(ctx context.Context) ([]store.Pool, error) {
	rows, err := s.query(ctx, `SELECT `+poolCols+` FROM pools ORDER BY name`)
	if err != nil {
		return nil, unavailable(err)
	}
	return scanPools(rows)
}

// ListClaims lists every held claim.
func (s *DB) ListClaims(ctx context.Context) ([]store.Claim, error) {
	rows, err := s.query(ctx, `SELECT c.entry, c.pool, c.slots, c.daemon, c.epoch, COALESCE(c.pgid, 0),
		c.lease_until, (SELECT e.label FROM queue_entries e WHERE e.id = c.entry)
		FROM claims c ORDER BY c.entry, c.pool`)
	if err != nil {
		return nil, unavailable(err)
	}
	return scanClaims(rows)
}

// ListEntries lists entries in the given states with their requirements, by queue ID.
func (s *DB) ListEntries(ctx context.Context, states ...vocab.EntryState) ([]store.Entry, error) {
	return entries(ctx, s.readers(), states, 0)
}

// GetRun reads a run by DAG id and run id.
func (s *DB) GetRun(ctx context.Context, dagID, runID string) (store.Run, error) {
	r, err := scanRun(s.queryRow(ctx, `SELECT `+runCols+` FROM dag_runs WHERE dag_id = ? AND run_id = ?`, dagID, runID))
	if errors.Is(err, sql.ErrNoRows) {
		return r, store.ErrNotFound
	}
	return r, unavailable(err)
}

// GetRunByPK reads a run by its key.
func (s *DB) GetRunByPK(ctx context.Context, pk int64) (store.Run, error) {
	r, err := scanRun(s.queryRow(ctx, `SELECT `+runCols+` FROM dag_runs WHERE id = ?`, pk))
	if errors.Is(err, sql.ErrNoRows) {
		return r, store.ErrNotFound
	}
	return r, unavailable(err)
}

// ListRuns lists a DAG's runs, newest first ("" = every DAG).
func (s *DB) ListRuns(ctx context.Context, dagID string, limit, offset int) ([]store.Run, int, error) {
	return s.ListRunsWhere(ctx, store.RunFilter{DAGID: dagID, OrderBy: "queued_at", Desc: true, Limit: limit, Offset: offset})
}

// ListTaskInstances lists a run's task instances.
func (s *DB) ListTaskInstances(ctx context.Context, run int64) ([]store.TaskInstance, error) {
	rows, err := s.query(ctx, withLines(`run = ?`), run, run)
	if err != nil {
		return nil, unavailable(err)
	}
	return scanLines(rows)
}

// LatestEntry returns the newest queue entry of a task instance.
func (s *DB) LatestEntry(ctx context.Context, run int64, taskID string) (store.Entry, error) {
	var id int64
	err := s.queryRow(ctx, `SELECT MAX(id) FROM queue_entries WHERE run = ? AND task_id = ?`, run, taskID).Scan(&id)
	if err != nil || id == 0 {
		return store.Entry{}, store.ErrNotFound
	}
	return s.EntryByID(ctx, id)
}

// ListDAGStates reads every stored DAG's flags.
func (s *DB) ListDAGStates(ctx context.Context) (map[string]store.DAGState, error) {
	return dagStates(ctx, s.readers())
}

// ImportErrors lists the stored import errors by file.
func (s *DB) ImportErrors(ctx context.Context) (map[string]string, error) {
	rows, err := s.query(ctx, `SELECT file, message FROM import_errors ORDER BY file`)
	if err != nil {
		return nil, unavailable(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var f, m string
		if err := rows.Scan(&f, &m); err != nil {
			return nil, unavailable(err)
		}
		out[f] = m
	}
	return out, unavailable(rows.Err())
}

// CommandOutcome reports whether a command was handled and why it was refused, if it was.
func (s *DB) CommandOutcome(ctx context.Context, id int64) (done bool, refused string, err error) {
	var doneAt sql.NullInt64
	var msg sql.NullString
	err = s.queryRow(ctx, `SELECT done_at, error FROM commands WHERE id = ?`, id).Scan(&doneAt, &msg)
	if errors.Is(err, sql.ErrNoRows) {
		return false, "", store.ErrNotFound
	}
	return doneAt.Valid, msg.String, unavailable(err)
}

// ListAttempts lists the ended attempts of a task instance by try number.
func (s *DB) ListAttempts(ctx context.Context, run int64, taskID string) ([]store.Attempt, error) {
	return s.attempts(ctx, `run = ? AND task_id = ? ORDER BY try_number`, run, taskID)
}

// attempts reads the ended attempts a condition on the attempts table selects.
func (s *DB) attempts(ctx context.Context, where string, args ...any) ([]store.Attempt, error) {
	rows, err := s.query(ctx, `SELECT run, task_id, try_number, state, start_date, end_date, COALESCE(reason_code, ''),
		COALESCE(reason, ''), COALESCE(daemon, ''), COALESCE(version, 0), COALESCE(output, '') FROM attempts WHERE `+where, args...)
	if err != nil {
		return nil, unavailable(err)
	}
	defer rows.Close()
	var out []store.Attempt
	for rows.Next() {
		var a store.Attempt
		var start, end sql.NullInt64
		if err := rows.Scan(&a.Run, &a.TaskID, &a.TryNumber, &a.State, &start, &end, &a.ReasonCode, &a.Reason,
			&a.Daemon, &a.Version, &a.Output); err != nil {
			return nil, unavailable(err)
		}
		a.StartDate, a.EndDate = timeOf(start), timeOf(end)
		out = append(out, a)
	}
	return out, unavailable(rows.Err())
}
