package decide

import (
	"fmt"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Mapped tasks (§14). A mapped task's own task instance is the node of the graph: it becomes
// ready by its trigger rule like any task, then expands — its list evaluated, one task instance
// "task[i]" made per item, each queued with its own requirements as a plan entry of its own —
// and stays running while any instance is open. Once every instance ended it takes their
// summary state (failed if one failed, skipped if all were skipped, else success), which is
// what its downstream tasks wait for; their trigger rules count the instances one by one.

// advanceMapped moves a mapped task on the frontier: it expands when its trigger rule says it is
// ready, queues instances that are ready (new, cleared, retry due), and sums them up once all
// ended.
func (ps *pass) advanceMapped(run *state.Run, ti *state.TI) []readyTask {
	if ti.State == vocab.TaskNone {
		switch next := dag.Trigger(ti.Task.TriggerRule, ps.upStates(run, ti)); next {
		case vocab.TaskScheduled:
			return ps.expand(run, ti)
		case vocab.TaskSkipped, vocab.TaskUpstreamFailed:
			ti.State = next
			ti.ReasonCode, ti.Reason = "", fmt.Sprintf("%s: trigger rule %s", next, ti.Task.TriggerRule)
			ps.st.Touch(ti)
		}
		return nil
	}
	insts := run.Instances(ti.TaskID)
	if len(insts) == 0 {
		return nil
	}
	var ready []readyTask
	open, failed, skipped := false, 0, 0
	for _, inst := range insts {
		switch inst.State {
		case vocab.TaskNone:
			ready = ps.readyInstance(ready, run, inst)
		case vocab.TaskUpForRetry:
			if !ps.now.Before(inst.NextAt) {
				ready = ps.readyInstance(ready, run, inst)
			}
		case vocab.TaskFailed, vocab.TaskUpstreamFailed:
			failed++
		case vocab.TaskSkipped:
			skipped++
		}
		open = open || !inst.State.Terminal()
	}
	switch {
	case open && ti.State.Terminal():
		// An instance was cleared: the mapped task runs again until it has ended.
		ti.State, ti.EndDate, ti.ReasonCode, ti.Reason = vocab.TaskRunning, timeZero, "", mappedReason(len(insts))
		ps.st.Touch(ti)
	case open:
	default:
		st, reason := vocab.TaskSuccess, mappedReason(len(insts))
		switch {
		case failed > 0:
			st, reason = vocab.TaskFailed, fmt.Sprintf("%d of %d mapped instances failed", failed, len(insts))
		case skipped == len(insts):
			st, reason = vocab.TaskSkipped, "every mapped instance was skipped"
		}
		if ti.State != st || ti.Reason != reason {
			ti.State, ti.EndDate, ti.ReasonCode, ti.Reason = st, ps.now, "", reason
			ps.st.Touch(ti)
		}
	}
	return ready
}

func mappedReason(n int) string { return fmt.Sprintf("mapped over %d items", n) }

// readyInstance adds a mapped instance to the tasks to queue, once per pass (the mapped task
// may come back on the frontier in the same pass).
func (ps *pass) readyInstance(ready []readyTask, run *state.Run, inst *state.TI) []readyTask {
	if ps.mapReady[inst] {
		return ready
	}
	if ps.mapReady == nil {
		ps.mapReady = map[*state.TI]bool{}
	}
	ps.mapReady[inst] = true
	return append(ready, readyTask{run: run, ti: inst, try: inst.TryNumber + 1})
}

// expand evaluates a ready mapped task's list and makes its instances: more than
// max_map_length items, or a list that does not evaluate, fails it naming why; an empty list
// skips it.
func (ps *pass) expand(run *state.Run, ti *state.TI) []readyTask {
	items, err := ps.items(run, ti)
	ti.StartDate = ps.now
	switch {
	case err != nil:
		ps.p.warn("mapped task cannot expand", keyDAG, run.DAGID, keyRun, run.RunID, keyTask, ti.TaskID, "reason", err.Error())
		ti.State, ti.EndDate, ti.ReasonCode, ti.Reason = vocab.TaskFailed, ps.now, "", err.Error()
		ps.st.Touch(ti)
		return nil
	case len(items) == 0:
		ti.State, ti.EndDate, ti.ReasonCode, ti.Reason = vocab.TaskSkipped, ps.now, "", "expand: the list is empty"
		ps.st.Touch(ti)
		return nil
	}
	ti.Items = items
	ti.State, ti.EndDate, ti.ReasonCode, ti.Reason = vocab.TaskRunning, timeZero, "", mappedReason(len(items))
	ps.st.Touch(ti)
	var ready []readyTask
	for i := range items {
		id := dag.MapID(ti.TaskID, i)
		inst := run.TIs[id]
		if inst == nil {
			inst = &state.TI{TaskInstance: store.TaskInstance{Run: run.PK, TaskID: id, State: vocab.TaskNone}, Task: ti.Task}
			run.Add(inst)
		} else if inst.State != vocab.TaskNone {
			// Expanded again (the mapped task was cleared): a fresh set of retries after its last try.
			inst.State, inst.ReasonCode, inst.Reason = vocab.TaskNone, "", ""
			inst.MaxTries = inst.TryNumber + ti.Task.Retries + 1
		}
		ps.st.Touch(inst)
		ready = ps.readyInstance(ready, run, inst)
	}
	// Instances of an earlier, longer list are no longer part of the task.
	for i := len(items); ; i++ {
		inst := run.TIs[dag.MapID(ti.TaskID, i)]
		if inst == nil {
			break
		}
		if !inst.State.Terminal() || inst.State == vocab.TaskNone {
			inst.State = vocab.TaskSkipped
		}
		inst.Reason = fmt.Sprintf("removed: the list has %d items now", len(items))
		ps.st.Touch(inst)
	}
	return ready
}

// items is a mapped task's list for its run: memory's, or evaluated (after a load memory has
// none; the inputs are the same, so the list is too).
func (ps *pass) items(run *state.Run, ti *state.TI) ([]any, error) {
	if ti.Items != nil {
		return ti.Items, nil
	}
	if run.TemplateErr != "" {
		return nil, fmt.Errorf("%s", run.TemplateErr)
	}
	items, err := run.DAG.ExpandItems(ti.Task, ps.templateVars(run, ti, 1))
	if err == nil {
		ti.Items = items
	}
	return items, err
}

// upStates are the states of a task's upstream task instances its trigger rule counts: a mapped
// upstream task that expanded counts each of its instances (§14).
func (ps *pass) upStates(run *state.Run, ti *state.TI) []vocab.TaskState {
	up := run.Layout.Up[ti.Idx]
	ups := make([]vocab.TaskState, 0, len(up))
	for _, u := range up {
		uti := run.ByIdx[u]
		if uti == nil {
			continue
		}
		if uti.Task.Mapped() && uti.State != vocab.TaskNone {
			if insts := run.Instances(uti.TaskID); len(insts) > 0 {
				for _, inst := range insts {
					ups = append(ups, inst.State)
				}
				if !uti.State.Terminal() {
					ups = append(ups, uti.State) // still mapping: its downstream waits
				}
				continue
			}
		}
		ups = append(ups, uti.State)
	}
	return ups
}
