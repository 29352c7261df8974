package vocab

// ReasonCode is the stable code of a reason, next to its words: why a queue entry or a task
// instance waits (§4.5), and why an entry, an attempt, a task instance or a run ended the way it
// did. Codes are the API's (reason_code, wait_reason.code, a pool board entry's reason.code) and
// the store's (the reason_code columns); the words stay in the reason text, which never repeats
// a code that Say puts before it.
type ReasonCode string

// Why an entry waits, as the admission walk says it (pools.Admit).
const (
	ReasonPoolFull      ReasonCode = "pool_full"        // a named pool lacks room
	ReasonBehind        ReasonCode = "behind"           // behind the blocked head of a strict pool
	ReasonStarvedHead   ReasonCode = "starved_head"     // a pool's room is kept for a starved entry
	ReasonGlobalLimit   ReasonCode = "global_limit"     // max_running reached (_global)
	ReasonDAGLimit      ReasonCode = "dag_limit"        // max_active_tasks of the run reached (_dag/…)
	ReasonTaskLimit     ReasonCode = "task_limit"       // a task concurrency limit reached (_task/…)
	ReasonBackfillLimit ReasonCode = "backfill_limit"   // a backfill's share of a pool reached (_backfill/…, §11)
	ReasonForbid        ReasonCode = "forbid"           // concurrency_policy forbid waits for the previous run
	ReasonPaused        ReasonCode = "paused"           // its DAG is paused
	ReasonNodeAway      ReasonCode = "node_unavailable" // bound to an owner that is away (§9)
	ReasonDraining      ReasonCode = "draining"         // a pool drains its old queue (on_resize: drain)
	ReasonUnknownPool   ReasonCode = "unknown_pool"     // a pool it needs does not exist
	ReasonOverCapacity  ReasonCode = "over_capacity"    // it needs more slots than a pool has
	ReasonBacklogFull   ReasonCode = "backlog_full"     // a pool's max_queued is reached (an enqueue refusal)
)

// Why a task instance waits outside the admission walk, and an entry with no reason known yet.
const (
	ReasonUpstream   ReasonCode = "upstream"   // upstream tasks have not finished
	ReasonMapLine    ReasonCode = "map_line"   // a mapped instance waits for a place in its task's queue window (§14)
	ReasonRunQueued  ReasonCode = "run_queued" // its run has not started
	ReasonQueued     ReasonCode = "queued"     // ready, for the next admission pass
	ReasonRetry      ReasonCode = "retry"      // up_for_retry until its retry time
	ReasonReschedule ReasonCode = "reschedule" // a reschedule sensor between pokes
	ReasonApproval   ReasonCode = "approval"   // an approval gate waits for a person
	ReasonWaiting    ReasonCode = "waiting"    // an entry that waits for a reason not known yet
)

// How an entry, an attempt, a task instance or a run ended, when it did for a reason with a code.
// Entries carry every one of them; attempts and task instances the codes of a try that never
// ran (rejected, expired, cancelled) and of a sensor's timeout; runs rejected.
const (
	ReasonRejected      ReasonCode = "rejected"       // a pool refused it, or a start that may not wait could not (§4.6)
	ReasonExpired       ReasonCode = "expired"        // its queue_timeout passed while it waited
	ReasonCancelled     ReasonCode = "cancelled"      // an operator cancelled the waiting entry
	ReasonRetired       ReasonCode = "retired"        // its task, DAG or definition changed, or a retry was retired
	ReasonTimeout       ReasonCode = "timeout"        // a sensor's timeout passed between pokes
	ReasonFailed        ReasonCode = "failed"         // the task was marked failed while its entry waited
	ReasonStopRequested ReasonCode = "stop_requested" // the run's owner asked the daemon running the attempt to stop it: the task fails

	// A clear or a mark of a running task (§10.1, §10.2) stops its attempt the same way; the
	// task then becomes none (to run again), success or skipped instead of failed.
	ReasonClearRequested   ReasonCode = "clear_requested"
	ReasonSuccessRequested ReasonCode = "success_requested"
	ReasonSkipRequested    ReasonCode = "skip_requested"
	// ReasonCleared is an attempt a clear stopped (it does not use up a retry), and a task
	// instance a clear made none.
	ReasonCleared ReasonCode = "cleared"
	// ReasonMarked is a task instance a person marked (§10.2).
	ReasonMarked ReasonCode = "marked"
	// ReasonDagrunTimeout is a run still open after its DAG's dagrun_timeout (§13): it failed,
	// its running attempts were stopped and its waiting entries retired.
	ReasonDagrunTimeout ReasonCode = "dagrun_timeout"
)

