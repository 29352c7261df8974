package explain

import (
	"fmt"
	"slices"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Select is the task instances of a run (states: by task id) that a clear or a mark of roots
// reaches (§10.1, §10.2; none named: every one), with those downstream and upstream when asked
// (dag.Select), in dependency order, those whose task is gone last. A root with no task instance
// is not found (404); one whose task is no longer in the DAG cannot run again (409). The daemon
// applies a clear with it and a clear's preview shows it.
func Select(d *dag.DAG, runID string, states map[string]vocab.TaskState, roots []string, down, up bool) ([]string, error) {
	if len(roots) == 0 {
		var out, gone []string
		for _, t := range d.Tasks {
			if _, ok := states[t.ID]; ok {
				out = append(out, t.ID)
			}
		}
		for id := range states {
			if d.TaskOf(id) == nil {
				gone = append(gone, id)
			}
		}
		if len(out) > 0 {
			ordered, _ := d.Select(out, false, false)
			out = ordered
		}
		return append(withInstances(d, states, out, nil), gone...), nil
	}
	// A mapped instance (TASK[3], §14) is selected alone; its task's downstream or upstream
	// tasks come with it as they would with its task, but not its task's other instances.
	var taskRoots, instances []string
	only := map[string]bool{} // mapped tasks reached only through one of their instances
	for _, id := range roots {
		_, ok := states[id]
		base, _, isInst := dag.SplitMapID(id)
		isInst = isInst && d.Task(base).Mapped()
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: task %s of dag run %s", store.ErrNotFound, id, runID)
		case d.TaskOf(id) == nil:
			return nil, fmt.Errorf("%w: task %s is no longer in dag %s", store.ErrConflict, id, d.ID)
		case isInst:
			instances = append(instances, id)
			if !slices.Contains(roots, base) {
				only[base] = true
			}
			if down || up {
				taskRoots = append(taskRoots, base)
			}
		default:
			taskRoots = append(taskRoots, id)
		}
	}
	var ids []string
	if len(taskRoots) > 0 {
		var err error
		if ids, err = d.Select(taskRoots, down, up); err != nil {
			return nil, fmt.Errorf("%w: %w", store.ErrConflict, err)
		}
	}
	out := make([]string, 0, len(ids)+len(instances))
	for _, id := range ids {
		if _, ok := states[id]; ok && !only[id] {
			out = append(out, id)
		}
	}
	return withInstances(d, states, out, instances), nil
}

// withInstances adds to the selected task ids the instances of the mapped tasks among them
// (clearing a mapped task clears all of its instances) and the instances selected alone.
func withInstances(d *dag.DAG, states map[string]vocab.TaskState, ids, alone []string) []string {
	out := make([]string, 0, len(ids)+len(alone))
	for _, id := range ids {
		out = append(out, id)
		if !d.Task(id).Mapped() {
			continue
		}
		for i := 0; ; i++ {
			inst := dag.MapID(id, i)
			if _, ok := states[inst]; !ok {
				break
			}
			if !slices.Contains(alone, inst) {
				out = append(out, inst)
			}
		}
	}
	return append(out, alone...)
}

// Clears reports whether a clear with p takes a task instance in state s.
func Clears(p store.ClearParams, s vocab.TaskState) bool {
	switch {
	case p.OnlyFailed && s != vocab.TaskFailed && s != vocab.TaskUpstreamFailed:
		return false
	case p.OnlyRunning && s != vocab.TaskRunning:
		return false
	}
	return true
}

// ClearSelection is the task instances of a run (tis) a clear with p takes, in dependency
// order: Select's, less those whose task is gone from d and those the only_failed and
// only_running filters leave (the daemon's clear takes the same ones).
func ClearSelection(d *dag.DAG, runID string, tis []store.TaskInstance, p store.ClearParams) ([]string, error) {
	states := statesOf(tis)
	ids, err := Select(d, runID, states, p.TaskIDs, p.Downstream, p.Upstream)
	if err != nil {
		return nil, err
	}
	out := ids[:0:0]
	for _, id := range ids {
		if d.TaskOf(id) != nil && Clears(p, states[id]) {
			out = append(out, id)
		}
	}
	return out, nil
}

// MarkSelection is the task instances of a run (tis) a mark of p.TaskIDs with p.State takes:
// Select's, less those whose task is gone from d and those already in that state (the daemon's
// mark changes the same ones).
func MarkSelection(d *dag.DAG, runID string, tis []store.TaskInstance, p store.MarkParams) ([]string, error) {
	states := statesOf(tis)
	ids, err := Select(d, runID, states, p.TaskIDs, p.Downstream, p.Upstream)
	if err != nil {
		return nil, err
	}
	out := ids[:0:0]
	for _, id := range ids {
		if d.TaskOf(id) != nil && states[id] != vocab.TaskState(p.State) {
			out = append(out, id)
		}
	}
	return out, nil
}

func statesOf(tis []store.TaskInstance) map[string]vocab.TaskState {
	states := make(map[string]vocab.TaskState, len(tis))
	for _, ti := range tis {
		states[ti.TaskID] = ti.State
	}
	return states
}
