// Package attempt is what the scheduler's decision and the runners tell each other about one
// try of a task: the Spec a pass hands to a runner once the attempt's claims are committed,
// and the Started and Ended events the runner posts back. Nothing here runs anything; a Spec
// is never changed after the pass made it, so a runner cannot reach the scheduler's memory.
package attempt

import (
	"time"

	"github.com/poolflow/poolflow/dag"
)

// Spec is one attempt to run, as the pass that admitted it fixed it.
type Spec struct {
	Entry   int64 // its queue entry: the events name it
	DAGID   string
	RunID   string
	Task    *dag.Task // the loaded DAG's task, or a copy with its templates evaluated (§14): read only
	Try     int
	Logical time.Time
	Params  map[string]any // the run's params over the DAG's defaults: read only
	// Replay: the attempt ran before and was interrupted (a crash, a shutdown); its log gets a
	// "--- replay ---" line and the output after it.
	Replay bool
	// Fail, when set, is why the attempt cannot run (its templates no longer evaluate): the
	// runner ends it at once, failed with this reason.
	Fail string
	// Mapped: the attempt is of a mapped instance (§14), with its MapIndex and Item.
	Mapped   bool
	MapIndex int
	Item     any
}

// Started says an attempt began: its process group (0 for a Go task or a sensor's own check)
// and the time its process started.
type Started struct {
	Entry int64
	PGID  int
	Start time.Time
}

// Ended is an attempt's end as its runner saw it.
type Ended struct {
	Entry      int64
	Start, End time.Time
	OK         bool
	Skip       bool // a sensor's soft_fail timeout
	NoRetry    bool // a sensor's timeout: fails with no retry
	Reason     string
	Shutdown   bool // stopped by the daemon's own shutdown: back to the queue, same try
	Lost       bool // stopped because its lease could not be renewed
	Reschedule bool // a reschedule sensor's check is not met yet: poke again later
	// Output is the JSON object a successful attempt published (§14), compact; "" for none.
	Output string
	Spec   *Spec
}
