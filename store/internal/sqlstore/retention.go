package sqlstore

import (
	"context"
	"strings"
	"time"

	"github.com/poolflow/poolflow/store"
)

// Retention (§12): deleting what is older than a cutoff, in batches the caller bounds, each in a
// write transaction of its own so that no pass waits behind a long one.

// prunableRuns selects the runs retention may delete, ended before the cutoff (their end, or
// their queueing when they have none), oldest first:
//   - never an open run (queued or running), nor one with a waiting or admitted entry (a
//     live attempt, or one about to be retired);
//   - never the last run of a DAG (its newest by queueing, as the DAG's page shows it);
//   - never the highest run id: SQLite counts the next id from it (NextIDs).
//
// The predicate is spelled as the partial index dag_runs_ended is, so the walk uses it.
const prunableRuns = `FROM dag_runs r WHERE r.state IN ('success', 'failed') AND COALESCE(r.end_date, r.queued_at) < ?
	AND r.id < (SELECT MAX(m.id) FROM dag_runs m)
	AND r.id <> (SELECT l.id FROM dag_runs l WHERE l.dag_id = r.dag_id ORDER BY l.queued_at DESC, l.id DESC LIMIT 1)
	AND NOT EXISTS (SELECT 1 FROM queue_entries e WHERE e.run = r.id AND e.state IN ('waiting', 'admitted'))`

// tombstoneRecent is how recently a run retention deletes must have ended for it to leave a
// tombstone. A live daemon reads what others committed at every pass, and passes at least at
// each lease renewal (10 s); one that could not for longer than its lease (30 s) is taken over
// and reads its memory again. So a run that ended an hour ago is known ended by every daemon,
// and only a cutoff close to now (db clean --before a minute ago) writes tombstones.
const tombstoneRecent = time.Hour