// ReasonCodes lists every code: the admission walk's waits in the order of the constants above,
// then the other waits, then the ends.
func ReasonCodes() []ReasonCode {
	return []ReasonCode{ReasonPoolFull, ReasonBehind, ReasonStarvedHead, ReasonGlobalLimit, ReasonDAGLimit,
		ReasonTaskLimit, ReasonBackfillLimit, ReasonForbid, ReasonPaused, ReasonNodeAway, ReasonDraining, ReasonUnknownPool,
		ReasonOverCapacity, ReasonBacklogFull,
		ReasonUpstream, ReasonMapLine, ReasonRunQueued, ReasonQueued, ReasonRetry, ReasonReschedule, ReasonApproval, ReasonWaiting,
		ReasonRejected, ReasonExpired, ReasonCancelled, ReasonRetired, ReasonTimeout, ReasonFailed,
		ReasonStopRequested, ReasonClearRequested, ReasonSuccessRequested, ReasonSkipRequested, ReasonCleared, ReasonMarked,
		ReasonDagrunTimeout}
}

// Valid reports whether c is a reason code.
func (c ReasonCode) Valid() bool { return in(c, ReasonCodes()) }

// IsLimit says the code is a wait on an implicit pool (§4.2), which never blocks others.
func (c ReasonCode) IsLimit() bool {
	return c == ReasonGlobalLimit || c == ReasonDAGLimit || c == ReasonTaskLimit || c == ReasonBackfillLimit
}

// IsBlock says the code comes from an entry's block (paused, forbid, node_unavailable) rather
// than from room.
func (c ReasonCode) IsBlock() bool {
	return c == ReasonPaused || c == ReasonForbid || c == ReasonNodeAway
}

// Rejects says an entry waiting for this reason can never be admitted as the pools stand: the
// caller rejects it (a failed attempt, §4.6) rather than letting it wait.
func (c ReasonCode) Rejects() bool {
	return c == ReasonUnknownPool || c == ReasonOverCapacity || c == ReasonBacklogFull
}

// Say is a reason as a person reads it: the code's word before its text for the codes whose
// word the text leaves out (rejected and expired: "rejected: pool db: backlog full (max_queued
// 2)"), the text alone for every other code. Stores keep the text without that word.
func (c ReasonCode) Say(text string) string {
	if c != ReasonRejected && c != ReasonExpired {
		return text
	}
	if text == "" {
		return string(c)
	}
	return string(c) + ": " + text
}

// StopsTo is what a task becomes once the attempt a stop request (code c) stopped has ended:
// failed (stop_requested), none (clear_requested), success or skipped; ok is false for a code
// that is no stop request.
func (c ReasonCode) StopsTo() (TaskState, bool) {
	switch c {
	case ReasonStopRequested:
		return TaskFailed, true
	case ReasonClearRequested:
		return TaskNone, true
	case ReasonSuccessRequested:
		return TaskSuccess, true
	case ReasonSkipRequested:
		return TaskSkipped, true
	}
	return "", false
}

// StopRequestFor is the stop request whose attempt's end makes a task s (StopsTo's inverse).
func StopRequestFor(s TaskState) ReasonCode {
	switch s {
	case TaskNone:
		return ReasonClearRequested
	case TaskSuccess:
		return ReasonSuccessRequested
	case TaskSkipped:
		return ReasonSkipRequested
	}
	return ReasonStopRequested
}
