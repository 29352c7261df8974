package sqlstore

import (
	"errors"
	"fmt"
	"sync"

	"context"
	"database/sql"
	"strings"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// entries reads entries in states (or the one with id) and attaches their requirement rows.
func entries(ctx context.Context, q querier, states []vocab.EntryState, id int64) ([]store.Entry, error) {
	where, args := entryFilter(states, id)
	return entriesWhere(ctx, q, where, args...)
}

// entriesWhere reads the entries matching a condition on queue_entries e, with their
// requirement rows, ordered by queue ID.
func entriesWhere(ctx context.Context, q querier, where string, args ...any) ([]store.Entry, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+entryCols+` FROM queue_entries e JOIN dag_runs r ON r.id = e.run
		WHERE `+where+` ORDER BY e.id`, args...)
	if err != nil {
		return nil, unavailable(err)
	}
	var out []store.Entry
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
		var n store.Requirement
		if err := rows.Scan(&entry, &n.Pool, &n.Slots, &n.Implicit, &n.Capacity); err != nil {
			return nil, unavailable(err)
		}
		if i, ok := index[entry]; ok {
			out[i].Needs = append(out[i].Needs, n)
		}
	}
	return out, unavailable(rows.Err())
}

func entryFilter(states []vocab.EntryState, id int64) (string, []any) {
	if id != 0 {
		return "e.id = ?", []any{id}
	}
	args := make([]any, len(states))
	for i, s := range states {
		args[i] = s
	}
	return "e.state IN (?" + strings.Repeat(", ?", len(states)-1) + ")", args
}

// moveEntry sets entry id's state to `to` and the extra assignments in set (with args), only if
// its current state may move there; otherwise it is ErrEntryState naming both states.
func (t *Tx) moveEntry(id int64, to vocab.EntryState, set string, args ...any) error {
	if len(vocab.MovesFrom(to)) == 0 {
		return t.entryStateError(id, to)
	}
	q, all := t.moveStatement(id, to, set, args...)
	res, err := t.exec(q, all...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	return t.entryStateError(id, to)
}

// moveStatement is moveEntry's UPDATE and its arguments; its WHERE clause comes last, so a
// caller may add conditions or RETURNING.
func (t *Tx) moveStatement(id int64, to vocab.EntryState, set string, args ...any) (string, []any) {
	from := vocab.MovesFrom(to)
	all := make([]any, 0, len(args)+3+len(from))
	all = append(all, to, t.stamp())
	all = append(all, args...)
	all = append(all, id)
	for _, f := range from {
		all = append(all, f)
	}
	if len(from) == 0 {
		all = append(all, "") // an unknown state moves from none: the statement changes nothing
	}
	return moveSQL(set, max(len(from), 1)), all
}

type moveKey struct {
	set  string
	from int
}

// moveSQLs holds moveEntry's statements by SET clause and number of source states: a pass moves
// thousands of entries through a handful of them.
var moveSQLs sync.Map // moveKey -> string

func moveSQL(set string, from int) string {
	k := moveKey{set, from}
	if q, ok := moveSQLs.Load(k); ok {
		return q.(string)
	}
	q := `UPDATE queue_entries SET state = ?, seq = ?`
	if set != "" {
		q += `, ` + set
	}
	q += ` WHERE id = ? AND state IN (?` + strings.Repeat(", ?", from-1) + `)`
	moveSQLs.Store(k, q)
	return q
}

// entryStateError says why entry id could not move to `to`: it does not exist, or its state.
func (t *Tx) entryStateError(id int64, to vocab.EntryState) error {
	if len(vocab.MovesFrom(to)) == 0 {
		return fmt.Errorf("%w: unknown state %q", store.ErrEntryState, to)
	}
	var cur string
	switch err := t.queryRow(`SELECT state FROM queue_entries WHERE id = ?`, id).Scan(&cur); {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%w: entry %d does not exist", store.ErrEntryState, id)
	case err != nil:
		return unavailable(err)
	}
	return fmt.Errorf("%w: entry %d is %s and cannot become %s", store.ErrEntryState, id, cur, to)
}
