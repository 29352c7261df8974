package decide

import (
	"fmt"
	"time"

	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/notify"
	"github.com/poolflow/poolflow/vocab"
)

// Deadlines and waits (§13): a run still open at its DAG's dagrun_timeout fails (its running
// attempts stopped, its waiting entries retired, reason dagrun_timeout); a run still open at
// its deadline tells on_deadline_miss, once; an entry still waiting on_queue_wait.after after it
// joined the queue tells its task's on_queue_wait, once per entry. The run's owner decides all
// three (a shared run's other daemons, and a dead owner's bound run, leave them to it).

// deadlines fails the runs past their dagrun_timeout and tells the deadlines missed.
func (ps *pass) deadlines() {
	d := ps.Decider
	for _, run := range ps.st.Runs {
		g := run.DAG
		if g == nil || run.Shared || run.Away {
			continue
		}
		if at, ok := timeoutAt(run); ok && !ps.now.Before(at) {
			ps.timeOut(run)
		}
		if at, ok := deadlineAt(run); ok && !ps.now.Before(at) && !d.toldDeadline[run.PK] {
			if d.toldDeadline == nil {
				d.toldDeadline = map[int64]bool{}
			}
			d.toldDeadline[run.PK] = true
			dl := at
			ev := notify.Event{Event: vocab.EventDeadlineMiss, DAGID: run.DAGID, DAGRunID: run.RunID, State: string(run.State),
				Reason: fmt.Sprintf("still %s %s after its %s (deadline %s)", run.State, g.Deadline.After,
					orDefault(g.Deadline.From, "logical_date"), at.UTC().Format(time.RFC3339)),
				LogicalDate: run.LogicalDate, At: ps.now, Deadline: &dl, Path: notify.RunPath(run.DAGID, run.RunID)}
			ps.tell(g.OnDeadlineMiss, ev, fmt.Sprintf("run %d deadline %d", run.PK, at.UnixMicro()))
		}
	}
	if len(d.toldDeadline) > 2*len(ps.st.Runs)+64 {
		for pk := range d.toldDeadline {
			if ps.st.Runs[pk] == nil {
				delete(d.toldDeadline, pk)
			}
		}
	}
}

// timeoutAt is when a running run fails by its dagrun_timeout; ok is false when it has none
// (or has timed out already).
func timeoutAt(run *state.Run) (time.Time, bool) {
	if run.DAG == nil || run.DAG.DagrunTimeout <= 0 || run.State != vocab.RunRunning || run.StartDate.IsZero() ||
		run.ReasonCode == vocab.ReasonDagrunTimeout {
		return time.Time{}, false
	}
	return run.StartDate.Add(run.DAG.DagrunTimeout), true
}

// deadlineAt is when an open run misses its deadline; ok is false when it has none to tell.
func deadlineAt(run *state.Run) (time.Time, bool) {
	g := run.DAG
	if g == nil || g.Deadline == nil || len(g.OnDeadlineMiss) == 0 || run.State.Terminal() {
		return time.Time{}, false
	}
	return g.Deadline.At(run.LogicalDate, run.QueuedAt), true
}

// timeOut fails a run past its dagrun_timeout as a mark failed does: unfinished tasks fail
// (not-yet-ready ones are skipped), running attempts are stopped and fail once they ended,
// waiting entries are retired; the run ends failed, reason dagrun_timeout, once nothing of it
// runs (endRuns). A task whose attempt is starting is stopped at the next pass.
func (ps *pass) timeOut(run *state.Run) {
	reason := fmt.Sprintf("dagrun_timeout %s passed since the run started at %s", run.DAG.DagrunTimeout,
		run.StartDate.UTC().Format(time.RFC3339))
	all := true
	for _, ti := range run.InOrder() {
		if ti.State.Terminal() || ti.Task == nil {
			continue
		}
		if le := ti.Entry; le != nil && le.State == vocab.EntryAdmitted && le.ReasonCode.Valid() && le.Reason == reason {
			continue // asked to stop already
		}
		to := vocab.TaskFailed
		if ti.State == vocab.TaskNone {
			to = vocab.TaskSkipped
		}
		if err := ps.setTask(run, ti, to, vocab.ReasonDagrunTimeout, reason); err != nil {
			all = false
			continue
		}
		if ti.State == vocab.TaskFailed {
			ps.tellTry(run, ti, ti.TryNumber, reason, ps.now) // a running one tells when its attempt ended
		}
	}
	if !all {
		return
	}
	run.ReasonCode, run.Reason = vocab.ReasonDagrunTimeout, reason
	ps.st.TouchRun(run)
	ps.p.warn("run timed out", keyDAG, run.DAGID, keyRun, run.RunID, "dagrun_timeout", run.DAG.DagrunTimeout.String())
}

