package store

import (
	"time"

	"github.com/poolflow/poolflow/vocab"
)

// RunFilter selects and orders runs for ListRunsWhere (the API's GET .../dagRuns). Zero fields
// select everything.
type RunFilter struct {
	DAGID    string           // "" = every DAG
	States   []vocab.RunState // any of
	RunTypes []vocab.RunType  // any of
	Owners   []string         // held by any of these owners (an every_node run's is its daemon)
	// Text keeps the runs whose run id, DAG id or note contains it, ignoring case ("" = all).
	Text string
	// Time ranges, inclusive; zero = open.
	LogicalFrom, LogicalTo time.Time
	StartFrom, StartTo     time.Time
	EndFrom, EndTo         time.Time
	// OrderBy is a column of RunOrderColumns; "" = queued_at. Desc reverses it. Ties go to the
	// newest run.
	OrderBy       string
	Desc          bool
	Limit, Offset int
	// CountAtMost bounds the count ListRunsWhere returns beside the page: 0 counts every run
	// selected; n > 0 stops past n, so that a total above n comes back as n+1 and reads "more
	// than n". A page that says "1,000+ runs" then costs the same at 1,000 runs as at 100,000.
	CountAtMost int
}

// Capped reports whether total, returned for f, is a bound ("more than f.CountAtMost") rather
// than the count.
func (f RunFilter) Capped(total int) bool { return f.CountAtMost > 0 && total > f.CountAtMost }

// RunOrderColumns are the columns runs can be ordered by.
var RunOrderColumns = map[string]string{
	"queued_at": "queued_at", "logical_date": "logical_date", "start_date": "start_date",
	"end_date": "end_date", "run_id": "run_id", "dag_id": "dag_id", "state": "state", "run_type": "run_type",
}
