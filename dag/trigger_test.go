package dag

import (
	"fmt"
	"testing"

	"github.com/poolflow/poolflow/vocab"
)

// states decodes a compact list of upstream states: S success, F failed, K skipped,
// U upstream_failed, N none, Q scheduled, R running, Y up_for_retry, D up_for_reschedule,
// A awaiting_approval.
func states(s string) []vocab.TaskState {
	codes := map[rune]vocab.TaskState{
		'S': vocab.TaskSuccess, 'F': vocab.TaskFailed, 'K': vocab.TaskSkipped, 'U': vocab.TaskUpstreamFailed,
		'N': vocab.TaskNone, 'Q': vocab.TaskScheduled, 'R': vocab.TaskRunning, 'Y': vocab.TaskUpForRetry,
		'D': vocab.TaskUpForReschedule, 'A': vocab.TaskAwaitingApproval,
	}
	out := make([]vocab.TaskState, 0, len(s))
	for _, c := range s {
		st, ok := codes[c]
		if !ok {
			panic(fmt.Sprintf("unknown state code %q", c))
		}
		out = append(out, st)
	}
	return out
}

const (
	run  = vocab.TaskScheduled
	wait = vocab.TaskNone
	skip = vocab.TaskSkipped
	uf   = vocab.TaskUpstreamFailed
)

func TestTrigger(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rule     TriggerRule
		upstream string
		want     vocab.TaskState
	}{
		// A task without upstream tasks is ready whatever its rule.
		{AllSuccess, "", run}, {AllFailed, "", run}, {OneSuccess, "", run}, {AllSkipped, "", run},

		{AllSuccess, "S", run}, {AllSuccess, "SSS", run},
		{AllSuccess, "SR", wait}, {AllSuccess, "SN", wait}, {AllSuccess, "SY", wait}, {AllSuccess, "SQ", wait},
		{AllSuccess, "SA", wait}, {AllSuccess, "SD", wait},
		{AllSuccess, "F", uf}, {AllSuccess, "SF", uf}, {AllSuccess, "FR", uf}, {AllSuccess, "U", uf}, {AllSuccess, "SUR", uf},
		{AllSuccess, "K", skip}, {AllSuccess, "SK", skip}, {AllSuccess, "KR", skip},
		{AllSuccess, "KF", uf}, {AllSuccess, "KU", uf}, // a failure outweighs a skip

		{AllFailed, "F", run}, {AllFailed, "FU", run}, {AllFailed, "UU", run},
		{AllFailed, "FR", wait}, {AllFailed, "NN", wait}, {AllFailed, "UY", wait},
		{AllFailed, "S", skip}, {AllFailed, "FS", skip}, {AllFailed, "K", skip}, {AllFailed, "FK", skip},
		{AllFailed, "SR", skip},

		{AllDone, "SFKU", run}, {AllDone, "K", run}, {AllDone, "F", run}, {AllDone, "U", run},
		{AllDone, "SR", wait}, {AllDone, "N", wait}, {AllDone, "FY", wait},

		{AllDoneMinOneSuccess, "S", run}, {AllDoneMinOneSuccess, "SF", run}, {AllDoneMinOneSuccess, "SU", run},
		{AllDoneMinOneSuccess, "F", uf}, {AllDoneMinOneSuccess, "FU", uf},
		{AllDoneMinOneSuccess, "SR", wait}, {AllDoneMinOneSuccess, "FR", wait}, {AllDoneMinOneSuccess, "N", wait},
		// Airflow does not count a skipped upstream as done for this rule: any skip skips.
		{AllDoneMinOneSuccess, "SK", skip}, {AllDoneMinOneSuccess, "K", skip}, {AllDoneMinOneSuccess, "KR", skip},

		{AllSkipped, "K", run}, {AllSkipped, "KK", run},
		{AllSkipped, "KR", wait}, {AllSkipped, "N", wait},
		{AllSkipped, "KS", skip}, {AllSkipped, "KF", skip}, {AllSkipped, "U", skip}, {AllSkipped, "SR", skip},

		// The one_* rules fire as soon as their condition holds.
		{OneSuccess, "SR", run}, {OneSuccess, "NS", run}, {OneSuccess, "S", run}, {OneSuccess, "SF", run}, {OneSuccess, "KS", run},
		{OneSuccess, "FR", wait}, {OneSuccess, "KR", wait}, {OneSuccess, "NN", wait},
		{OneSuccess, "F", uf}, {OneSuccess, "FU", uf}, {OneSuccess, "KF", uf}, {OneSuccess, "KU", uf},
		{OneSuccess, "K", skip}, {OneSuccess, "KK", skip},

		{OneFailed, "FR", run}, {OneFailed, "UR", run}, {OneFailed, "F", run}, {OneFailed, "SF", run}, {OneFailed, "NU", run},
		{OneFailed, "SR", wait}, {OneFailed, "KN", wait},
		{OneFailed, "SS", skip}, {OneFailed, "SK", skip}, {OneFailed, "K", skip},

		{OneDone, "SR", run}, {OneDone, "FR", run}, {OneDone, "KS", run}, {OneDone, "UF", run},
		{OneDone, "UR", wait}, {OneDone, "KR", wait}, {OneDone, "N", wait},
		{OneDone, "U", skip}, {OneDone, "K", skip}, {OneDone, "KU", skip},

		{NoneFailed, "S", run}, {NoneFailed, "SK", run}, {NoneFailed, "KK", run},
		{NoneFailed, "SR", wait}, {NoneFailed, "KN", wait},
		{NoneFailed, "F", uf}, {NoneFailed, "UR", uf}, {NoneFailed, "KU", uf}, {NoneFailed, "SF", uf},

		{NoneFailedMinOneSuccess, "S", run}, {NoneFailedMinOneSuccess, "SK", run},
		{NoneFailedMinOneSuccess, "KR", wait}, {NoneFailedMinOneSuccess, "SR", wait},
		{NoneFailedMinOneSuccess, "K", skip}, {NoneFailedMinOneSuccess, "KK", skip},
		{NoneFailedMinOneSuccess, "F", uf}, {NoneFailedMinOneSuccess, "SU", uf}, {NoneFailedMinOneSuccess, "KFR", uf},

		{NoneSkipped, "S", run}, {NoneSkipped, "SF", run}, {NoneSkipped, "SU", run}, {NoneSkipped, "F", run},
		{NoneSkipped, "SR", wait}, {NoneSkipped, "FN", wait},
		{NoneSkipped, "K", skip}, {NoneSkipped, "SK", skip}, {NoneSkipped, "KR", skip},

		{Always, "", run}, {Always, "NN", run}, {Always, "RY", run}, {Always, "F", run}, {Always, "K", run}, {Always, "U", run},

		// An unknown rule never runs; Validate refuses it at load time.
		{TriggerRule("sometimes"), "S", wait},
	}
	for _, tt := range tests {
		if got := Trigger(tt.rule, states(tt.upstream)); got != tt.want {
			t.Errorf("Trigger(%s, %s) = %s, want %s", tt.rule, tt.upstream, got, tt.want)
		}
	}
}

