package sqlstore

import (
	"github.com/poolflow/poolflow/store"

	"context"
	"database/sql"
	"errors"
	"sort"
	"time"
)

// Reads the HTTP API needs beyond those of read.go. Like them, they use the reader pool.

// EntryByID reads one queue entry with its requirements.
func (s *DB) EntryByID(ctx context.Context, id int64) (store.Entry, error) {
	es, err := entries(ctx, s.readers(), nil, id)
	if err != nil {
		return store.Entry{}, err
	}
	if len(es) == 0 {
		return store.Entry{}, store.ErrNotFound
	}
	return es[0], nil
}

// LatestEntries returns the newest queue entry of each task instance of a run, by task id.
func (s *DB) LatestEntries(ctx context.Context, run int64) (map[string]store.Entry, error) {
	es, err := entriesWhere(ctx, s.readers(), `e.id IN (SELECT MAX(id) FROM queue_entries WHERE run = ? GROUP BY task_id)`, run)
	if err != nil {
		return nil, err
	}
	out := make(map[string]store.Entry, len(es))
	for _, e := range es {
		out[e.TaskID] = e
	}
	return out, nil
}

// RunEntries returns every queue entry of a run, in queue order.
func (s *DB) RunEntries(ctx context.Context, run int64) ([]store.Entry, error) {
	return entriesWhere(ctx, s.readers(), `e.run = ?`, run)
}

// RecentEntries returns, per named pool, the last perPool entries that ended (done, expired,
// cancelled, rejected, retired), newest first (§4.6: recent terminal entries stay visible).
// Each pool's list walks the entries backwards by end time (index queue_entries_ended), so its
// cost follows perPool, not the history.
func (s *DB) RecentEntries(ctx context.Context, perPool int) (map[string][]store.Entry, error) {
	ps, err := s.ListPools(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]store.Entry{}
	for _, p := range ps {
		es, err := entriesWhere(ctx, s.readers(), `e.id IN (SELECT x.id FROM queue_entries x
				JOIN entry_requirements q ON q.entry = x.id AND q.pool = ? AND NOT q.implicit
				WHERE x.ended_at IS NOT NULL AND x.state NOT IN ('waiting', 'admitted')
				ORDER BY x.ended_at DESC, x.id DESC LIMIT ?)`, p.Name, perPool)
		if err != nil {
			return nil, err
		}
		if len(es) == 0 {
			continue
		}
		sort.SliceStable(es, func(i, j int) bool {
			if !es[i].EndedAt.Equal(es[j].EndedAt) {
				return es[i].EndedAt.After(es[j].EndedAt)
			}
			return es[i].ID > es[j].ID
		})
		out[p.Name] = es
	}
	return out, nil
}

// ListDAGRows lists every DAG the store has seen, by id.
func (s *DB) ListDAGRows(ctx context.Context) ([]store.DAGRow, error) {
	rows, err := s.query(ctx, `SELECT dag_id, paused, file, schedule, updated_at, COALESCE(version, 0) FROM dags
		ORDER BY dag_id`)
	if err != nil {
		return nil, unavailable(err)
	}
	defer rows.Close()
	var out []store.DAGRow
	for rows.Next() {
		var d store.DAGRow
		var updated int64
		if err := rows.Scan(&d.DAGID, &d.Paused, &d.File, &d.Schedule, &updated, &d.Version); err != nil {
			return nil, unavailable(err)
		}
		d.UpdatedAt = store.FromMicros(updated)
		out = append(out, d)
	}
	return out, unavailable(rows.Err())
}

// ListImportErrors lists the stored import errors by file, with when they were recorded.
func (s *DB) ListImportErrors(ctx context.Context) ([]store.ImportErrorRow, error) {
	rows, err := s.query(ctx, `SELECT file, message, updated_at FROM import_errors ORDER BY file`)
	if err != nil {
		return nil, unavailable(err)
	}
	defer rows.Close()
	var out []store.ImportErrorRow
	for rows.Next() {
		var e store.ImportErrorRow
		var updated int64
		if err := rows.Scan(&e.File, &e.Message, &updated); err != nil {
			return nil, unavailable(err)
		}
		e.UpdatedAt = store.FromMicros(updated)
		out = append(out, e)
	}
	return out, unavailable(rows.Err())
}

// DaemonHeartbeat is the last heartbeat an owner recorded; ErrNotFound for an owner never seen.
func (s *DB) DaemonHeartbeat(ctx context.Context, id string) (time.Time, error) {
	var hb int64
	err := s.queryRow(ctx, `SELECT heartbeat FROM owners WHERE id = ?`, id).Scan(&hb)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, store.ErrNotFound
	}
	if err != nil {
		return time.Time{}, unavailable(err)
	}
	return store.FromMicros(hb), nil
}
