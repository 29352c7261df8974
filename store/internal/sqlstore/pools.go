package sqlstore

import (
	"context"
	"strings"

	"github.com/poolflow/poolflow/store"

	"database/sql"
	"errors"
	"time"
)

const poolCols = `name, slots, COALESCE(target_slots, -2), ordering, max_queued, starvation_after, include_deferred,
	on_resize, description, source, teams`

func scanPool(sc interface{ Scan(...any) error }) (store.Pool, error) {
	var p store.Pool
	var starve int64
	var teams string
	err := sc.Scan(&p.Name, &p.Slots, &p.TargetSlots, &p.Ordering, &p.MaxQueued, &starve, &p.IncludeDeferred,
		&p.OnResize, &p.Description, &p.Source, &teams)
	if teams != "" {
		p.Teams = strings.Split(teams, ",")
	}
	p.StarvationAfter = time.Duration(starve) * time.Microsecond
	return p, err
}

// Pools lists every pool, file-defined and stored, by name.
func (t *Tx) Pools() ([]store.Pool, error) {
	rows, err := t.query(`SELECT ` + poolCols + ` FROM pools ORDER BY name`)
	if err != nil {
		return nil, err
	}
	return scanPools(rows)
}

func scanPools(rows *sql.Rows) ([]store.Pool, error) {
	defer rows.Close()
	var out []store.Pool
	for rows.Next() {
		p, err := scanPool(rows)
		if err != nil {
			return nil, unavailable(err)
		}
		out = append(out, p)
	}
	return out, unavailable(rows.Err())
}

// PoolByName reads one pool.
func (t *Tx) PoolByName(name string) (store.Pool, error) {
	p, err := scanPool(t.queryRow(`SELECT `+poolCols+` FROM pools WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return p, store.ErrNotFound
	}
	return p, unavailable(err)
}

// PutPool inserts or replaces a pool row as given.
func (t *Tx) PutPool(p *store.Pool, now time.Time) error {
	// A new pool or a new capacity is a change of the capacity history, before the row moves.
	if _, err := t.exec(`INSERT INTO pool_capacity (pool, at, slots) SELECT ?, ?, ?
		WHERE NOT EXISTS (SELECT 1 FROM pools WHERE name = ? AND slots = ?)`, p.Name, store.Micros(now), p.Slots, p.Name, p.Slots); err != nil {
		return err
	}
	var target any
	if p.TargetSlots != store.NoTarget {
		target = p.TargetSlots
	}
	_, err := t.exec(`INSERT INTO pools (name, slots, target_slots, ordering, max_queued, starvation_after, include_deferred,
		on_resize, description, source, teams, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET slots = excluded.slots, target_slots = excluded.target_slots,
		ordering = excluded.ordering, max_queued = excluded.max_queued, starvation_after = excluded.starvation_after,
		include_deferred = excluded.include_deferred, on_resize = excluded.on_resize, description = excluded.description,
		source = excluded.source, teams = excluded.teams, updated_at = excluded.updated_at`,
		p.Name, p.Slots, target, p.Ordering, p.MaxQueued, p.StarvationAfter.Microseconds(), p.IncludeDeferred,
		p.OnResize, p.Description, p.Source, strings.Join(p.Teams, ","), store.Micros(now))
	return err
}

// DeletePool removes a pool row; the capacity history says the pool is gone from now on.
func (t *Tx) DeletePool(name string, now time.Time) error {
	res, err := t.exec(`DELETE FROM pools WHERE name = ?`, name)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.ErrNotFound
	}
	_, err = t.exec(`INSERT INTO pool_capacity (pool, at, slots) VALUES (?, ?, NULL)`, name, store.Micros(now))
	return err
}

// PoolCapacity lists the capacity changes of named pool that a window [from, to] draws: the
// last one at or before from (the capacity the window starts with), then those within it, in
// order (index pool_capacity_pool).
func (s *DB) PoolCapacity(ctx context.Context, pool string, from, to time.Time) ([]store.CapacityChange, error) {
	f := store.Micros(from)
	rows, err := s.query(ctx, `SELECT at, slots FROM (SELECT at, id, slots FROM pool_capacity WHERE pool = ? AND at <= ?
		ORDER BY at DESC, id DESC LIMIT 1) b
		UNION ALL SELECT at, slots FROM (SELECT at, id, slots FROM pool_capacity WHERE pool = ? AND at > ? AND at <= ?) w
		ORDER BY 1`, pool, f, pool, f, store.Micros(to))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.CapacityChange
	for rows.Next() {
		var at int64
		var slots sql.NullInt64
		if err := rows.Scan(&at, &slots); err != nil {
			return nil, unavailable(err)
		}
		out = append(out, store.CapacityChange{At: store.FromMicros(at), Slots: int(slots.Int64), Exists: slots.Valid})
	}
	return out, unavailable(rows.Err())
}

// PoolHeld sums the slots held in a pool and counts the entries that wait for it.
func (t *Tx) PoolHeld(name string) (held, waiting int, err error) {
	if err = t.queryRow(`SELECT CAST(COALESCE(SUM(slots), 0) AS BIGINT) FROM claims WHERE pool = ?`, name).Scan(&held); err != nil {
		return 0, 0, unavailable(err)
	}
	waiting, err = t.QueuedCount(name)
	return held, waiting, err
}
