package sqlstore

import (
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"

	"context"
	"database/sql"
	"strings"
	"time"
)

// Reads the web UI needs beyond the API's: several runs' task instances at once (the grid), a
// run's ended attempts (the Gantt chart), each DAG's latest runs (the DAG list) and the pools'
// admissions over a time window (the pool timeline). Like the other reads, they use the reader
// pool.

// LatestRunsByDAG returns the perDAG newest runs of each of dagIDs, newest first, by DAG id
// (index dag_runs_dag_queued: the cost follows what is returned).
func (s *DB) LatestRunsByDAG(ctx context.Context, dagIDs []string, perDAG int) (map[string][]store.Run, error) {
	out := map[string][]store.Run{}
	for _, id := range dagIDs {
		rows, err := s.query(ctx, `SELECT `+runCols+` FROM dag_runs WHERE dag_id = ?
			ORDER BY queued_at DESC, id DESC LIMIT ?`, id, perDAG)
		if err != nil {
			return nil, unavailable(err)
		}
		for rows.Next() {
			r, err := scanRun(rows)
			if err != nil {
				rows.Close()
				return nil, unavailable(err)
			}
			out[id] = append(out[id], r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, unavailable(err)
		}
	}
	return out, nil
}

// TaskInstancesOfRuns lists the task instances of several runs, by run key.
func (s *DB) TaskInstancesOfRuns(ctx context.Context, runs []int64) (map[int64][]store.TaskInstance, error) {
	out := map[int64][]store.TaskInstance{}
	const chunk = 500 // well under SQLite's bound on variables
	for len(runs) > 0 {
		n := min(len(runs), chunk)
		args := make([]any, n)
		for i, r := range runs[:n] {
			args[i] = r
		}
		rows, err := s.query(ctx, withLines(`run IN (?`+strings.Repeat(", ?", n-1)+`)`), append(args, args...)...)
		if err != nil {
			return nil, unavailable(err)
		}
		tis, err := scanLines(rows)
		if err != nil {
			return nil, err
		}
		for _, ti := range tis {
			out[ti.Run] = append(out[ti.Run], ti)
		}
		runs = runs[n:]
	}
	return out, nil
}

// TaskCellsOfRuns lists the state and try of the task instances of several runs, by run key.
func (s *DB) TaskCellsOfRuns(ctx context.Context, runs []int64) (map[int64][]store.TaskCell, error) {
	out := map[int64][]store.TaskCell{}
	const chunk = 500 // well under SQLite's bound on variables
	for len(runs) > 0 {
		n := min(len(runs), chunk)
		args := make([]any, n)
		for i, r := range runs[:n] {
			args[i] = r
		}
		rows, err := s.query(ctx, `SELECT run, task_id, state, try_number FROM (`+
			withLines(`run IN (?`+strings.Repeat(", ?", n-1)+`)`)+`) ti`, append(args, args...)...)
		if err != nil {
			return nil, unavailable(err)
		}
		// Scanned into plain types (a named type such as vocab.TaskState goes through reflect,
		// a third of this read's time for the 5,000 cells of a 500-task DAG page).
		var run, try int64
		var task, state string
		for rows.Next() {
			if err := rows.Scan(&run, &task, &state, &try); err != nil {
				rows.Close()
				return nil, unavailable(err)
			}
			out[run] = append(out[run], store.TaskCell{Run: run, TaskID: task, State: vocab.TaskState(state), TryNumber: int(try)})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, unavailable(err)
		}
		runs = runs[n:]
	}
	return out, nil
}

// RunAttempts lists every ended attempt of a run, by task id and try number.
func (s *DB) RunAttempts(ctx context.Context, run int64) ([]store.Attempt, error) {
	return s.attempts(ctx, `run = ? ORDER BY task_id, try_number`, run)
}

// PoolHoldings lists the admissions into named pools that held slots at some time since since:
// those still admitted and those that ended after it, by admission time.
func (s *DB) PoolHoldings(ctx context.Context, since time.Time) ([]store.Holding, error) {
	// Two walks by index: the entries holding slots (queue_entries_held: its condition is this
	// one, so both drivers read it instead of every waiting entry) and those that ended
	// since (queue_entries_ended).
	rows, err := s.query(ctx, `SELECT e.id, q.pool, q.slots, e.admitted_at, e.ended_at
		FROM queue_entries e JOIN entry_requirements q ON q.entry = e.id
		WHERE e.state IN ('waiting', 'admitted') AND e.admitted_at IS NOT NULL AND NOT q.implicit
		UNION ALL
		SELECT e.id, q.pool, q.slots, e.admitted_at, e.ended_at
		FROM queue_entries e JOIN entry_requirements q ON q.entry = e.id
		WHERE e.ended_at >= ? AND e.admitted_at IS NOT NULL AND e.state NOT IN ('waiting', 'admitted') AND NOT q.implicit
		ORDER BY 4, 1`, store.Micros(since))
	return holdings(rows, err)
}

// PoolHistory lists the admissions into named pool pool that held slots at some time within
// [from, to], by admission time: those admitted by to that were still held at from. The walks
// are those of PoolHoldings (the open entries by queue_entries_held, the ended ones by
// queue_entries_ended), then the requirement rows by their key.
func (s *DB) PoolHistory(ctx context.Context, pool string, from, to time.Time) ([]store.Holding, error) {
	f, t := store.Micros(from), store.Micros(to)
	rows, err := s.query(ctx, `SELECT e.id, q.pool, q.slots, e.admitted_at, e.ended_at
		FROM queue_entries e JOIN entry_requirements q ON q.entry = e.id AND q.pool = ?
		WHERE e.state IN ('waiting', 'admitted') AND e.admitted_at IS NOT NULL AND e.admitted_at <= ? AND NOT q.implicit
		UNION ALL
		SELECT e.id, q.pool, q.slots, e.admitted_at, e.ended_at
		FROM queue_entries e JOIN entry_requirements q ON q.entry = e.id AND q.pool = ?
		WHERE e.ended_at >= ? AND e.admitted_at IS NOT NULL AND e.admitted_at <= ? AND e.state NOT IN ('waiting', 'admitted') AND NOT q.implicit
		ORDER BY 4, 1`, pool, t, pool, f, t)
	return holdings(rows, err)
}

// PoolHoldersAt lists the admissions that held slots of named pool pool at instant at, with
// their attempts: the open ones admitted by then and those that ended after it, found through
// held_fork without reading the rest of the history (heldAtSQL).
func (s *DB) PoolHoldersAt(ctx context.Context, pool string, at time.Time) ([]store.HolderAt, error) {
	q, args := heldAtSQL(`e.id, q.pool, q.slots, e.admitted_at, e.ended_at, r.dag_id, r.run_id, e.task_id, e.try_number, e.state`,
		` JOIN dag_runs r ON r.id = e.run`, pool, store.Micros(at))
	rows, err := s.query(ctx, q+` ORDER BY 4, 1`, args...)
	if err != nil {
		return nil, unavailable(err)
	}
	defer rows.Close()
	var out []store.HolderAt
	for rows.Next() {
		var h store.HolderAt
		var admitted int64
		var ended sql.NullInt64
		if err := rows.Scan(&h.Entry, &h.Pool, &h.Slots, &admitted, &ended, &h.DAGID, &h.RunID, &h.TaskID, &h.TryNumber, &h.State); err != nil {
			return nil, unavailable(err)
		}
		h.AdmittedAt, h.EndedAt = store.FromMicros(admitted), timeOf(ended)
		out = append(out, h)
	}
	return out, unavailable(rows.Err())
}

// OpenRunWaits counts per DAG the open runs with a task awaiting approval and with a task
// scheduled (index dag_runs_open, then each run's task instances by their key).
func (s *DB) OpenRunWaits(ctx context.Context) (map[string]store.RunWaits, error) {
	rows, err := s.query(ctx, `SELECT r.dag_id,
		SUM(CASE WHEN EXISTS (SELECT 1 FROM task_instances t WHERE t.run = r.id AND t.state = 'awaiting_approval') THEN 1 ELSE 0 END),
		SUM(CASE WHEN EXISTS (SELECT 1 FROM task_instances t WHERE t.run = r.id AND t.state = 'scheduled') THEN 1 ELSE 0 END)
		FROM dag_runs r WHERE r.state IN ('queued', 'running') GROUP BY r.dag_id`)
	if err != nil {
		return nil, unavailable(err)
	}
	defer rows.Close()
	out := map[string]store.RunWaits{}
	for rows.Next() {
		var dag string
		var w store.RunWaits
		if err := rows.Scan(&dag, &w.Approval, &w.Pool); err != nil {
			return nil, unavailable(err)
		}
		if w.Approval+w.Pool > 0 {
			out[dag] = w
		}
	}
	return out, unavailable(rows.Err())
}

// holdings reads the rows of PoolHoldings and PoolHistory: entry, pool, slots, admitted, ended.
func holdings(rows *sql.Rows, err error) ([]store.Holding, error) {
	if err != nil {
		return nil, unavailable(err)
	}
	defer rows.Close()
	var out []store.Holding
	for rows.Next() {
		var h store.Holding
		var admitted int64
		var ended sql.NullInt64
		if err := rows.Scan(&h.Entry, &h.Pool, &h.Slots, &admitted, &ended); err != nil {
			return nil, unavailable(err)
		}
		h.AdmittedAt, h.EndedAt = store.FromMicros(admitted), timeOf(ended)
		out = append(out, h)
	}
	return out, unavailable(rows.Err())
}
