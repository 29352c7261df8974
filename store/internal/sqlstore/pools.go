package sqlstore

import (
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

// DeletePool removes a pool row.
func (t *Tx) DeletePool(name string) error {
	res, err := t.exec(`DELETE FROM pools WHERE name = ?`, name)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.ErrNotFound
	}
	return nil
}

// PoolHeld sums the slots held in a pool and counts the entries that wait for it.
func (t *Tx) PoolHeld(name string) (held, waiting int, err error) {
	if err = t.queryRow(`SELECT CAST(COALESCE(SUM(slots), 0) AS BIGINT) FROM claims WHERE pool = ?`, name).Scan(&held); err != nil {
		return 0, 0, unavailable(err)
	}
	waiting, err = t.QueuedCount(name)
	return held, waiting, err
}
