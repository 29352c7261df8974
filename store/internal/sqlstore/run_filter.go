package sqlstore

import (
	"context"
	"strings"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// ListRunsWhere lists the runs f selects in f's order, and how many it selects in all.
func (s *DB) ListRunsWhere(ctx context.Context, f store.RunFilter) ([]store.Run, int, error) {
	var where []string
	var args []any
	in := func(col string, vals []string) {
		if len(vals) == 0 {
			return
		}
		where = append(where, col+" IN ("+strings.TrimSuffix(strings.Repeat("?,", len(vals)), ",")+")")
		for _, v := range vals {
			args = append(args, v)
		}
	}
	between := func(col string, from, to time.Time) {
		if !from.IsZero() {
			where, args = append(where, col+" >= ?"), append(args, store.Micros(from))
		}
		if !to.IsZero() {
			where, args = append(where, col+" <= ?"), append(args, store.Micros(to))
		}
	}
	if f.DAGID != "" {
		where, args = append(where, "dag_id = ?"), append(args, f.DAGID)
	}
	in("state", vocab.Strings(f.States))
	in("run_type", vocab.Strings(f.RunTypes))
	in("owner", f.Owners)
	if f.Text != "" {
		// LIKE with its wildcards escaped, on lowered text: the same answer on both drivers
		// (PostgreSQL's LIKE heeds case, SQLite's does not).
		pat := "%" + likeEscaper.Replace(strings.ToLower(f.Text)) + "%"
		where = append(where, `(LOWER(run_id) LIKE ? ESCAPE '\' OR LOWER(dag_id) LIKE ? ESCAPE '\' OR LOWER(note) LIKE ? ESCAPE '\')`)
		args = append(args, pat, pat, pat)
	}
	between("logical_date", f.LogicalFrom, f.LogicalTo)
	between("start_date", f.StartFrom, f.StartTo)
	between("end_date", f.EndFrom, f.EndTo)
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	var total int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM dag_runs`+cond, args...).Scan(&total); err != nil {
		return nil, 0, unavailable(err)
	}
	col, ok := store.RunOrderColumns[f.OrderBy]
	if !ok {
		col = "queued_at"
	}
	dir := " ASC"
	if f.Desc {
		dir = " DESC"
	}
	if f.Limit <= 0 {
		f.Limit = 100
	}
	// NULL dates (not started, not ended) sort last either way.
	order := " ORDER BY " + col + " IS NULL, " + col + dir + ", id DESC"
	rows, err := s.query(ctx, `SELECT `+runCols+` FROM dag_runs`+cond+order+` LIMIT ? OFFSET ?`,
		append(args, f.Limit, f.Offset)...)
	if err != nil {
		return nil, 0, unavailable(err)
	}
	defer rows.Close()
	var out []store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, 0, unavailable(err)
		}
		out = append(out, r)
	}
	return out, total, unavailable(rows.Err())
}
