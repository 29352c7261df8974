package store

import (
	"context"
	"database/sql"
	"strings"
)

// querier is what *sql.Tx and *sql.DB share, so one query serves the loop and the readers.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// entries reads entries in states (or the one with id) and attaches their requirement rows.
func entries(ctx context.Context, q querier, states []string, id int64) ([]Entry, error) {
	where, args := entryFilter(states, id)
	return entriesWhere(ctx, q, where, args...)
}

// entriesWhere reads the entries matching a condition on queue_entries e, with their
// requirement rows, ordered by queue ID.
func entriesWhere(ctx context.Context, q querier, where string, args ...any) ([]Entry, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+entryCols+` FROM queue_entries e JOIN dag_runs r ON r.id = e.run
		WHERE `+where+` ORDER BY e.id`, args...)
	if err != nil {
		return nil, unavailable(err)
	}
	var out []Entry
	index := map[int64]int{}
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			rows.Close()
			return nil, unavailable(err)
		}
		index[e.ID] = len(out)
		out = append(out, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, unavailable(err)
	}
	if len(out) == 0 {
		return out, nil
	}
	rows, err = q.QueryContext(ctx, `SELECT q.entry, q.pool, q.slots, q.implicit, COALESCE(q.capacity, 0)
		FROM entry_requirements q JOIN queue_entries e ON e.id = q.entry WHERE `+where+` ORDER BY q.entry, q.pool`, args...)
	if err != nil {
		return nil, unavailable(err)
	}
	defer rows.Close()
	for rows.Next() {
		var entry int64
		var n Requirement
		if err := rows.Scan(&entry, &n.Pool, &n.Slots, &n.Implicit, &n.Capacity); err != nil {
			return nil, unavailable(err)
		}
		if i, ok := index[entry]; ok {
			out[i].Needs = append(out[i].Needs, n)
		}
	}
	return out, unavailable(rows.Err())
}

func entryFilter(states []string, id int64) (string, []any) {
	if id != 0 {
		return "e.id = ?", []any{id}
	}
	args := make([]any, len(states))
	for i, s := range states {
		args[i] = s
	}
	return "e.state IN (?" + strings.Repeat(", ?", len(states)-1) + ")", args
}
