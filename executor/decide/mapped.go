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
// what its downstream tasks wait for; their trigger rules count the instances.
//
// A pass makes or queues at most Config.MapPerPass instances, all mapped tasks together: a list of
// 10,000 expands over ten passes that follow each other at once (Plan.Wake), each a
// transaction well inside the store's bound (store.OpTimeout), instead of one that grows with
// the list; the first instances are admitted and start while the next are made.

// DefaultMapPerPass bounds the mapped instances a pass makes or queues when Config.MapPerPass
// is 0: at 1,000 an expanding pass is a few tens of milliseconds.
const DefaultMapPerPass = 1_000

// advanceMapped moves a mapped task on the frontier: it expands when its trigger rule says it is
// ready, makes the instances still to make, queues those that are ready (new, cleared, retry
// due), and sums them up once all are made and ended.
func (ps *pass) advanceMapped(run *state.Run, ti *state.TI) []readyTask {
	if ti.State == vocab.TaskNone {
		switch next := dag.TriggerCounted(ti.Task.TriggerRule, ps.upStates(run, ti)); next {
		case vocab.TaskScheduled:
			if !ps.expand(run, ti) {
				return nil
			}
		case vocab.TaskSkipped, vocab.TaskUpstreamFailed:
			ti.State = next
			ti.ReasonCode, ti.Reason = "", fmt.Sprintf("%s: trigger rule %s", next, ti.Task.TriggerRule)
			ps.st.Touch(ti)
			return nil
		default:
			return nil
		}
	}
	m := run.Mapping(ti.TaskID)
	ps.makeInstances(run, ti, m)
	var ready []readyTask
	// Then the instances that changed or whose clock came, not all of them: a pass that ends
	// one instance of 10,000 looks at that one, and sums the task up from the counts.
	take := m.Take(ps.mapBudget())
	for _, inst := range take {
		ps.p.Walked++
		switch inst.State {
		case vocab.TaskNone:
			ready = ps.readyInstance(ready, run, inst)
		case vocab.TaskUpForRetry:
			if !ps.now.Before(inst.NextAt) {
				ready = ps.readyInstance(ready, run, inst)
			}
		}
	}
	ps.mapUsed += len(take)
	if m.Pending() > 0 || m.ToMake() > 0 {
		ps.later(m)
	}
	n := m.Size()
	if n == 0 {
		return ready
	}
	open := m.Open() > 0 || m.ToMake() > 0
	switch {
	case open && ti.State.Terminal():
		// An instance was cleared: the mapped task runs again until it has ended.
		ti.State, ti.EndDate, ti.ReasonCode, ti.Reason = vocab.TaskRunning, timeZero, "", mappedReason(n)
		ps.st.Touch(ti)
	case open:
	default:
		failed := m.Count(vocab.TaskFailed) + m.Count(vocab.TaskUpstreamFailed)
		st, reason := vocab.TaskSuccess, mappedReason(n)
		switch {
		case failed > 0:
			st, reason = vocab.TaskFailed, fmt.Sprintf("%d of %d mapped instances failed", failed, n)
		case m.Count(vocab.TaskSkipped) == n:
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

// mapBudget is how many more mapped instances this pass may make or queue.
func (ps *pass) mapBudget() int {
	limit := ps.cfg.MapPerPass
	if limit <= 0 {
		limit = DefaultMapPerPass
	}
	return max(0, limit-ps.mapUsed)
}

// later has the next pass, at once, go on with a mapped task's instances this one left.
func (ps *pass) later(m *state.Mapping) {
	m.Later()
	ps.p.Wake = true
}

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

// expand evaluates a ready mapped task's list: more than max_map_length items, or a list that
// does not evaluate, fails it naming why; an empty list skips it; else it runs, with instances
// to make (makeInstances). Instances of an earlier, longer list are no longer part of the task.
// Those of this one that ended and were not cleared keep their state (a clear of the failed
// ones runs those again, as in Airflow).
func (ps *pass) expand(run *state.Run, ti *state.TI) bool {
	ti.Items = nil // evaluated again: the inputs may have changed since a clear
	items, err := ps.items(run, ti)
	ti.StartDate = ps.now
	switch {
	case err != nil:
		ps.p.warn("mapped task cannot expand", keyDAG, run.DAGID, keyRun, run.RunID, keyTask, ti.TaskID, "reason", err.Error())
		ti.State, ti.EndDate, ti.ReasonCode, ti.Reason = vocab.TaskFailed, ps.now, "", err.Error()
		ps.st.Touch(ti)
		return false
	case len(items) == 0:
		ti.State, ti.EndDate, ti.ReasonCode, ti.Reason = vocab.TaskSkipped, ps.now, "", "expand: the list is empty"
		ps.st.Touch(ti)
		return false
	}
	ti.State, ti.EndDate, ti.ReasonCode, ti.Reason = vocab.TaskRunning, timeZero, "", mappedReason(len(items))
	ps.st.Touch(ti)
	m := run.Mapping(ti.TaskID)
	m.Want(len(items))
	for i := len(items); i < m.Len(); i++ {
		inst := m.At(i)
		if inst == nil {
			continue
		}
		if !inst.State.Terminal() || inst.State == vocab.TaskNone {
			inst.State = vocab.TaskSkipped
		}
		inst.Reason = fmt.Sprintf("removed: the list has %d items now", len(items))
		ps.st.Touch(inst)
	}
	return true
}

// makeInstances makes the running mapped task's instances still to make, as many as the pass
// may queue besides those already waiting to be looked at; they are made in none, so Take
// readies them. After a load memory knows the list's length only once it evaluated it again; a
// list that no longer evaluates makes no more.
func (ps *pass) makeInstances(run *state.Run, ti *state.TI, m *state.Mapping) {
	if ti.State != vocab.TaskRunning {
		return
	}
	if !m.Known() {
		items, err := ps.items(run, ti)
		if err != nil {
			ps.p.warn("mapped task cannot evaluate its list again", keyDAG, run.DAGID, keyRun, run.RunID, keyTask, ti.TaskID,
				"reason", err.Error())
			m.Want(m.Len())
			return
		}
		m.Want(len(items))
	}
	for todo := min(m.ToMake(), ps.mapBudget()-m.Pending()); todo > 0; todo-- {
		inst := &state.TI{TaskInstance: store.TaskInstance{Run: run.PK, TaskID: dag.MapID(ti.TaskID, m.Len()), State: vocab.TaskNone},
			Task: ti.Task}
		run.Add(inst)
		ps.st.Touch(inst)
	}
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
// They are counted, a mapped task's instances from its counts, not one by one.
func (ps *pass) upStates(run *state.Run, ti *state.TI) dag.UpstreamCounts {
	var c dag.UpstreamCounts
	for _, u := range run.Layout.Up[ti.Idx] {
		uti := run.ByIdx[u]
		if uti == nil {
			continue
		}
		if uti.Task.Mapped() && uti.State != vocab.TaskNone {
			if m := run.Mapping(uti.TaskID); m.Len() > 0 {
				m.States(c.Add)
				if !uti.State.Terminal() {
					c.Add(uti.State, 1) // still mapping: its downstream waits
				}
				continue
			}
		}
		c.Add(uti.State, 1)
	}
	return c
}
