package decide

import (
	"fmt"
	"time"

	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// command applies an operator command to a task instance of a run this daemon holds.
func (ps *pass) command(ev *Command) {
	c := ev.Cmd
	err := ps.applyCommand(c)
	if ev.FromStore {
		ps.p.add(DoneCommand{c.ID, err})
		if err != nil {
			ps.p.warn("command refused", "kind", c.Kind, keyTask, c.TaskID, "err", err)
		}
		return
	}
	reply := ev.Reply
	ps.p.reply(func() { reply <- err })
}

func (ps *pass) applyCommand(c store.Command) error {
	run := ps.st.Runs[c.Run]
	if run == nil {
		return fmt.Errorf("%w: the dag run has ended or is not open here", store.ErrConflict)
	}
	if c.Kind == vocab.CommandReplace {
		return ps.replaceRun(run)
	}
	ti := run.TIs[c.TaskID]
	if ti == nil {
		return fmt.Errorf("%w: task %s", store.ErrNotFound, c.TaskID)
	}
	switch c.Kind {
	case vocab.CommandForce:
		if ti.Entry == nil || ti.Entry.State != vocab.EntryWaiting {
			return fmt.Errorf("%w: task %s is not waiting for admission", store.ErrConflict, c.TaskID)
		}
		ti.Entry.Force = true
		ps.st.QueueDirty(ti.Entry.ID)
		ps.p.add(SetForce{ti.Entry.ID})
		return nil
	case vocab.CommandCancel:
		if ti.Entry == nil || ti.Entry.State != vocab.EntryWaiting {
			return fmt.Errorf("%w: task %s is not waiting for admission", store.ErrConflict, c.TaskID)
		}
		ps.endWaiting(ti.Entry, vocab.EntryCancelled, "cancelled by operator")
		return nil
	case vocab.CommandFail:
		return ps.markFailed(run, ti, "marked failed by operator")
	}
	return ps.applyGateCommand(run, ti, c)
}

// endWaiting ends a waiting entry as expired, cancelled or rejected: a failed attempt that
// follows the retry policy (§4.6).
func (ps *pass) endWaiting(le *state.Entry, st vocab.EntryState, reason string) {
	code := vocab.ReasonCode(st) // expired, cancelled or rejected
	ps.p.add(EndEntry{le.ID, st, code, reason})
	ps.st.Release(le.ID) // a sensor's kept claims go with it
	ps.st.DropEntry(le)
	ti := le.TI
	if ti == nil {
		return
	}
	ti.StartDate, ti.EndDate = time.Time{}, time.Time{}
	ps.failAttempt(le.Run, ti, le.TryNumber, code, reason, ps.now, false)
}

// markFailed ends a task with no further retry (poolflow tasks fail, §3.3; replace). A queued
// entry is retired at once. A running attempt is killed, and the task fails when its end comes
// back: its claims are released only once its processes are gone. An attempt another daemon
// runs (a shared run's) gets a stop request that its runner acts on.
func (ps *pass) markFailed(run *state.Run, ti *state.TI, reason string) error {
	if ti.State.Terminal() {
		return fmt.Errorf("%w: task %s is already %s", store.ErrConflict, ti.TaskID, ti.State)
	}
	if le := ti.Entry; le != nil {
		if le.State == vocab.EntryAdmitted {
			here := ps.st.Running[le.ID]
			if !here && le.Holder != "" && le.Holder != ps.cfg.DaemonID {
				if le.ReasonCode == vocab.ReasonStopRequested {
					return nil // asked already
				}
				ps.p.add(RequestStop{le.ID, reason})
				le.ReasonCode, le.Reason, le.FailWith = vocab.ReasonStopRequested, reason, reason
				return nil
			}
			if !here {
				return fmt.Errorf("%w: task %s is starting; try again", store.ErrConflict, ti.TaskID)
			}
			if le.FailWith == "" {
				le.FailWith = reason
			}
			ps.p.Kills = append(ps.p.Kills, Kill{le.ID, reason})
			return nil
		}
		ps.p.add(EndEntry{le.ID, vocab.EntryRetired, vocab.ReasonFailed, reason})
		ps.st.Release(le.ID)
		ps.st.DropEntry(le)
	}
	ti.State, ti.ReasonCode, ti.Reason, ti.NextAt = vocab.TaskFailed, "", reason, time.Time{}
	if ti.EndDate.IsZero() && !ti.StartDate.IsZero() {
		ti.EndDate = ps.now
	}
	ps.st.Touch(ti)
	return nil
}

// noteStop acts on a stop request memory found on an entry: an attempt this daemon runs is
// killed and will fail with the request's reason; a waiting entry of its own run is failed in
// this pass.
func (ps *pass) noteStop(le *state.Entry) {
	reason := orDefault(le.Reason, "stopped")
	switch le.State {
	case vocab.EntryAdmitted:
		if le.FailWith == "" {
			le.FailWith = reason
		}
		if ps.st.Running[le.ID] {
			ps.p.Kills = append(ps.p.Kills, Kill{le.ID, reason})
		}
	case vocab.EntryWaiting:
		if !le.Run.Shared && !le.Run.Away {
			ps.stops = append(ps.stops, le.ID)
		}
	}
}

// applyStop fails the task of a waiting entry that carries a stop request.
func (ps *pass) applyStop(ev stop) {
	le := ps.st.Entries[ev.entry]
	if le == nil || le.State != vocab.EntryWaiting || le.ReasonCode != vocab.ReasonStopRequested ||
		le.Run.Shared || le.Run.Away || le.TI == nil {
		return
	}
	_ = ps.markFailed(le.Run, le.TI, orDefault(le.Reason, "stopped"))
}
