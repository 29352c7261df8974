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
}

// RunOrderColumns are the columns runs can be ordered by.
var RunOrderColumns = map[string]string{
	"queued_at": "queued_at", "logical_date": "logical_date", "start_date": "start_date",
	"end_date": "end_date", "run_id": "run_id", "dag_id": "dag_id", "state": "state", "run_type": "run_type",
}
