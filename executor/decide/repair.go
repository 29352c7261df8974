package decide

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Repairing runs (§10): clear, mark and delete, commands any live daemon applies (§9) to the
// runs it holds and to runs that have ended.

// CommandRun is a run a command names that memory does not hold (it has ended), as the pass
// read it: its row, its task instances, and how many of its entries are admitted.
type CommandRun struct {
	Run      store.Run
	TIs      []store.TaskInstance
	Admitted int
}

// runFor is the run a repair command is about: memory's, or an ended run read for it (not
// in memory until the command reopens it). A run another live daemon owns is errNotHere, and so
// is an ended run for a dags test process (it runs its own run only) and, unless the command
// deletes it, an every_node run another daemon fired (bound to it even while it is away, §9).
func (ps *pass) runFor(c store.Command) (run *state.Run, ended bool, err error) {
	if r := ps.st.Runs[c.Run]; r != nil {
		if r.Shared {
			return nil, false, errNotHere
		}
		return r, false, nil
	}
	cr := ps.in.CommandRuns[c.Run]
	if cr == nil {
		return nil, false, fmt.Errorf("%w: dag run %d", store.ErrNotFound, c.Run)
	}
	other := cr.Run.Owner != ps.cfg.DaemonID && cr.Run.Owner != ""
	bound := cr.Run.RunType == vocab.RunNode && c.Kind != vocab.CommandDelete
	if cr.Run.State.Open() || ps.cfg.Test != nil || other && (bound || ps.st.View.IsAlive(cr.Run.Owner)) {
		return nil, false, errNotHere
	}
	g := ps.DAG(cr.Run.DAGID)
	if g == nil {
		return nil, false, fmt.Errorf("%w: dag %s of run %s is not loaded (removed, or invalid)", store.ErrConflict,
			cr.Run.DAGID, cr.Run.RunID)
	}
	run = state.NewRun(cr.Run, g)
	for _, row := range cr.TIs {
		ti := &state.TI{TaskInstance: row, Task: g.TaskOf(row.TaskID)}
		run.Add(ti)
	}
	return run, true, nil
}

// reopen puts an ended run that a clear or a mark changed back in memory as queued: it starts
// again under max_active_runs and forbid (§10.1), as this daemon's.
func (ps *pass) reopen(run *state.Run) {
	run.State, run.EndDate, run.ReasonCode, run.Reason, run.Owner = vocab.RunQueued, timeZero, "", "", ps.cfg.DaemonID
	ps.st.AddRun(run)
	ps.st.TouchRun(run)
	ps.p.info("run reopened", keyDAG, run.DAGID, keyRun, run.RunID)
}

// selectTasks are the task instances of run a clear or a mark of roots reaches (explain.Select).
func (ps *pass) selectTasks(run *state.Run, roots []string, down, up bool) ([]*state.TI, error) {
	states := make(map[string]vocab.TaskState, len(run.TIs))
	for id, ti := range run.TIs {
		states[id] = ti.State
	}
	ids, err := explain.Select(run.DAG, run.RunID, states, roots, down, up)
	if err != nil {
		return nil, err
	}
	out := make([]*state.TI, len(ids))
	for i, id := range ids {
		out[i] = run.TIs[id]
	}
	return out, nil
}

// clear runs task instances again (§10.1): each goes back to none under its DAG's current
// definition, its try numbers going on and with a fresh set of retries; a running attempt is
// stopped first (it uses up no retry); an ended run reopens.
func (ps *pass) clear(c store.Command) error {
	var p store.ClearParams
	if err := unmarshal(c.Params, &p); err != nil {
		return err
	}
	run, ended, err := ps.runFor(c)
	if err != nil {
		return err
	}
	tis, err := ps.selectTasks(run, p.TaskIDs, p.Downstream, p.Upstream)
	if err != nil {
		return err
	}
	reason := "cleared by " + orDefault(c.Who, "api")
	n := 0
	for _, ti := range tis {
		if ti.Task == nil || !explain.Clears(p, ti.State) {
			continue // a task gone from the DAG (named, it was refused), or filtered out
		}
		if err := ps.setTask(run, ti, vocab.TaskNone, vocab.ReasonCleared, reason); err != nil {
			return err
		}
		n++
	}
	if ended && n > 0 {
		ps.reopen(run)
	}
	return nil
}

