package decide

import (
	"fmt"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/store"
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
	if c.Kind == "replace" {
		return ps.replaceRun(run)
	}
	ti := run.TIs[c.TaskID]
	if ti == nil {
		return fmt.Errorf("%w: task %s", store.ErrNotFound, c.TaskID)
	}
	switch c.Kind {
	case "force":
		if ti.Entry == nil || ti.Entry.State != "waiting" {
			return fmt.Errorf("%w: task %s is not waiting for admission", store.ErrConflict, c.TaskID)
		}
		ti.Entry.Force = true
		ps.st.QueueDirty(ti.Entry.ID)
		ps.p.add(SetForce{ti.Entry.ID})
		return nil
	case "cancel":
		if ti.Entry == nil || ti.Entry.State != "waiting" {
			return fmt.Errorf("%w: task %s is not waiting for admission", store.ErrConflict, c.TaskID)
		}
		ps.endWaiting(ti.Entry, store.EntryCancelled, "cancelled by operator")
		return nil
	case "fail":
		return ps.markFailed(run, ti, "marked failed by operator")
	}
	return ps.applyGateCommand(run, ti, c)
}

// endWaiting ends a waiting entry as expired, cancelled or rejected: a failed attempt that
// follows the retry policy (§4.6).
func (ps *pass) endWaiting(le *state.Entry, st store.EntryState, reason string) {
	ps.p.add(EndEntry{le.ID, st, string(st), reason})
	ps.st.Release(le.ID) // a sensor's kept claims go with it
	ps.st.DropEntry(le)
	ti := le.TI
	if ti == nil {
		return
	}
	ti.StartDate, ti.EndDate = time.Time{}, time.Time{}
	ps.failAttempt(le.Run, ti, le.TryNumber, reason, ps.now, false)
}

// markFailed ends a task with no further retry (poolflow tasks fail, §3.3; replace). A queued
// entry is retired at once. A running attempt is killed, and the task fails when its end comes
// back: its claims are released only once its processes are gone. An attempt another daemon
// runs (a shared run's) gets a stop request that its runner acts on.
func (ps *pass) markFailed(run *state.Run, ti *state.TI, reason string) error {
	if dag.State(ti.State).Terminal() {
		return fmt.Errorf("%w: task %s is already %s", store.ErrConflict, ti.TaskID, ti.State)
	}
	if le := ti.Entry; le != nil {
		if le.State == string(store.EntryAdmitted) {
			here := ps.st.Running[le.ID]
			if !here && le.Holder != "" && le.Holder != ps.cfg.DaemonID {
				if le.ReasonCode == store.StopRequested {
					return nil // asked already
				}
				ps.p.add(RequestStop{le.ID, reason})
				le.ReasonCode, le.Reason, le.FailWith = store.StopRequested, reason, reason
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
		ps.p.add(EndEntry{le.ID, store.EntryRetired, "failed", reason})
		ps.st.Release(le.ID)
		ps.st.DropEntry(le)
	}
	ti.State, ti.Reason, ti.NextAt = string(dag.StateFailed), reason, time.Time{}
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
	case string(store.EntryAdmitted):
		if le.FailWith == "" {
			le.FailWith = reason
		}
		if ps.st.Running[le.ID] {
			ps.p.Kills = append(ps.p.Kills, Kill{le.ID, reason})
		}
	case string(store.EntryWaiting):
		if !le.Run.Shared && !le.Run.Away {
			ps.stops = append(ps.stops, le.ID)
		}
	}
}

// applyStop fails the task of a waiting entry that carries a stop request.
func (ps *pass) applyStop(ev stop) {
	le := ps.st.Entries[ev.entry]
	if le == nil || le.State != string(store.EntryWaiting) || le.ReasonCode != store.StopRequested ||
		le.Run.Shared || le.Run.Away || le.TI == nil {
		return
	}
	_ = ps.markFailed(le.Run, le.TI, orDefault(le.Reason, "stopped"))
}
