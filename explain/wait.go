package explain

import (
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
)

// TaskWait is what pools.WhyWaiting tells a task instance's wait from: the task instance, its
// run and its newest queue entry (nil for none), whose reason, if it waits, has been filled in
// (Fill, Reasons). A mapped instance that waits in its task's line (§14) names the task and
// how many instances of the line are before it, as the store read it (TaskInstance.Ahead).
func TaskWait(run store.Run, ti store.TaskInstance, entry *store.Entry) pools.TaskWait {
	w := pools.TaskWait{State: ti.State, NextAt: ti.NextAt, ReasonCode: ti.ReasonCode, Reason: ti.Reason,
		RunState: run.State, RunReason: run.ReasonCode.Say(run.Reason)}
	if entry != nil {
		w.Entry, w.EntryCode, w.EntryText = entry.State, entry.ReasonCode, entry.Reason
	}
	if base, _, ok := dag.SplitMapID(ti.TaskID); ok {
		w.Line, w.Ahead = base, ti.Ahead
	}
	return w
}
