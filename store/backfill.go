package store

import (
	"time"

	"github.com/poolflow/poolflow/vocab"
)

// Backfill is a re-processing of a range of past dates of one DAG (§11), with its request
// (Airflow 3's body plus MaxSlots) and where it stands.
type Backfill struct {
	ID            int64
	DAGID         string
	From, To      time.Time
	Reprocess     vocab.Reprocess
	MaxActiveRuns int
	Backwards     bool           // newest date first (run_backwards)
	Conf          string         // JSON object: the runs' conf
	MaxSlots      map[string]int // the backfill's share of each named pool (§11)
	Paused        bool
	State         vocab.BackfillState
	Owner         string // the daemon that drives it; "" for the next daemon's pass
	CreatedBy     string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	CompletedAt   time.Time
	// Progress is what its dates came to, as a read counts them (not a column).
	Progress BackfillProgress
}

// BackfillProgress counts a backfill's dates by what came of them: Done (its run succeeded),
// Failed (its run failed), Running (its run is open: queued or running), Left (not reached
// yet), Skipped (an existing run left alone) and Total (every date).
type BackfillProgress struct {
	Total, Done, Failed, Running, Left, Skipped int
}

// BackfillDate is one date of a backfill, in the order the backfill takes them, and what it
// did with it: Run is the run it created or cleared (0: none, or deleted since).
type BackfillDate struct {
	Backfill    int64
	Ordinal     int
	LogicalDate time.Time
	Action      vocab.BackfillAction
	Run         int64
	Reason      string
	// The run's id and state, as a read joins them (not columns of the date).
	RunID    string
	RunState vocab.RunState
}

// BackfillTodo is a pending date of a backfill with the run its DAG has at that logical date
// already, if any (Existing.PK 0: none): what a pass needs to take the date (§11).
type BackfillTodo struct {
	Date     BackfillDate
	Existing Run
}

// BackfillWork is an open backfill as a pass reads it: the backfill, and its next pending
// dates in order (at most what the read was asked for) with how many are pending in all.
type BackfillWork struct {
	Backfill Backfill
	Todo     []BackfillTodo
	Pending  int
}

// BackfillStep is what one pass did with a backfill: the dates it took (their action, run and
// reason), its new state (empty: unchanged), and its owner, which the step takes when the
// backfill's owner is still From (ErrStale otherwise: another daemon drives it now).
type BackfillStep struct {
	ID       int64
	From, To string // the owner the pass read, and this daemon
	Dates    []BackfillDate
	State    vocab.BackfillState
}