// markStates are the states a task instance may be marked (§10.2).
var markStates = []vocab.TaskState{vocab.TaskSuccess, vocab.TaskFailed, vocab.TaskSkipped}

// mark gives task instances a state by a person's word (§10.2), with no further retry; a
// running attempt is stopped first and its task takes the state when it ended. Downstream
// tasks then follow their trigger rules (an ended run reopens for them). With no task named it
// marks the whole run: success marks every unfinished task success, failed marks running and
// waiting ones failed and those not yet ready skipped, queued clears it.
func (ps *pass) mark(c store.Command) error {
	var p store.MarkParams
	if err := unmarshal(c.Params, &p); err != nil {
		return err
	}
	if len(p.TaskIDs) == 0 {
		return ps.markRun(c, p)
	}
	to := vocab.TaskState(p.State)
	if !slices.Contains(markStates, to) {
		return fmt.Errorf("%w: state %q: a task is marked success, failed or skipped", store.ErrInvalid, p.State)
	}
	run, ended, err := ps.runFor(c)
	if err != nil {
		return err
	}
	tis, err := ps.selectTasks(run, p.TaskIDs, p.Downstream, p.Upstream)
	if err != nil {
		return err
	}
	reason := fmt.Sprintf("marked %s by %s", to, orDefault(c.Who, "api"))
	n := 0
	for _, ti := range tis {
		if ti.State == to || ti.Task == nil {
			continue
		}
		if err := ps.setTask(run, ti, to, vocab.ReasonMarked, reason); err != nil {
			return err
		}
		n++
	}
	if n > 0 {
		ps.rederive(run, tis)
	}
	if ended && n > 0 {
		ps.reopen(run)
	}
	return nil
}

// rederive puts back to none the tasks downstream of marked ones whose state only their
// trigger rule gave them (upstream_failed, or skipped without running), so that they follow
// their trigger rules again over the marked states (§10.2: marked a success, a task after it
// that was upstream_failed runs). It walks on through the tasks it resets only: a task that ran
// keeps its result, and what lies after it depended on that result, not on the mark.
func (ps *pass) rederive(run *state.Run, marked []*state.TI) {
	if run.Layout == nil {
		return
	}
	var stack []int32
	for _, ti := range marked {
		if ti.Idx >= 0 {
			stack = append(stack, run.Layout.Down[ti.Idx]...)
		}
	}
	for len(stack) > 0 {
		idx := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		ti := run.ByIdx[idx]
		if ti == nil || !derivedByTrigger(ti) {
			continue
		}
		ti.State, ti.ReasonCode, ti.Reason = vocab.TaskNone, "", ""
		ps.st.Touch(ti)
		stack = append(stack, run.Layout.Down[idx]...)
	}
}

// derivedByTrigger reports whether a task instance's state came from its trigger rule alone
// (advance): upstream_failed, or skipped, with no reason code of its own and never started.
// A person's skip is marked, a sensor's soft fail or timeout ran.
func derivedByTrigger(ti *state.TI) bool {
	return (ti.State == vocab.TaskUpstreamFailed || ti.State == vocab.TaskSkipped) && ti.ReasonCode == "" &&
		ti.StartDate.IsZero()
}