var (
	allRules = []TriggerRule{
		AllSuccess, AllFailed, AllDone, AllDoneMinOneSuccess, AllSkipped, OneSuccess, OneFailed,
		OneDone, NoneFailed, NoneFailedMinOneSuccess, NoneSkipped, Always,
	}
	allStates    = states("SFKUNQRYDA")
	terminalOnes = states("SFKU")
)

// upstreamLists enumerates every list of upstream states up to length n.
func upstreamLists(n int) [][]vocab.TaskState {
	lists := [][]vocab.TaskState{{}}
	prev := [][]vocab.TaskState{{}}
	for range n {
		var next [][]vocab.TaskState
		for _, l := range prev {
			for _, s := range allStates {
				next = append(next, append(append([]vocab.TaskState(nil), l...), s))
			}
		}
		lists = append(lists, next...)
		prev = next
	}
	return lists
}

// TestTriggerDecidesOnceUpstreamIsDone checks, for every list of up to three upstream states,
// that no rule keeps a task waiting forever once all its upstream tasks are terminal (so a
// run always ends), and that an early decision to run or not never differs from the one made
// after the remaining upstream tasks end (so deciding early is safe).
func TestTriggerDecidesOnceUpstreamIsDone(t *testing.T) {
	t.Parallel()
	for _, rule := range allRules {
		if !rule.Valid() {
			t.Errorf("%s not valid", rule)
		}
		for _, up := range upstreamLists(3) {
			got := Trigger(rule, up)
			switch got {
			case run, wait, skip, uf:
			default:
				t.Fatalf("Trigger(%s, %v) = %s", rule, up, got)
			}
			if allTerminal(up) && got == wait {
				t.Errorf("Trigger(%s, %v) waits although every upstream is done", rule, up)
			}
			if got == wait {
				continue
			}
			for _, done := range completions(up) {
				// Which of skipped and upstream_failed depends on timing in Airflow too
				// (all_success skips on a skip before a later failure is seen); whether the
				// task runs does not.
				if again := Trigger(rule, done); (again == run) != (got == run) {
					t.Errorf("Trigger(%s, %v) = %s but %s once upstream ends as %v", rule, up, got, again, done)
				}
			}
		}
	}
}

