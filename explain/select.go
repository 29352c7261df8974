package explain

import (
	"fmt"

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
			if d.Task(id) == nil {
				gone = append(gone, id)
			}
		}
		if len(out) > 0 {
			ordered, _ := d.Select(out, false, false)
			out = ordered
		}
		return append(out, gone...), nil
	}
	for _, id := range roots {
		switch _, ok := states[id]; {
		case !ok:
			return nil, fmt.Errorf("%w: task %s of dag run %s", store.ErrNotFound, id, runID)
		case d.Task(id) == nil:
			return nil, fmt.Errorf("%w: task %s is no longer in dag %s", store.ErrConflict, id, d.ID)
		}
	}
	ids, err := d.Select(roots, down, up)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", store.ErrConflict, err)
	}
	out := ids[:0]
	for _, id := range ids {
		if _, ok := states[id]; ok {
			out = append(out, id)
		}
	}
	return out, nil
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
		if d.Task(id) != nil && Clears(p, states[id]) {
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
		if d.Task(id) != nil && states[id] != vocab.TaskState(p.State) {
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
