package decide

import (
	"fmt"
	"time"

	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/notify"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Notifications (§13): a pass that changes a state a handler names writes the event for each of
// its notifiers into the outbox, with the change (the Notify op, in the pass's transaction). The
// occurrence that keys an event — the try's end, the run's end, the entry — is what makes a
// second production of the same occurrence collide in the store instead of being sent twice.

// Notify puts events in the outbox (store.Tx.InsertNotifications).
type Notify struct{ Rows []*store.Notification }

func (Notify) op() {}

// tell writes ev for each notifier named; nothing when none is, or in a dags test process
// (it runs a DAG to try it, and has no sender).
func (ps *pass) tell(names []string, ev notify.Event, occurrence string) {
	if len(names) == 0 || !ps.serve() {
		return
	}
	for _, name := range names {
		ps.outbox = append(ps.outbox, notify.Row(ev, name, occurrence))
	}
}

// taskEvent is the event of a task instance's change.
func taskEvent(kind vocab.NotifyEvent, run *state.Run, ti *state.TI, try int, reason string, at time.Time) notify.Event {
	return notify.Event{Event: kind, DAGID: run.DAGID, DAGRunID: run.RunID, TaskID: ti.TaskID, TryNumber: try,
		State: string(ti.State), Reason: reason, LogicalDate: run.LogicalDate, At: at,
		Path: notify.TaskPath(run.DAGID, run.RunID, ti.TaskID)}
}

// tellTry tells a try's end: task_failed (no try left) or task_retry, or task_succeeded.
func (ps *pass) tellTry(run *state.Run, ti *state.TI, try int, reason string, at time.Time) {
	t := ti.Task
	if t == nil {
		return
	}
	var kind vocab.NotifyEvent
	var names []string
	switch ti.State {
	case vocab.TaskFailed:
		kind, names = vocab.EventTaskFailed, t.Notifiers().OnFailure
	case vocab.TaskUpForRetry:
		kind, names = vocab.EventTaskRetry, t.Notifiers().OnRetry
		if reason == "" {
			reason = "the try failed"
		}
		reason = fmt.Sprintf("%s; try %d of %d, retry at %s", reason, try, ti.TriesAllowed(), ti.NextAt.Format(time.RFC3339))
	case vocab.TaskSuccess:
		kind, names = vocab.EventTaskSucceeded, t.Notifiers().OnSuccess
	default:
		return
	}
	ps.tell(names, taskEvent(kind, run, ti, try, reason, at), fmt.Sprintf("try %d end %d", try, at.UnixMicro()))
}

// tellRunEnd tells a run's end to its DAG's on_failure or on_success: once per run end.
func (ps *pass) tellRunEnd(run *state.Run) {
	d := run.DAG
	if d == nil {
		return
	}
	kind, names := vocab.EventRunSucceeded, d.OnSuccess
	if run.State == vocab.RunFailed {
		kind, names = vocab.EventRunFailed, d.OnFailure
	}
	if len(names) == 0 {
		return
	}
	reason := run.ReasonCode.Say(run.Reason)
	if reason == "" && run.State == vocab.RunFailed {
		reason = ps.failedTasks(run)
	}
	ev := notify.Event{Event: kind, DAGID: run.DAGID, DAGRunID: run.RunID, State: string(run.State), Reason: reason,
		LogicalDate: run.LogicalDate, At: run.EndDate, Path: notify.RunPath(run.DAGID, run.RunID)}
	ps.tell(names, ev, fmt.Sprintf("run %d end %d", run.PK, run.EndDate.UnixMicro()))
}

// failedTasks says which tasks failed a run, in the DAG's order (at most five named).
func (ps *pass) failedTasks(run *state.Run) string {
	var ids []string
	n := 0
	for _, ti := range run.InOrder() {
		if ti.State == vocab.TaskFailed || ti.State == vocab.TaskUpstreamFailed {
			if ti.State == vocab.TaskFailed {
				n++
				if len(ids) < 5 {
					ids = append(ids, ti.TaskID)
				}
			}
		}
	}
	switch {
	case n == 0:
		return "a task failed"
	case n > len(ids):
		return fmt.Sprintf("tasks failed: %v and %d more", ids, n-len(ids))
	case n == 1:
		return "task failed: " + ids[0]
	}
	return fmt.Sprintf("tasks failed: %v", ids)
}
