package store

import (
	"context"
	"strings"
	"time"
)

// RunFilter selects and orders runs for ListRunsWhere (the API's GET .../dagRuns). Zero fields
// select everything.
type RunFilter struct {
	DAGID    string   // "" = every DAG
	States   []string // any of
	RunTypes []string // any of (schedule, catchup, manual, test)
	// Time ranges, inclusive; zero = open.
	LogicalFrom, LogicalTo time.Time
	StartFrom, StartTo     time.Time
	EndFrom, EndTo         time.Time
	// OrderBy is a column of RunOrderColumns; "" = queued_at. Desc reverses it. Ties go to the
	// newest run.
	OrderBy       string
	Desc          bool
	Limit, Offset int
}

// RunOrderColumns are the columns runs can be ordered by.
var RunOrderColumns = map[string]string{
	"queued_at": "queued_at", "logical_date": "logical_date", "start_date": "start_date",
	"end_date": "end_date", "run_id": "run_id", "dag_id": "dag_id", "state": "state", "run_type": "run_type",
}

// ListRunsWhere lists the runs f selects in f's order, and how many it selects in all.
func (s *Store) ListRunsWhere(ctx context.Context, f RunFilter) ([]Run, int, error) {
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
			where, args = append(where, col+" >= ?"), append(args, Micros(from))
		}
		if !to.IsZero() {
			where, args = append(where, col+" <= ?"), append(args, Micros(to))
		}
	}
	if f.DAGID != "" {
		where, args = append(where, "dag_id = ?"), append(args, f.DAGID)
	}
	in("state", f.States)
	in("run_type", f.RunTypes)
	between("logical_date", f.LogicalFrom, f.LogicalTo)
	between("start_date", f.StartFrom, f.StartTo)
	between("end_date", f.EndFrom, f.EndTo)
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	var total int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM dag_runs`+cond, args...).Scan(&total); err != nil {
		return nil, 0, unavailable(err)
	}
	col, ok := RunOrderColumns[f.OrderBy]
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
	rows, err := s.r.QueryContext(ctx, `SELECT `+runCols+` FROM dag_runs`+cond+order+` LIMIT ? OFFSET ?`,
		append(args, f.Limit, f.Offset)...)
	if err != nil {
		return nil, 0, unavailable(err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, 0, unavailable(err)
		}
		out = append(out, r)
	}
	return out, total, unavailable(rows.Err())
}