// PruneRuns deletes up to limit runs that ended before `before` (see prunableRuns), oldest
// first, with everything they hold (ON DELETE CASCADE, as DeleteRun), and returns them. A run
// that ended less than tombstoneRecent before now leaves a tombstone, as a deletion does:
// another daemon may still hold it as open until its next refresh, which then forgets it.
// Tombstones older than tombstoneAge go as DeleteRun's do.
func (t *Tx) PruneRuns(before, now time.Time, limit int) ([]store.PrunedRun, error) {
	rows, err := t.query(`SELECT r.id, r.dag_id, r.run_id, COALESCE(r.end_date, r.queued_at) `+prunableRuns+`
		ORDER BY COALESCE(r.end_date, r.queued_at), r.id LIMIT ?`, store.Micros(before), limit)
	if err != nil {
		return nil, err
	}
	var out []store.PrunedRun
	var recent []int64
	for rows.Next() {
		var p store.PrunedRun
		var ended int64
		if err := rows.Scan(&p.PK, &p.DAGID, &p.RunID, &ended); err != nil {
			rows.Close()
			return nil, unavailable(err)
		}
		if store.FromMicros(ended).After(now.Add(-tombstoneRecent)) {
			recent = append(recent, p.PK)
		}
		out = append(out, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, unavailable(err)
	}
	const chunk = 500 // under SQLite's bound on variables
	for i := 0; i < len(out); i += chunk {
		part := out[i:min(i+chunk, len(out))]
		args := make([]any, len(part))
		for j, p := range part {
			args[j] = p.PK
		}
		// The timeline keeps no use from before the cutoff's 5 minutes; the slices from there
		// on are drawn again without the runs' entries.
		if err := t.markRunsUse(args, floorTo(store.Micros(before), useCoarse)); err != nil {
			return nil, err
		}
		if _, err := t.exec(`DELETE FROM dag_runs WHERE id IN (?`+strings.Repeat(", ?", len(part)-1)+`)`, args...); err != nil {
			return nil, err
		}
	}
	if len(recent) > 0 {
		stamp, at := t.stamp(), store.Micros(now)
		for i := 0; i < len(recent); i += chunk {
			part := recent[i:min(i+chunk, len(recent))]
			args := make([]any, 0, 3*len(part))
			for _, pk := range part {
				args = append(args, pk, stamp, at)
			}
			if _, err := t.exec(`INSERT INTO deleted_runs (run, seq, deleted_at) VALUES `+rowsOf(len(part), "(?, ?, ?)")+`
				ON CONFLICT (run) DO NOTHING`, args...); err != nil {
				return nil, err
			}
		}
	}
	if len(out) > 0 {
		if _, err := t.exec(`DELETE FROM pool_use WHERE bucket < ?`, floorTo(store.Micros(before), useCoarse)); err != nil {
			return nil, err
		}
		if _, err := t.exec(`DELETE FROM deleted_runs WHERE deleted_at < ? AND run < (SELECT MAX(run) FROM deleted_runs)`,
			store.Micros(now.Add(-tombstoneAge))); err != nil {
			return nil, err
		}
		if err := t.compact(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// compact gives the pages this transaction's deletes freed back to the file system, where
// the dialect does (Dialect.Compact).
func (t *Tx) compact() error {
	if t.s.d.Compact == "" {
		return nil
	}
	// Stepped to its end as a query: SQLite's incremental_vacuum frees one page per step.
	rows, err := t.query(t.s.d.Compact)
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	rows.Close()
	return unavailable(rows.Err())
}

// PruneEvents deletes up to limit audit events older than before, oldest first, then up to
// limit settled notifications (delivered or failed, §13) created before it, and says how many
// rows it deleted. A notification still to send is never deleted.
func (t *Tx) PruneEvents(before time.Time, limit int) (int, error) {
	res, err := t.exec(`DELETE FROM events WHERE id IN (SELECT id FROM events WHERE at < ? ORDER BY at, id LIMIT ?)`,
		store.Micros(before), limit)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	res, err = t.exec(`DELETE FROM notifications WHERE id IN (SELECT id FROM notifications WHERE created_at < ?
		AND state IN ('delivered', 'failed') ORDER BY created_at, id LIMIT ?)`, store.Micros(before), limit)
	if err != nil {
		return 0, err
	}
	m, _ := res.RowsAffected()
	n += m
	if n > 0 {
		if err := t.compact(); err != nil {
			return 0, err
		}
	}
	return int(n), nil
}

// PrunePoolHistory deletes the capacity changes before `before` that a later one at or before
// it replaces (each pool keeps the change a window starting there begins with), and the
// pool_use slices before the cutoff's 5 minutes.
func (t *Tx) PrunePoolHistory(before time.Time) (int, error) {
	b := store.Micros(before)
	res, err := t.exec(`DELETE FROM pool_capacity WHERE at < ? AND EXISTS (SELECT 1 FROM pool_capacity n
		WHERE n.pool = pool_capacity.pool AND n.at <= ? AND (n.at > pool_capacity.at OR (n.at = pool_capacity.at AND n.id > pool_capacity.id)))`, b, b)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	if _, err := t.exec(`DELETE FROM pool_use WHERE bucket < ?`, floorTo(b, useCoarse)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// prunableVersions selects the DAG versions retention may delete: last seen before the
// cutoff, neither the DAG's current version nor its highest (new numbers count from it), and
// recorded by no run, entry or attempt left.
const prunableVersions = `FROM dag_versions v WHERE v.last_seen < ?
	AND v.version <> COALESCE((SELECT d.version FROM dags d WHERE d.dag_id = v.dag_id), 0)
	AND v.version < (SELECT MAX(w.version) FROM dag_versions w WHERE w.dag_id = v.dag_id)
	AND NOT EXISTS (SELECT 1 FROM dag_runs r WHERE r.dag_id = v.dag_id AND r.version = v.version)
	AND NOT EXISTS (SELECT 1 FROM queue_entries e JOIN dag_runs r ON r.id = e.run
		WHERE r.dag_id = v.dag_id AND e.version = v.version)
	AND NOT EXISTS (SELECT 1 FROM attempts a JOIN dag_runs r ON r.id = a.run
		WHERE r.dag_id = v.dag_id AND a.version = v.version)`

// PruneVersions deletes up to limit DAG versions no longer needed (prunableVersions) and says
// how many it deleted.
func (t *Tx) PruneVersions(before time.Time, limit int) (int, error) {
	rows, err := t.query(`SELECT v.dag_id, v.version `+prunableVersions+` ORDER BY v.last_seen LIMIT ?`,
		store.Micros(before), limit)
	if err != nil {
		return 0, err
	}
	var keys []store.VersionKey
	for rows.Next() {
		var k store.VersionKey
		if err := rows.Scan(&k.DAGID, &k.Version); err != nil {
			rows.Close()
			return 0, unavailable(err)
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, unavailable(err)
	}
	for _, k := range keys {
		if _, err := t.exec(`DELETE FROM dag_versions WHERE dag_id = ? AND version = ?`, k.DAGID, k.Version); err != nil {
			return 0, err
		}
	}
	if len(keys) > 0 {
		if err := t.compact(); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

// CountPrunable counts what PruneRuns, PruneEvents (events and settled notifications) and
// PruneVersions would delete with these cutoffs (a zero cutoff counts nothing), as a dry run
// reports it.
func (s *DB) CountPrunable(ctx context.Context, runsBefore, eventsBefore time.Time) (store.PruneCounts, error) {
	var c store.PruneCounts
	if !runsBefore.IsZero() {
		b := store.Micros(runsBefore)
		runs := `SELECT r.id ` + prunableRuns
		if err := s.queryRow(ctx, `SELECT (SELECT COUNT(*) `+prunableRuns+`),
			(SELECT COUNT(*) FROM task_instances WHERE run IN (`+runs+`)),
			(SELECT COUNT(*) FROM attempts WHERE run IN (`+runs+`)),
			(SELECT COUNT(*) FROM queue_entries WHERE run IN (`+runs+`)),
			(SELECT COUNT(*) `+prunableVersions+`)`, b, b, b, b, b).Scan(&c.Runs, &c.TaskInstances, &c.Attempts,
			&c.Entries, &c.Versions); err != nil {
			return c, unavailable(err)
		}
	}
	if !eventsBefore.IsZero() {
		b := store.Micros(eventsBefore)
		if err := s.queryRow(ctx, `SELECT (SELECT COUNT(*) FROM events WHERE at < ?),
			(SELECT COUNT(*) FROM notifications WHERE created_at < ? AND state IN ('delivered', 'failed'))`, b, b).Scan(
			&c.Events, &c.Notifications); err != nil {
			return c, unavailable(err)
		}
	}
	return c, nil
}

// PrunableRuns lists the runs PruneRuns would delete with this cutoff, oldest first, up to
// limit: a dry run names them, and the logs a clean removes are theirs.
func (s *DB) PrunableRuns(ctx context.Context, before time.Time, limit int) ([]store.PrunedRun, error) {
	rows, err := s.query(ctx, `SELECT r.id, r.dag_id, r.run_id `+prunableRuns+`
		ORDER BY COALESCE(r.end_date, r.queued_at), r.id LIMIT ?`, store.Micros(before), limit)
	if err != nil {
		return nil, unavailable(err)
	}
	defer rows.Close()
	var out []store.PrunedRun
	for rows.Next() {
		var p store.PrunedRun
		if err := rows.Scan(&p.PK, &p.DAGID, &p.RunID); err != nil {
			return nil, unavailable(err)
		}
		out = append(out, p)
	}
	return out, unavailable(rows.Err())
}

// RunEnds says, of the runs of dagID named, which exist and when each ended (zero while open;
// an ended run without an end date, its queueing): the logs folder's walk (package retention)
// tells a deleted run's logs from a kept one's this way.
func (s *DB) RunEnds(ctx context.Context, dagID string, runIDs []string) (map[string]time.Time, error) {
	out := make(map[string]time.Time, len(runIDs))
	const chunk = 500
	for len(runIDs) > 0 {
		n := min(len(runIDs), chunk)
		args := make([]any, 0, n+1)
		args = append(args, dagID)
		for _, id := range runIDs[:n] {
			args = append(args, id)
		}
		rows, err := s.query(ctx, `SELECT run_id, CASE WHEN state IN ('queued', 'running') THEN 0
			ELSE COALESCE(end_date, queued_at) END FROM dag_runs WHERE dag_id = ? AND run_id IN (?`+
			strings.Repeat(", ?", n-1)+`)`, args...)
		if err != nil {
			return nil, unavailable(err)
		}
		for rows.Next() {
			var id string
			var end int64
			if err := rows.Scan(&id, &end); err != nil {
				rows.Close()
				return nil, unavailable(err)
			}
			out[id] = time.Time{}
			if end != 0 {
				out[id] = store.FromMicros(end)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, unavailable(err)
		}
		runIDs = runIDs[n:]
	}
	return out, nil
}

// Vacuum rewrites the database to give freed space back (Dialect.Vacuum), holding the writers'
// lock for as long as that takes: for db clean --vacuum, not for a daemon.
func (s *DB) Vacuum(ctx context.Context) error {
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return unavailable(s.d.Classify(err))
	}
	defer conn.Close()
	for _, q := range s.d.Vacuum {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return unavailable(s.d.Classify(err))
		}
	}
	return nil
}