// queueWaits tells the entries waiting longer than their task's on_queue_wait.after. Its cost
// follows the entries only at the moments one may come due: the next due time, or the
// shortest after from now (what a new entry needs at least), or a load.
func (ps *pass) queueWaits() {
	d := ps.Decider
	shortest := d.shortestQueueWait()
	if shortest == 0 {
		d.toldWait, d.queueWaitAt = nil, time.Time{}
		return
	}
	if !d.queueWaitAt.IsZero() && ps.now.Before(d.queueWaitAt) && ps.in.Load == nil && !ps.in.DAGsChanged {
		return
	}
	next := ps.now.Add(shortest)
	told := map[int64]bool{}
	for id, le := range ps.st.Entries {
		if le.State != vocab.EntryWaiting || le.Run == nil || le.Run.Shared || le.Run.Away || le.TI == nil ||
			le.TI.Task == nil || le.TI.Task.Notifiers().OnQueueWait == nil {
			continue
		}
		qw := le.TI.Task.Notifiers().OnQueueWait
		due := le.CreatedAt.Add(qw.After)
		if ps.now.Before(due) {
			next = minTime(next, due)
			continue
		}
		told[id] = true
		if d.toldWait[id] {
			continue
		}
		run, ti := le.Run, le.TI
		ev := notify.Event{Event: vocab.EventQueueWait, DAGID: run.DAGID, DAGRunID: run.RunID, TaskID: ti.TaskID,
			TryNumber: le.TryNumber, State: string(ti.State), Reason: "waiting for admission", LogicalDate: run.LogicalDate,
			At: ps.now, Path: notify.TaskPath(run.DAGID, run.RunID, ti.TaskID),
			Wait: &notify.Wait{QueueID: id, Waited: ps.now.Sub(le.CreatedAt), Pool: le.FirstPool()}}
		ps.tell(qw.Notify, ev, fmt.Sprintf("entry %d", id))
	}
	d.toldWait, d.queueWaitAt = told, next
}

// shortestQueueWait is the shortest on_queue_wait.after of the loaded DAGs; 0 when none has one.
func (d *Decider) shortestQueueWait() time.Duration {
	if d.queueWaitOf == d.dags {
		return d.queueWaitMin
	}
	var m time.Duration
	for _, g := range d.dags.List {
		for _, t := range g.Tasks {
			if q := t.Notifiers().OnQueueWait; q != nil && q.After > 0 && (m == 0 || q.After < m) {
				m = q.After
			}
		}
	}
	d.queueWaitOf, d.queueWaitMin = d.dags, m
	return m
}

// notifyWake is the earliest moment a deadline, a dagrun_timeout or a queue wait comes due.
func (d *Decider) notifyWake(at func(time.Time)) {
	for _, run := range d.St.Runs {
		if run.DAG == nil || run.Shared || run.Away {
			continue
		}
		if t, ok := timeoutAt(run); ok {
			at(t)
		}
		if t, ok := deadlineAt(run); ok && !d.toldDeadline[run.PK] {
			at(t)
		}
	}
	if d.shortestQueueWait() > 0 {
		at(d.queueWaitAt)
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
