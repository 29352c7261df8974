package sqlstore

import (
	"context"
	"slices"
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
	count, countArgs := `SELECT COUNT(*) FROM dag_runs`+cond, args
	if f.CountAtMost > 0 { // stop counting past the bound: the walk is at most that long
		count, countArgs = `SELECT COUNT(*) FROM (SELECT 1 FROM dag_runs`+cond+` LIMIT ?) c`, append(slices.Clone(args), f.CountAtMost+1)
	}
	if err := s.queryRow(ctx, count, countArgs...).Scan(&total); err != nil {
		return nil, 0, unavailable(err)
	}
	col, ok := store.RunOrderColumns[f.OrderBy]
	if !ok {
		col = "queued_at"
	}
	if f.Limit <= 0 {
		f.Limit = 100
	}
	// A page past the middle is read from the other end, backwards, then turned round: the
	// last of 100,000 runs costs what the first does, instead of walking 99,950 index entries.
	// A bounded count does not say where the other end is: such a page is read forwards.
	limit, offset, back := f.Limit, f.Offset, !f.Capped(total) && f.Offset > total/2
	if back {
		end := total - f.Offset // the position, counted from the other end, just past the page
		if end <= 0 {
			return nil, total, nil
		}
		offset = max(end-f.Limit, 0)
		limit = end - offset
	}
	desc := f.Desc != back
	dir, tie := " ASC", " DESC" // ties go to the newest run (the highest id)
	if desc {
		dir = " DESC"
	}
	if back {
		tie = " ASC"
	}
	// NULL dates (not started, not ended) sort last either way; the other columns are never
	// NULL, and an ORDER BY of the column alone lets the indexes (dag_id, queued_at) and
	// (queued_at) give the order without sorting every run.
	order := " ORDER BY " + col + dir + ", id" + tie
	if nullableRunOrder[col] {
		nulls := ""
		if back {
			nulls = " DESC"
		}
		order = " ORDER BY " + col + " IS NULL" + nulls + ", " + col + dir + ", id" + tie
	}
	rows, err := s.query(ctx, `SELECT `+runCols+` FROM dag_runs`+cond+order+` LIMIT ? OFFSET ?`,
		append(args, limit, offset)...)
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
	if back {
		slices.Reverse(out)
	}
	return out, total, unavailable(rows.Err())
}

// nullableRunOrder are the order columns that may be NULL.
var nullableRunOrder = map[string]bool{"start_date": true, "end_date": true}
