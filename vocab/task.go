package vocab

// TaskState is a task instance's state (§3.1), with Airflow's names.
//
//	none ──ready──▶ scheduled ──admitted──▶ running ──exit 0──▶ success
//	                   ▲  │                   │  └──fail, tries left──▶ up_for_retry ──▶ scheduled
//	                   │  └─expired/cancelled/rejected: a failed attempt, same retry policy
//	                   │                      ├──reschedule sensor not met──▶ up_for_reschedule ──▶ scheduled
//	                   │                      └──fail, no tries left──▶ failed
//	approval task: none ──ready──▶ awaiting_approval ──approve──▶ success / ──reject, timeout──▶ failed
//	upstream outcome per trigger rule: skipped, upstream_failed
//
// An ended attempt's state is one of success, failed and skipped.
type TaskState string

const (
	TaskNone             TaskState = "none"              // upstream not finished
	TaskScheduled        TaskState = "scheduled"         // ready; its queue entry waits for admission
	TaskRunning          TaskState = "running"           // admitted, its attempt runs under a lease
	TaskUpForRetry       TaskState = "up_for_retry"      // an attempt failed; waits for its retry time
	TaskUpForReschedule  TaskState = "up_for_reschedule" // a reschedule-mode sensor between pokes
	TaskAwaitingApproval TaskState = "awaiting_approval" // an approval gate waiting for a person
	TaskSuccess          TaskState = "success"
	TaskFailed           TaskState = "failed"
	TaskSkipped          TaskState = "skipped"
	TaskUpstreamFailed   TaskState = "upstream_failed"
)

// TaskStates lists every task instance state: the open ones in the order a task goes through
// them, then the terminal ones (the order of §3.1's table).
func TaskStates() []TaskState {
	return []TaskState{TaskNone, TaskScheduled, TaskRunning, TaskUpForRetry, TaskUpForReschedule,
		TaskAwaitingApproval, TaskSuccess, TaskFailed, TaskSkipped, TaskUpstreamFailed}
}

// Terminal reports whether no further change can happen to a task instance in state s (short
// of an operator's clear): success, failed, skipped, upstream_failed.
func (s TaskState) Terminal() bool {
	switch s {
	case TaskSuccess, TaskFailed, TaskSkipped, TaskUpstreamFailed:
		return true
	}
	return false
}

// Open reports whether a task instance in state s may still change: a valid state that is not
// terminal.
func (s TaskState) Open() bool { return s.Valid() && !s.Terminal() }

// Valid reports whether s is a task instance state.
func (s TaskState) Valid() bool { return in(s, TaskStates()) }
