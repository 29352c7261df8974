package pools

import (
	"testing"
	"time"

	"github.com/poolflow/poolflow/vocab"
)

// TestWhyWaiting pins the words of every wait outside the admission walk, and that an entry's
// own reason comes first for a scheduled task.
func TestWhyWaiting(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	full := "waiting: pool db is full (needs 1, 0 of 1 free; held by etl.a try 1)"
	for _, c := range []struct {
		name string
		w    TaskWait
		want Wait // zero: it does not wait
	}{
		{"entry reason", TaskWait{State: vocab.TaskScheduled, RunState: vocab.RunRunning, Entry: vocab.EntryWaiting,
			EntryCode: vocab.ReasonPoolFull, EntryText: full}, Wait{vocab.ReasonPoolFull, full}},
		{"entry not explained yet", TaskWait{State: vocab.TaskScheduled, RunState: vocab.RunRunning, Entry: vocab.EntryWaiting},
			Wait{vocab.ReasonQueued, "waiting: queued for the next admission pass"}},
		{"an ended entry's reason is not a wait", TaskWait{State: vocab.TaskScheduled, RunState: vocab.RunRunning,
			Entry: vocab.EntryExpired, EntryCode: vocab.ReasonExpired, EntryText: "queue_timeout 1s passed while waiting"},
			Wait{vocab.ReasonQueued, "waiting: queued for the next admission pass"}},
		{"run queued", TaskWait{State: vocab.TaskNone, RunState: vocab.RunQueued},
			Wait{vocab.ReasonRunQueued, "waiting: the run has not started (max_active_runs reached, or no daemon has taken it yet)"}},
		{"run queued with a reason", TaskWait{State: vocab.TaskScheduled, RunState: vocab.RunQueued,
			RunReason: "forbid: waits for the previous run r0"},
			Wait{vocab.ReasonRunQueued, "waiting: the run has not started (forbid: waits for the previous run r0)"}},
		{"upstream", TaskWait{State: vocab.TaskNone, RunState: vocab.RunRunning},
			Wait{vocab.ReasonUpstream, "waiting: upstream tasks have not finished"}},
		{"retry", TaskWait{State: vocab.TaskUpForRetry, NextAt: at, Reason: "exit status 3"},
			Wait{vocab.ReasonRetry, "waiting: retry at 2026-01-02T03:04:05Z after exit status 3"}},
		{"retry after an expiry", TaskWait{State: vocab.TaskUpForRetry, NextAt: at, ReasonCode: vocab.ReasonExpired,
			Reason: "queue_timeout 1s passed while waiting"},
			Wait{vocab.ReasonRetry, "waiting: retry at 2026-01-02T03:04:05Z after expired: queue_timeout 1s passed while waiting"}},
		{"retry without a reason", TaskWait{State: vocab.TaskUpForRetry},
			Wait{vocab.ReasonRetry, "waiting: retry at - after a failed attempt"}},
		{"reschedule", TaskWait{State: vocab.TaskUpForReschedule, NextAt: at},
			Wait{vocab.ReasonReschedule, "waiting: sensor pokes again at 2026-01-02T03:04:05Z"}},
		{"approval", TaskWait{State: vocab.TaskAwaitingApproval},
			Wait{vocab.ReasonApproval, "waiting: for a person to approve or reject"}},
		{"running", TaskWait{State: vocab.TaskRunning, Entry: vocab.EntryAdmitted}, Wait{}},
		{"failed", TaskWait{State: vocab.TaskFailed, ReasonCode: vocab.ReasonRejected, Reason: "pool db: backlog full"}, Wait{}},
	} {
		got, ok := WhyWaiting(c.w)
		if ok != (c.want != Wait{}) || got != c.want {
			t.Errorf("%s: %+v %v, want %+v", c.name, got, ok, c.want)
		}
	}
}

// TestEntryWait: an entry's reason as shown, with the word of a code its text leaves out.
func TestEntryWait(t *testing.T) {
	t.Parallel()
	if _, ok := EntryWait("", ""); ok {
		t.Error("an entry with no reason waits for one")
	}
	for _, c := range []struct {
		code vocab.ReasonCode
		text string
		want Wait
	}{
		{vocab.ReasonPaused, "waiting: DAG is paused", Wait{vocab.ReasonPaused, "waiting: DAG is paused"}},
		{"", "waiting: something", Wait{vocab.ReasonWaiting, "waiting: something"}},
		{vocab.ReasonRejected, "pool db: backlog full (max_queued 1)", Wait{vocab.ReasonRejected, "rejected: pool db: backlog full (max_queued 1)"}},
		{vocab.ReasonCancelled, "cancelled by operator", Wait{vocab.ReasonCancelled, "cancelled by operator"}},
	} {
		if got, ok := EntryWait(c.code, c.text); !ok || got != c.want {
			t.Errorf("EntryWait(%s, %q) = %+v %v, want %+v", c.code, c.text, got, ok, c.want)
		}
	}
}