// markRun marks a whole run (§10.2): its tasks as mark says, and the run itself ends as asked
// once its stopped attempts ended (endRuns).
func (ps *pass) markRun(c store.Command, p store.MarkParams) error {
	if vocab.RunState(p.State) == vocab.RunQueued {
		return ps.clear(store.Command{ID: c.ID, Kind: vocab.CommandClear, Run: c.Run, Who: c.Who})
	}
	to := vocab.RunState(p.State)
	if to != vocab.RunSuccess && to != vocab.RunFailed {
		return fmt.Errorf("%w: state %q: a run is marked success, failed or queued", store.ErrInvalid, p.State)
	}
	run, ended, err := ps.runFor(c)
	if err != nil {
		return err
	}
	reason := fmt.Sprintf("marked %s by %s", to, orDefault(c.Who, "api"))
	if ended {
		// Nothing of it runs: the run takes the state at once, its tasks keep theirs.
		run.State, run.ReasonCode, run.Reason = to, vocab.ReasonMarked, reason
		run.EndDate = ps.now
		ps.st.TouchRun(run)
		return nil
	}
	for _, ti := range run.InOrder() {
		if ti.State.Terminal() || ti.Task == nil {
			continue
		}
		state := vocab.TaskSuccess
		if to == vocab.RunFailed {
			state = vocab.TaskFailed
			if ti.State == vocab.TaskNone {
				state = vocab.TaskSkipped // not yet ready
			}
		}
		if err := ps.setTask(run, ti, state, vocab.ReasonMarked, reason); err != nil {
			return err
		}
	}
	// The run ends as asked once nothing of it runs, whatever its leaves say (endRuns).
	run.ReasonCode, run.Reason = vocab.StopRequestFor(vocab.TaskState(to)), reason
	ps.st.TouchRun(run)
	return nil
}

// deleteRun deletes a run with everything it holds (§10.3): refused while an attempt of it
// runs, unless forced — then its attempts are stopped and the run goes once they ended.
func (ps *pass) deleteRun(c store.Command) error {
	var p store.DeleteParams
	if err := unmarshal(c.Params, &p); err != nil {
		return err
	}
	run, _, err := ps.runFor(c)
	if err != nil {
		return err
	}
	var running []*state.TI
	for _, ti := range run.InOrder() {
		if le := ti.Entry; le != nil && le.State == vocab.EntryAdmitted {
			running = append(running, ti)
		}
	}
	if cr := ps.in.CommandRuns[c.Run]; cr != nil && cr.Admitted > 0 && len(running) == 0 {
		// An ended run whose stopped attempts (a run mark) are still ending elsewhere.
		if !p.Force {
			return fmt.Errorf("%w: %d attempts of run %s still run: wait for them, or delete with force", store.ErrConflict,
				cr.Admitted, run.RunID)
		}
		return errWaits
	}
	if len(running) > 0 {
		if !p.Force {
			return fmt.Errorf("%w: task %s of run %s is running: wait for it, or delete with force", store.ErrConflict,
				running[0].TaskID, run.RunID)
		}
		// Nothing of it may start any more: its unfinished tasks end now, the running ones once
		// their attempts are stopped.
		reason := "run deleted by " + orDefault(c.Who, "api")
		for _, ti := range run.InOrder() {
			if ti.State.Terminal() || ti.Task == nil {
				continue
			}
			to := vocab.TaskFailed
			if ti.State == vocab.TaskNone {
				to = vocab.TaskSkipped
			}
			if err := ps.setTask(run, ti, to, vocab.ReasonMarked, reason); err != nil {
				return err
			}
		}
		return errWaits
	}
	for _, ti := range run.TIs {
		if le := ti.Entry; le != nil {
			ps.st.DropEntry(le)
		}
	}
	ps.st.RemoveRun(run)
	ps.p.add(DeleteRun{run.PK})
	if ps.deleted == nil {
		ps.deleted = map[int64]bool{}
	}
	ps.deleted[run.PK] = true // what the pass wrote of it before goes with it (flush)
	ps.p.Deleted = append(ps.p.Deleted, run.Run)
	ps.p.info("run deleted", keyDAG, run.DAGID, keyRun, run.RunID, "by", orDefault(c.Who, "api"))
	return nil
}

// unmarshal reads a command's JSON arguments; none is the zero value.
func unmarshal(params string, v any) error {
	if params == "" {
		return nil
	}
	if err := json.Unmarshal([]byte(params), v); err != nil {
		return fmt.Errorf("%w: command arguments: %v", store.ErrInvalid, err)
	}
	return nil
}
