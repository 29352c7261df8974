package executor

import (
	"fmt"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// apply folds one pending event into the pass.
func (l *loop) apply(tx store.Tx, p *passState, ev event) error {
	switch ev := ev.(type) {
	case *evStarted:
		le := l.entries[ev.entry]
		if le == nil || le.ti == nil {
			return nil
		}
		if p.pgids == nil {
			p.pgids = map[int64]int{}
		}
		p.pgids[ev.entry] = ev.pgid // written with the pass's other starts, once its events are applied
		if le.pokes == 0 {
			le.ti.StartDate = ev.start
		}
		l.touch(p, le.ti)
		return nil
	case *evFinished:
		return l.finish(tx, p, ev)
	case *evTrigger:
		return l.trigger(tx, p, ev)
	case *evCommand:
		return l.command(tx, p, ev)
	case *evStop:
		return l.applyStop(tx, p, ev)
	}
	return nil
}

// finish writes an attempt's end: the fencing check, the release of every claim, the task's new
// state under the retry policy (§3.3), all in this pass's transaction. The end of an attempt
// whose entry is not in memory is still written while its claims are held (§9: no code path
// drops an attempt's end while its claim is held).
func (l *loop) finish(tx store.Tx, p *passState, ev *evFinished) error {
	delete(l.running, ev.entry)
	le := l.entries[ev.entry]
	if le == nil || le.ti == nil {
		return l.finishUnknown(tx, p, ev)
	}
	ti, run := le.ti, le.run
	if le.failWith != "" {
		// Marked failed (or replaced) while it ran: it fails with no retry, whatever ended it.
		ev.ok, ev.skip, ev.shutdown, ev.lost, ev.reschedule = false, false, false, false, false
		ev.reason, ev.noRetry = le.failWith, true
	}
	if ev.shutdown || ev.lost {
		// Back to the queue with the same try number, unless the lease lapsed and another
		// pass already took the entry back.
		l.dropEntry(ev.entry)
		ti.entry = nil
		ti.State = vocab.TaskScheduled // RequeueHeld writes it
		ti.noted()
		_, err := tx.RequeueHeld(ev.entry, l.cfg.DaemonID, l.epoch)
		l.loaded = false
		return err
	}
	if ev.reschedule {
		held, err := tx.HoldsClaim(ev.entry, l.cfg.DaemonID, l.epoch)
		if err != nil || !held {
			l.loaded = l.loaded && held
			return err
		}
		return l.rescheduleEntry(tx, p, le, ev)
	}
	if le.pokes > 0 {
		ev.start = ti.StartDate // a reschedule sensor reports its first poke's start
	}
	held, err := tx.ReleaseHeld(ev.entry, l.cfg.DaemonID, l.epoch, p.now)
	if err != nil {
		return err
	}
	if !held {
		// The lease lapsed and the entry went back to the queue (or another life took it):
		// a completion under an old epoch is refused (§4.8).
		l.log.Warn("completion refused: claim no longer held", keyEntry, ev.entry)
		l.loaded = false // memory still shows it admitted: read the store again
		return nil
	}
	l.dropEntry(ev.entry)
	ti.entry = nil
	ti.StartDate, ti.EndDate = ev.start, ev.end
	ti.TryNumber = le.TryNumber
	if ev.ok || ev.skip {
		state := vocab.TaskSuccess
		if ev.skip {
			state = vocab.TaskSkipped
		}
		l.notify(p, Notice{Kind: NoticeAttemptEnded, DAGID: run.DAGID, RunID: run.RunID, TaskID: ti.TaskID,
			Try: ti.TryNumber, State: string(state), Reason: ev.reason, Duration: ev.end.Sub(ev.start)})
	}
	switch {
	case ev.ok:
		ti.State, ti.ReasonCode, ti.Reason = vocab.TaskSuccess, "", ""
		if err := l.retireJobRetries(tx, p, run.dag, run, "retry retired by a success"); err != nil { // a job is never shared
			return err
		}
		p.attempts = append(p.attempts, &store.Attempt{Run: run.PK, TaskID: ti.TaskID, TryNumber: ti.TryNumber,
			State: vocab.TaskSuccess, StartDate: ev.start, EndDate: ev.end, Daemon: l.cfg.DaemonID})
		l.touch(p, ti)
		return nil
	case ev.skip:
		ti.State, ti.ReasonCode, ti.Reason = vocab.TaskSkipped, "", ev.reason
		p.attempts = append(p.attempts, &store.Attempt{Run: run.PK, TaskID: ti.TaskID, TryNumber: ti.TryNumber,
			State: vocab.TaskSkipped, StartDate: ev.start, EndDate: ev.end, Reason: ev.reason, Daemon: l.cfg.DaemonID})
		l.touch(p, ti)
		return nil
	}
	return l.failAttempt(tx, p, run, ti, le.TryNumber, "", ev.reason, ev.end, ev.noRetry)
}

// finishUnknown writes the end of an attempt whose entry is not in memory (its run was reloaded
// without it): if this daemon still holds its claims, they are released and the attempt and its
// task instance are recorded from what the runner knows; the run is read again next pass.
func (l *loop) finishUnknown(tx store.Tx, p *passState, ev *evFinished) error {
	held, err := tx.ReleaseHeld(ev.entry, l.cfg.DaemonID, l.epoch, p.now)
	if err != nil || !held {
		if err == nil {
			l.log.Warn("completion refused: claim no longer held", keyEntry, ev.entry)
		}
		return err
	}
	l.loaded = false
	a := ev.a
	if a == nil {
		l.log.Error("completion of an entry not in memory: claims released, outcome unknown", keyEntry, ev.entry)
		return nil
	}
	l.log.Warn("completion of an entry not in memory: claims released, outcome recorded", keyEntry, ev.entry,
		keyDAG, a.dagID, keyRun, a.runID, keyTask, a.task.ID, keyTry, a.try)
	state, reason := vocab.TaskSuccess, ev.reason
	switch {
	case ev.skip:
		state = vocab.TaskSkipped
	case ev.shutdown || ev.lost || ev.reschedule:
		state, reason = vocab.TaskFailed, orDefault(reason, "stopped")
	case !ev.ok:
		state = vocab.TaskFailed
	}
	return tx.RecordEnd(ev.entry, &store.Attempt{TryNumber: a.try, State: state, StartDate: ev.start, EndDate: ev.end,
		Reason: reason, Daemon: l.cfg.DaemonID})
}

// failAttempt records try `try` as failed for reason (with its code, if it has one) and applies
// the retry policy: up_for_retry until end + delay while attempts are left, else failed (§3.3).
func (l *loop) failAttempt(tx store.Tx, p *passState, run *liveRun, ti *liveTI, try int, code vocab.ReasonCode, reason string,
	at time.Time, noRetry bool) error {
	ranBy := "" // an entry that expired, was cancelled or rejected never ran
	if !ti.StartDate.IsZero() {
		ranBy = l.cfg.DaemonID
	}
	p.attempts = append(p.attempts, &store.Attempt{Run: run.PK, TaskID: ti.TaskID, TryNumber: try, State: vocab.TaskFailed,
		StartDate: ti.StartDate, EndDate: ti.EndDate, ReasonCode: code, Reason: reason, Daemon: ranBy})
	said := code.Say(reason)
	l.notify(p, Notice{Kind: NoticeAttemptEnded, DAGID: run.DAGID, RunID: run.RunID, TaskID: ti.TaskID, Try: try,
		State: string(vocab.TaskFailed), Reason: said, Duration: ti.EndDate.Sub(ti.StartDate)})
	ti.TryNumber = try
	ti.ReasonCode, ti.Reason = code, reason
	if !noRetry && ti.task != nil && try < ti.task.Retries+1 {
		ti.State = vocab.TaskUpForRetry
		ti.NextAt = at.Add(dag.RetryDelay(ti.task, try))
		l.log.Info("attempt failed; will retry", keyDAG, run.DAGID, keyRun, run.RunID, keyTask, ti.TaskID,
			keyTry, try, "reason", said, "retry_at", ti.NextAt)
	} else {
		ti.State = vocab.TaskFailed
		ti.NextAt = time.Time{}
		l.log.Info("task failed", keyDAG, run.DAGID, keyRun, run.RunID, keyTask, ti.TaskID, keyTry, try, "reason", said)
	}
	l.touch(p, ti)
	return nil
}

// command applies an operator command to a task instance of a run this daemon owns.
func (l *loop) command(tx store.Tx, p *passState, ev *evCommand) error {
	c := ev.cmd
	err := l.applyCommand(tx, p, c)
	if ev.fromStore {
		if derr := tx.DoneCommand(c.ID, p.now, err); derr != nil {
			return derr
		}
		if err != nil {
			l.log.Warn("command refused", "kind", c.Kind, keyTask, c.TaskID, "err", err)
		}
		return nil
	}
	if err != nil {
		p.replies = append(p.replies, func() { ev.reply <- err })
		return nil
	}
	p.replies = append(p.replies, func() { ev.reply <- nil })
	return nil
}

func (l *loop) applyCommand(tx store.Tx, p *passState, c store.Command) error {
	run := l.runs[c.Run]
	if run == nil {
		return fmt.Errorf("%w: the dag run has ended or is not open here", store.ErrConflict)
	}
	if c.Kind == vocab.CommandReplace {
		return l.replaceRun(tx, p, run)
	}
	ti := run.tis[c.TaskID]
	if ti == nil {
		return fmt.Errorf("%w: task %s", store.ErrNotFound, c.TaskID)
	}
	switch c.Kind {
	case vocab.CommandForce:
		if ti.entry == nil || ti.entry.State != vocab.EntryWaiting {
			return fmt.Errorf("%w: task %s is not waiting for admission", store.ErrConflict, c.TaskID)
		}
		ti.entry.Force = true
		l.queueDirty(ti.entry.ID)
		return tx.SetForce(ti.entry.ID)
	case vocab.CommandCancel:
		if ti.entry == nil || ti.entry.State != vocab.EntryWaiting {
			return fmt.Errorf("%w: task %s is not waiting for admission", store.ErrConflict, c.TaskID)
		}
		return l.endWaiting(tx, p, ti.entry, vocab.EntryCancelled, "cancelled by operator")
	case vocab.CommandFail:
		return l.markFailed(tx, p, run, ti, "marked failed by operator")
	}
	return l.applyGateCommand(tx, p, run, ti, c)
}

// endWaiting ends a waiting entry as expired, cancelled or rejected: a failed attempt that
// follows the retry policy (§4.6).
func (l *loop) endWaiting(tx store.Tx, p *passState, le *liveEntry, state vocab.EntryState, reason string) error {
	code := vocab.ReasonCode(state) // expired, cancelled or rejected
	if err := tx.EndEntry(le.ID, state, code, reason, p.now); err != nil {
		return err
	}
	l.dropEntry(le.ID)
	ti := le.ti
	if ti == nil {
		return nil
	}
	ti.entry = nil
	ti.StartDate, ti.EndDate = time.Time{}, time.Time{}
	return l.failAttempt(tx, p, le.run, ti, le.TryNumber, code, reason, p.now, false)
}

// markFailed ends a task with no further retry (poolflow tasks fail, §3.3; replace). A queued
// entry is retired at once. A running attempt is killed, and the task fails when its end comes
// back: its claims are released only once its processes are gone. An attempt another daemon
// runs (a shared run's) gets a stop request that its runner acts on (shared.go).
func (l *loop) markFailed(tx store.Tx, p *passState, run *liveRun, ti *liveTI, reason string) error {
	if ti.State.Terminal() {
		return fmt.Errorf("%w: task %s is already %s", store.ErrConflict, ti.TaskID, ti.State)
	}
	if le := ti.entry; le != nil {
		if le.State == vocab.EntryAdmitted {
			a := l.running[le.ID]
			if a == nil && le.holder != "" && le.holder != l.cfg.DaemonID {
				if le.ReasonCode == vocab.ReasonStopRequested {
					return nil // asked already
				}
				if err := tx.RequestStop(le.ID, reason); err != nil {
					return err
				}
				le.ReasonCode, le.Reason, le.failWith = vocab.ReasonStopRequested, reason, reason
				return nil
			}
			if a == nil {
				return fmt.Errorf("%w: task %s is starting; try again", store.ErrConflict, ti.TaskID)
			}
			if le.failWith == "" {
				le.failWith = reason
			}
			a.kill(reason)
			return nil
		}
		if err := tx.EndEntry(le.ID, vocab.EntryRetired, vocab.ReasonFailed, reason, p.now); err != nil {
			return err
		}
		l.dropEntry(le.ID)
		ti.entry = nil
	}
	ti.State, ti.ReasonCode, ti.Reason, ti.NextAt = vocab.TaskFailed, "", reason, time.Time{}
	if ti.EndDate.IsZero() && !ti.StartDate.IsZero() {
		ti.EndDate = p.now
	}
	l.touch(p, ti)
	return nil
}
