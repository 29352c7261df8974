package vocab

// RunState is a DAG run's state (§3.1): queued (waiting for max_active_runs, forbid or a
// daemon), running, then success or failed.
type RunState string

const (
	RunQueued  RunState = "queued"
	RunRunning RunState = "running"
	RunSuccess RunState = "success"
	RunFailed  RunState = "failed"
)

// RunStates lists every run state in the order a run goes through them.
func RunStates() []RunState { return []RunState{RunQueued, RunRunning, RunSuccess, RunFailed} }

// Terminal reports whether a run in state s has ended.
func (s RunState) Terminal() bool { return s == RunSuccess || s == RunFailed }

// Open reports whether a run in state s may still change.
func (s RunState) Open() bool { return s == RunQueued || s == RunRunning }

// Valid reports whether s is a run state.
func (s RunState) Valid() bool { return in(s, RunStates()) }

// RunType says what created a run. The JSON API names the first two with Airflow's words
// (Word); both spellings are accepted where a run type is read (ParseRunType).
type RunType string

const (
	RunSchedule RunType = "schedule" // a cron fire; leader-owned (§9)
	RunCatchup  RunType = "catchup"  // a catch-up fire; leader-owned
	RunManual   RunType = "manual"   // a trigger; bound to the daemon that took it
	RunTest     RunType = "test"     // a dags test run; bound to its process
	RunNode     RunType = "node"     // an every_node job's fire on one daemon; bound to it (§9)
	RunBackfill RunType = "backfill" // a date of a backfill (§11); leader-owned, driven by its backfill
)

// RunTypes lists every run type: the scheduler's, then the ones a person asks for.
func RunTypes() []RunType {
	return []RunType{RunSchedule, RunCatchup, RunNode, RunBackfill, RunManual, RunTest}
}

// Valid reports whether t is a run type as stored.
func (t RunType) Valid() bool { return in(t, RunTypes()) }

// LeaderOwned reports whether runs of type t belong to whichever serve daemon leads (scheduled,
// catch-up and backfill runs: any live daemon may take them over, §9), rather than to the
// process that created them.
func (t RunType) LeaderOwned() bool { return t == RunSchedule || t == RunCatchup || t == RunBackfill }

// Scheduled reports whether runs of type t are the schedule's own fires (scheduled and
// catch-up runs): catch-up waits for them, and the DAG's max_active_runs and concurrency
// policy apply to them.
func (t RunType) Scheduled() bool { return t == RunSchedule || t == RunCatchup }

// Fired reports whether runs of type t are fires of a schedule (scheduled, catch-up and every_node
// runs): they are due at their logical date, follow the concurrency policy, and wait while
// their DAG is paused.
// A backfill's runs are not fires: their backfill starts them (§11).
func (t RunType) Fired() bool { return t.Scheduled() || t == RunNode }

// runTypeWords are the API's (Airflow's) words for the run types that have one. A catch-up
// run was "backfill" before backfills existed (§11); it is "catchup" now, as stored.
var runTypeWords = map[RunType]string{RunSchedule: "scheduled"}

// Word is the run type in the JSON API's words: Airflow's scheduled for schedule, the stored
// value for the others (backfill is Airflow's word too).
func (t RunType) Word() string {
	if w, ok := runTypeWords[t]; ok {
		return w
	}
	return string(t)
}

// RunTypeWords lists every run type in the API's words, in RunTypes' order.
func RunTypeWords() []string {
	out := make([]string, 0, len(runTypeWords))
	for _, t := range RunTypes() {
		out = append(out, t.Word())
	}
	return out
}

// ParseRunType reads a run type written as stored or in the API's words.
func ParseRunType(s string) (RunType, bool) {
	for _, t := range RunTypes() {
		if s == string(t) || s == t.Word() {
			return t, true
		}
	}
	return "", false
}