func allTerminal(up []vocab.TaskState) bool {
	for _, s := range up {
		if !s.Terminal() {
			return false
		}
	}
	return true
}

// completions lists every way the non-terminal states of up can end.
func completions(up []vocab.TaskState) [][]vocab.TaskState {
	out := [][]vocab.TaskState{nil}
	for _, s := range up {
		var next [][]vocab.TaskState
		for _, prefix := range out {
			ends := []vocab.TaskState{s}
			if !s.Terminal() {
				ends = terminalOnes
			}
			for _, e := range ends {
				next = append(next, append(append([]vocab.TaskState(nil), prefix...), e))
			}
		}
		out = next
	}
	return out
}

func TestRunEndState(t *testing.T) {
	t.Parallel()
	// extract -> transform -> load, extract -> audit (audit and load are the leaves).
	d := &DAG{ID: "etl", Tasks: []*Task{
		{ID: "extract"},
		{ID: "transform", DependsOn: []string{"extract"}},
		{ID: "load", DependsOn: []string{"transform"}},
		{ID: "audit", DependsOn: []string{"extract"}},
	}}
	tests := []struct {
		name      string
		states    map[string]vocab.TaskState
		wantEnded bool
		want      vocab.RunState
	}{
		{"all success", map[string]vocab.TaskState{"extract": vocab.TaskSuccess, "transform": vocab.TaskSuccess, "load": vocab.TaskSuccess, "audit": vocab.TaskSuccess}, true, vocab.RunSuccess},
		{"a leaf failed", map[string]vocab.TaskState{"extract": vocab.TaskSuccess, "transform": vocab.TaskSuccess, "load": vocab.TaskFailed, "audit": vocab.TaskSuccess}, true, vocab.RunFailed},
		{"a leaf upstream_failed", map[string]vocab.TaskState{"extract": vocab.TaskSuccess, "transform": vocab.TaskFailed, "load": vocab.TaskUpstreamFailed, "audit": vocab.TaskSuccess}, true, vocab.RunFailed},
		{"only an inner task failed", map[string]vocab.TaskState{"extract": vocab.TaskSuccess, "transform": vocab.TaskFailed, "load": vocab.TaskSuccess, "audit": vocab.TaskSuccess}, true, vocab.RunSuccess},
		{"skipped leaves", map[string]vocab.TaskState{"extract": vocab.TaskSuccess, "transform": vocab.TaskSkipped, "load": vocab.TaskSkipped, "audit": vocab.TaskSuccess}, true, vocab.RunSuccess},
		{"everything skipped", map[string]vocab.TaskState{"extract": vocab.TaskSkipped, "transform": vocab.TaskSkipped, "load": vocab.TaskSkipped, "audit": vocab.TaskSkipped}, true, vocab.RunSuccess},
		{"a task running", map[string]vocab.TaskState{"extract": vocab.TaskSuccess, "transform": vocab.TaskRunning, "load": vocab.TaskNone, "audit": vocab.TaskFailed}, false, vocab.RunRunning},
		{"a retry pending", map[string]vocab.TaskState{"extract": vocab.TaskSuccess, "transform": vocab.TaskSuccess, "load": vocab.TaskUpForRetry, "audit": vocab.TaskSuccess}, false, vocab.RunRunning},
		{"an approval pending", map[string]vocab.TaskState{"extract": vocab.TaskSuccess, "transform": vocab.TaskSuccess, "load": vocab.TaskAwaitingApproval, "audit": vocab.TaskSuccess}, false, vocab.RunRunning},
		{"a task not started yet", map[string]vocab.TaskState{"extract": vocab.TaskSuccess, "transform": vocab.TaskSuccess, "audit": vocab.TaskSuccess}, false, vocab.RunRunning},
	}
	for _, tt := range tests {
		ended, got := RunEndState(d, tt.states)
		if ended != tt.wantEnded || got != tt.want {
			t.Errorf("%s: RunEndState = %v, %s; want %v, %s", tt.name, ended, got, tt.wantEnded, tt.want)
		}
	}
}
