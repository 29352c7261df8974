package decide

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// command applies an operator command to a run this daemon holds (or, for a clear, a mark or
// a deletion, to a run that has ended), writes its audit event with its outcome (§10.4), and
// marks a stored command done or answers the caller.
func (ps *pass) command(ev *Command) {
	c := ev.Cmd
	err := ps.applyCommand(c)
	switch {
	case errors.Is(err, errNotHere):
		return // another live daemon owns the ended run: it applies the command
	case errors.Is(err, errWaits):
		// A forced deletion waits for the attempts it stopped: the stored command stays
		// pending, and every pass reads it and applies it again until they ended.
		ps.p.CommandsWait = true
		if !ev.FromStore {
			ps.p.add(EnsureCommand{c})
			reply := ev.Reply
			ps.p.reply(func() { reply <- nil })
		}
		return
	}
	if c.Kind != vocab.CommandReplace { // the scheduler's own: the run it replaces says so
		ps.audit(c, err)
	}
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

// errNotHere and errWaits are a command this pass leaves alone (another daemon's) or not done
// yet (a forced deletion's attempts are stopping).
var (
	errNotHere = errors.New("another daemon applies it")
	errWaits   = errors.New("waits for its attempts to end")
)

// actions are the audit events of the commands.
var actions = map[vocab.CommandKind]vocab.Action{
	vocab.CommandForce: vocab.ActionForce, vocab.CommandCancel: vocab.ActionCancel, vocab.CommandFail: vocab.ActionFail,
	vocab.CommandApprove: vocab.ActionApprove, vocab.CommandReject: vocab.ActionReject, vocab.CommandClear: vocab.ActionClear,
	vocab.CommandMark: vocab.ActionMark, vocab.CommandDelete: vocab.ActionDeleteRun,
}

// audit writes the audit event of a command: who asked what of which run and task, and the
// outcome (§10.4), in this pass's transaction with the change.
func (ps *pass) audit(c store.Command, err error) {
	e := store.Event{At: ps.now, Actor: orDefault(c.Who, "api"), Action: actions[c.Kind], TaskID: c.TaskID,
		Params: c.Params, Outcome: "ok"}
	if e.Params == "" && c.Note != "" {
		e.Params = noteParams(c.Note)
	}
	if r := ps.st.Runs[c.Run]; r != nil {
		e.DAGID, e.RunID = r.DAGID, r.RunID
	} else if cr := ps.in.CommandRuns[c.Run]; cr != nil {
		e.DAGID, e.RunID = cr.Run.DAGID, cr.Run.RunID
	}
	for _, r := range ps.p.Deleted { // a run the command deleted is no longer in memory
		if r.PK == c.Run {
			e.DAGID, e.RunID = r.DAGID, r.RunID
		}
	}
	if err != nil {
		e.Outcome = err.Error()
	}
	ps.p.add(Event{e})
}

func noteParams(note string) string {
	b, _ := json.Marshal(map[string]string{"note": note})
	return string(b)
}

func (ps *pass) applyCommand(c store.Command) error {
	switch c.Kind {
	case vocab.CommandClear:
		return ps.clear(c)
	case vocab.CommandMark:
		return ps.mark(c)
	case vocab.CommandDelete:
		return ps.deleteRun(c)
	}
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

// markFailed ends a task with no further retry (poolflow tasks fail, §3.3; replace; a job's
// retired retry): mark with state failed, refused for a task that has ended already.
func (ps *pass) markFailed(run *state.Run, ti *state.TI, reason string) error {
	if ti.State.Terminal() {
		return fmt.Errorf("%w: task %s is already %s", store.ErrConflict, ti.TaskID, ti.State)
	}
	return ps.setTask(run, ti, vocab.TaskFailed, "", reason)
}

// setTask gives a task instance a state by a person's or the scheduler's word (a mark, a clear,
// tasks fail, replace, a job's retired retry). Its waiting entry is retired and it takes the
// state at once. A running attempt is stopped first — killed here, or asked of the daemon that
// runs it (a stop request, written so that a daemon that loads memory again knows it) — and
// the attempt's end gives the task its state (finish): its processes are gone and its claims
// released before anything downstream, or its next try, can start.
func (ps *pass) setTask(run *state.Run, ti *state.TI, to vocab.TaskState, code vocab.ReasonCode, reason string) error {
	if le := ti.Entry; le != nil {
		if le.State == vocab.EntryAdmitted {
			return ps.stopAttempt(le, to, reason)
		}
		ps.p.add(EndEntry{le.ID, vocab.EntryRetired, vocab.StopRequestFor(to), reason})
		ps.st.Release(le.ID)
		ps.st.DropEntry(le)
	}
	ps.becomes(ti, to, code, reason)
	return nil
}

// becomes gives a task instance that runs nothing its new state: a cleared one (none) gets a
// fresh set of retries after its last try (§10.1) and its dates back to none.
func (ps *pass) becomes(ti *state.TI, to vocab.TaskState, code vocab.ReasonCode, reason string) {
	ran := ti.EndDate.IsZero() && !ti.StartDate.IsZero()
	ti.State, ti.ReasonCode, ti.Reason, ti.NextAt = to, code, reason, time.Time{}
	switch {
	case to == vocab.TaskNone:
		ti.StartDate, ti.EndDate = time.Time{}, time.Time{}
		retries := 0
		if ti.Task != nil {
			retries = ti.Task.Retries
		}
		ti.TaskInstance.MaxTries = ti.TryNumber + retries + 1
		ti.Due = ps.now
	case ran:
		ti.EndDate = ps.now
	}
	ps.st.Touch(ti)
}

// stopAttempt stops the running attempt of an admitted entry, for a task that becomes to once
// it ended. Asked again, the last request wins.
func (ps *pass) stopAttempt(le *state.Entry, to vocab.TaskState, reason string) error {
	here := ps.st.Running[le.ID]
	remote := le.Holder != "" && le.Holder != ps.cfg.DaemonID
	if !here && !remote {
		return fmt.Errorf("%w: task %s is starting; try again", store.ErrConflict, le.TaskID)
	}
	code := vocab.StopRequestFor(to)
	if le.ReasonCode != code || le.Reason != reason {
		ps.p.add(RequestStop{le.ID, code, reason})
		le.ReasonCode, le.Reason = code, reason
	}
	if here {
		ps.p.Kills = append(ps.p.Kills, Kill{le.ID, reason})
	}
	return nil
}

// noteStop acts on a stop request memory found on an entry: an attempt this daemon runs is
// killed; a waiting entry of its own run (its daemon died before it stopped it, and a takeover
// put it back) is retired in this pass.
func (ps *pass) noteStop(le *state.Entry) {
	reason := orDefault(le.Reason, "stopped")
	switch le.State {
	case vocab.EntryAdmitted:
		if ps.st.Running[le.ID] {
			ps.p.Kills = append(ps.p.Kills, Kill{le.ID, reason})
		}
	case vocab.EntryWaiting:
		if !le.Run.Shared && !le.Run.Away {
			ps.stops = append(ps.stops, le.ID)
		}
	}
}

// applyStop retires a waiting entry that carries a stop request (the daemon that ran its
// attempt died before the attempt ended, and a takeover put it back): nothing of it runs, so
// its task takes the state the stop was for.
func (ps *pass) applyStop(ev stop) {
	le := ps.st.Entries[ev.entry]
	if le == nil || le.State != vocab.EntryWaiting || le.Run.Shared || le.Run.Away || le.TI == nil {
		return
	}
	to, ok := le.ReasonCode.StopsTo()
	if !ok {
		return
	}
	reason := orDefault(le.Reason, "stopped")
	ps.retire(le, reason)
	code := vocab.ReasonMarked
	switch to {
	case vocab.TaskNone:
		code = vocab.ReasonCleared
	case vocab.TaskFailed:
		code = ""
	}
	ps.becomes(le.TI, to, code, reason)
}
