package sqlstore

import (
	"strings"
	"time"

	"github.com/poolflow/poolflow/store"
)

// listWhere gathers a list read's conditions and their arguments: the audit events and the
// notifications filter alike, by equal columns and a time range.
type listWhere struct {
	conds []string
	args  []any
}

// eq selects rows whose col is v; an empty v selects every row.
func (w *listWhere) eq(col, v string) {
	if v != "" {
		w.conds, w.args = append(w.conds, col+" = ?"), append(w.args, v)
	}
}

// since selects rows whose col is at or after after and before before; a zero time is no bound.
func (w *listWhere) since(col string, after, before time.Time) {
	if !after.IsZero() {
		w.conds, w.args = append(w.conds, col+" >= ?"), append(w.args, store.Micros(after))
	}
	if !before.IsZero() {
		w.conds, w.args = append(w.conds, col+" < ?"), append(w.args, store.Micros(before))
	}
}

// sql is the WHERE clause, or "" for none.
func (w *listWhere) sql() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// pageBounds is a list read's limit and offset: def when none is asked, at most most.
func pageBounds(limit, offset, def, most int) (int, int) {
	switch {
	case limit <= 0:
		limit = def
	case limit > most:
		limit = most
	}
	return limit, max(offset, 0)
}
