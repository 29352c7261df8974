package decide

import (
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// finish records an attempt's end: the fencing check (this daemon must still hold the claims
// under its epoch, §4.8), the release of every claim, the task's new state under the retry
// policy (§3.3). The end of an attempt whose entry is not in memory is still written while its
// claims are held (§9: no code path drops an attempt's end while its claim is held).
func (ps *pass) finish(ev *attempt.Ended) {
	delete(ps.st.Running, ev.Entry)
	le := ps.st.Entries[ev.Entry]
	if le == nil || le.TI == nil {
		ps.finishUnknown(ev)
		return
	}
	ti, run := le.TI, le.Run
	held := ps.st.Holds(ev.Entry, ps.cfg.DaemonID, ps.in.Epoch)
	if to, stopped := le.ReasonCode.StopsTo(); stopped {
		ps.stoppedEnd(le, ev, held, to)
		return
	}
	if ev.Shutdown || ev.Lost {
		// Back to the queue with the same try number, unless the lease lapsed and another
		// pass already took the entry back.
		ps.st.DropEntry(le)
		ti.State = vocab.TaskScheduled // RequeueHeld writes it
		ti.Noted()
		if held {
			ps.p.add(RequeueHeld{ev.Entry})
			ps.st.Release(ev.Entry)
		}
		ps.st.Invalidate()
		return
	}
	if ev.Reschedule {
		if !held {
			ps.st.Invalidate()
			return
		}
		ps.rescheduleEntry(le, ev)
		return
	}
	if le.Pokes > 0 {
		ev.Start = ti.StartDate // a reschedule sensor reports its first poke's start
	}
	if !held {
		// The lease lapsed and the entry went back to the queue (or another life took it):
		// a completion under an old epoch is refused (§4.8).
		ps.p.warn("completion refused: claim no longer held", keyEntry, ev.Entry)
		ps.st.Invalidate() // memory still shows it admitted: read the store again
		return
	}
	ps.p.add(ReleaseHeld{ev.Entry})
	ps.st.Release(ev.Entry)
	ps.st.DropEntry(le)
	ti.StartDate, ti.EndDate = ev.Start, ev.End
	ti.TryNumber = le.TryNumber
	if ev.OK || ev.Skip {
		st := vocab.TaskSuccess
		if ev.Skip {
			st = vocab.TaskSkipped
		}
		ps.notify(Notice{Kind: NoticeAttemptEnded, DAGID: run.DAGID, RunID: run.RunID, TaskID: ti.TaskID,
			Try: ti.TryNumber, State: string(st), Reason: ev.Reason, Duration: ev.End.Sub(ev.Start)})
	}
	switch {
	case ev.OK:
		ti.State, ti.ReasonCode, ti.Reason = vocab.TaskSuccess, "", ""
		ti.Output = ev.Output                                           // what downstream templates read as tasks.<id>.output (§14)
		ps.retireJobRetries(run.DAG, run, "retry retired by a success") // a job is never shared
		ps.addAttempt(&store.Attempt{Run: run.PK, TaskID: ti.TaskID, TryNumber: ti.TryNumber,
			State: vocab.TaskSuccess, StartDate: ev.Start, EndDate: ev.End, Daemon: ps.cfg.DaemonID, Output: ev.Output})
		ps.st.Touch(ti)
		ps.tellTry(run, ti, ti.TryNumber, "", ev.End)
		return
	case ev.Skip:
		ti.State, ti.ReasonCode, ti.Reason = vocab.TaskSkipped, "", ev.Reason
		ps.addAttempt(&store.Attempt{Run: run.PK, TaskID: ti.TaskID, TryNumber: ti.TryNumber,
			State: vocab.TaskSkipped, StartDate: ev.Start, EndDate: ev.End, Reason: ev.Reason, Daemon: ps.cfg.DaemonID})
		ps.st.Touch(ti)
		return
	}
	ps.failAttempt(run, ti, le.TryNumber, "", ev.Reason, ev.End, ev.NoRetry)
}

// stoppedEnd records the end of an attempt a person or the scheduler stopped (setTask): its
// claims are released, the attempt is recorded as it ended with the reason it was stopped,
// and the task becomes to — failed with no retry, none to run again with a fresh set of
// retries (a cleared attempt uses up none), success or skipped. Whatever ended the attempt,
// the stop's word wins: a mark while the attempt was exiting is recorded once.
func (ps *pass) stoppedEnd(le *state.Entry, ev *attempt.Ended, held bool, to vocab.TaskState) {
	ti, run := le.TI, le.Run
	reason := orDefault(le.Reason, ev.Reason)
	if !held {
		ps.p.warn("completion refused: claim no longer held", keyEntry, ev.Entry)
		ps.st.Invalidate()
		return
	}
	ps.p.add(ReleaseHeld{ev.Entry})
	ps.st.Release(ev.Entry)
	ps.st.DropEntry(le)
	if le.Pokes > 0 {
		ev.Start = ti.StartDate
	}
	ti.StartDate, ti.EndDate, ti.TryNumber = ev.Start, ev.End, le.TryNumber
	if to == vocab.TaskFailed {
		ps.failAttempt(run, ti, le.TryNumber, "", reason, ev.End, true)
		return
	}
	st, code, output := vocab.TaskFailed, vocab.ReasonMarked, ""
	switch {
	case to == vocab.TaskNone:
		code = vocab.ReasonCleared
	case ev.OK:
		st, output = vocab.TaskSuccess, ev.Output
	}
	ps.addAttempt(&store.Attempt{Run: run.PK, TaskID: ti.TaskID, TryNumber: le.TryNumber, State: st,
		StartDate: ev.Start, EndDate: ev.End, ReasonCode: code, Reason: reason, Daemon: ps.cfg.DaemonID, Output: output})
	if to == vocab.TaskSuccess {
		ti.Output = output
	}
	ps.notify(Notice{Kind: NoticeAttemptEnded, DAGID: run.DAGID, RunID: run.RunID, TaskID: ti.TaskID, Try: le.TryNumber,
		State: string(st), Reason: reason, Duration: ev.End.Sub(ev.Start)})
	ps.becomes(ti, to, code, reason)
}

// finishUnknown records the end of an attempt whose entry is not in memory (its run was loaded
// again without it): if this daemon still holds its claims, they are released and the attempt
// and its task instance are recorded from what the runner knows; the run is read again next
// pass.
func (ps *pass) finishUnknown(ev *attempt.Ended) {
	if !ps.st.Holds(ev.Entry, ps.cfg.DaemonID, ps.in.Epoch) {
		ps.p.warn("completion refused: claim no longer held", keyEntry, ev.Entry)
		return
	}
	ps.st.Invalidate()
	a := ev.Spec
	if a == nil {
		ps.p.add(ReleaseHeld{ev.Entry})
		ps.st.Release(ev.Entry)
		ps.p.errorf("completion of an entry not in memory: claims released, outcome unknown", keyEntry, ev.Entry)
		return
	}
	ps.p.warn("completion of an entry not in memory: claims released, outcome recorded", keyEntry, ev.Entry,
		keyDAG, a.DAGID, keyRun, a.RunID, keyTask, a.Task.ID, keyTry, a.Try)
	st, reason := vocab.TaskSuccess, ev.Reason
	switch {
	case ev.Skip:
		st = vocab.TaskSkipped
	case ev.Shutdown || ev.Lost || ev.Reschedule:
		st, reason = vocab.TaskFailed, orDefault(reason, "stopped")
	case !ev.OK:
		st = vocab.TaskFailed
	}
	ps.p.add(ReleaseHeld{ev.Entry})
	ps.st.Release(ev.Entry)
	output := ""
	if st == vocab.TaskSuccess {
		output = ev.Output
	}
	ps.p.add(RecordEnd{ev.Entry, &store.Attempt{TryNumber: a.Try, State: st, StartDate: ev.Start, EndDate: ev.End,
		Reason: reason, Daemon: ps.cfg.DaemonID, Output: output}})
}

// failAttempt records try `try` as failed for reason (with its code, if it has one) and applies
// the retry policy: up_for_retry until end + delay while attempts are left, else failed (§3.3).
func (ps *pass) failAttempt(run *state.Run, ti *state.TI, try int, code vocab.ReasonCode, reason string, at time.Time,
	noRetry bool) {
	ranBy := "" // an entry that expired, was cancelled or rejected never ran
	if !ti.StartDate.IsZero() {
		ranBy = ps.cfg.DaemonID
	}
	ps.addAttempt(&store.Attempt{Run: run.PK, TaskID: ti.TaskID, TryNumber: try, State: vocab.TaskFailed,
		StartDate: ti.StartDate, EndDate: ti.EndDate, ReasonCode: code, Reason: reason, Daemon: ranBy})
	said := code.Say(reason)
	ps.notify(Notice{Kind: NoticeAttemptEnded, DAGID: run.DAGID, RunID: run.RunID, TaskID: ti.TaskID, Try: try,
		State: string(vocab.TaskFailed), Reason: said, Duration: ti.EndDate.Sub(ti.StartDate)})
	ti.TryNumber = try
	ti.ReasonCode, ti.Reason = code, reason
	if !noRetry && ti.Task != nil && try < ti.TriesAllowed() {
		ti.State = vocab.TaskUpForRetry
		ti.NextAt = at.Add(dag.RetryDelay(ti.Task, try))
		ps.p.info("attempt failed; will retry", keyDAG, run.DAGID, keyRun, run.RunID, keyTask, ti.TaskID,
			keyTry, try, "reason", said, "retry_at", ti.NextAt)
	} else {
		ti.State = vocab.TaskFailed
		ti.NextAt = time.Time{}
		ps.p.info("task failed", keyDAG, run.DAGID, keyRun, run.RunID, keyTask, ti.TaskID, keyTry, try, "reason", said)
	}
	ps.st.Touch(ti)
	ps.tellTry(run, ti, try, said, at)
}

// notify records a notice when someone observes them.
func (ps *pass) notify(n Notice) {
	if ps.cfg.Notices {
		ps.p.notify(n)
	}
}
