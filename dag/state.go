package dag

// State is a task instance state (§3.1), with Airflow's names.
type State string

const (
	StateNone             State = "none"
	StateScheduled        State = "scheduled"
	StateRunning          State = "running"
	StateUpForRetry       State = "up_for_retry"
	StateUpForReschedule  State = "up_for_reschedule"
	StateAwaitingApproval State = "awaiting_approval"
	StateSuccess          State = "success"
	StateFailed           State = "failed"
	StateSkipped          State = "skipped"
	StateUpstreamFailed   State = "upstream_failed"
)

// Terminal reports whether no further change can happen to a task instance in state s.
func (s State) Terminal() bool {
	switch s {
	case StateSuccess, StateFailed, StateSkipped, StateUpstreamFailed:
		return true
	}
	return false
}

// RunState is a DAG run state (§3.1).
type RunState string

const (
	RunQueued  RunState = "queued"
	RunRunning RunState = "running"
	RunSuccess RunState = "success"
	RunFailed  RunState = "failed"
)

// TriggerRule decides when a task may run given its upstream tasks' states (§3.2).
type TriggerRule string

const (
	AllSuccess              TriggerRule = "all_success"
	AllFailed               TriggerRule = "all_failed"
	AllDone                 TriggerRule = "all_done"
	AllDoneMinOneSuccess    TriggerRule = "all_done_min_one_success"
	AllSkipped              TriggerRule = "all_skipped"
	OneSuccess              TriggerRule = "one_success"
	OneFailed               TriggerRule = "one_failed"
	OneDone                 TriggerRule = "one_done"
	NoneFailed              TriggerRule = "none_failed"
	NoneFailedMinOneSuccess TriggerRule = "none_failed_min_one_success"
	NoneSkipped             TriggerRule = "none_skipped"
	Always                  TriggerRule = "always"
)
