package vocab

// BackfillState is a backfill's state (§11): running (it creates its runs as its
// max_active_runs allows, unless paused), cancelling (a person cancelled it; the daemon that
// drives it fails its waiting work), then completed or cancelled.
type BackfillState string

const (
	BackfillRunning    BackfillState = "running"
	BackfillCancelling BackfillState = "cancelling"
	BackfillCompleted  BackfillState = "completed"
	BackfillCancelled  BackfillState = "cancelled"
)

// BackfillStates lists every backfill state in the order a backfill goes through them.
func BackfillStates() []BackfillState {
	return []BackfillState{BackfillRunning, BackfillCancelling, BackfillCompleted, BackfillCancelled}
}

// Valid reports whether s is a backfill state.
func (s BackfillState) Valid() bool { return in(s, BackfillStates()) }

// Terminal reports whether a backfill in state s is over: it creates and clears nothing more.
func (s BackfillState) Terminal() bool { return s == BackfillCompleted || s == BackfillCancelled }

// Open reports whether a backfill in state s still has work for a daemon.
func (s BackfillState) Open() bool { return s == BackfillRunning || s == BackfillCancelling }

// Reprocess is what a backfill does with a date that has a run already (Airflow 3's
// reprocess_behavior): none skips it, failed clears the failed tasks of a failed run, completed
// clears every ended run whole.
type Reprocess string

const (
	ReprocessNone      Reprocess = "none"
	ReprocessFailed    Reprocess = "failed"
	ReprocessCompleted Reprocess = "completed"
)

// Reprocesses lists the reprocess behaviours.
func Reprocesses() []Reprocess {
	return []Reprocess{ReprocessNone, ReprocessFailed, ReprocessCompleted}
}

// Valid reports whether r is a reprocess behaviour.
func (r Reprocess) Valid() bool { return in(r, Reprocesses()) }

// BackfillAction is what a backfill did, or will do, with one of its dates: pending (not
// reached yet), created (a new backfill run), cleared (an existing run cleared to run again),
// skipped (an existing run left alone; the reason says why).
type BackfillAction string

const (
	BackfillPending BackfillAction = "pending"
	BackfillCreated BackfillAction = "created"
	BackfillCleared BackfillAction = "cleared"
	BackfillSkipped BackfillAction = "skipped"
)

// BackfillActions lists the actions of a backfill's date.
func BackfillActions() []BackfillAction {
	return []BackfillAction{BackfillPending, BackfillCreated, BackfillCleared, BackfillSkipped}
}

// Valid reports whether a is an action of a backfill's date.
func (a BackfillAction) Valid() bool { return in(a, BackfillActions()) }
