package executor

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
)

// liveRun is an open run this daemon owns, kept in memory and written through to the store.
type liveRun struct {
	store.Run
	dag     *dag.DAG
	weights map[string]int
	topo    []string       // tasks in dependency order, file order among equals
	index   map[string]int // task → position in the file (queue ID order, §4.4)
	ups     map[string][]string
	tis     map[string]*liveTI
	params  map[string]any
	dirty   bool
	// noneLeft counts its tasks still in state none after the last advance; -1 = not counted.
	noneLeft int
	// timed is set when a task of the run can wait on a timer (a retry, an approval timeout, a
	// sensor), so the wake-up scan can skip the others.
	timed bool
	// away marks a dead owner's bound run (§9): in memory so that commands and deadlines apply
	// to it, but never advanced or admitted here.
	away bool
}

// liveTI is one task instance of a live run.
type liveTI struct {
	store.TaskInstance
	task  *dag.Task
	entry *liveEntry // its waiting or admitted queue entry
	// A pass changes a task instance several times (queued, then admitted, say); it is written
	// once, at the end of the pass. isNew means the row does not exist yet.
	dirty, isNew bool
}

// touch marks a task instance to be written at the end of the pass.
func (l *loop) touch(p *passState, ti *liveTI) {
	if !ti.dirty {
		ti.dirty = true
		p.dirtyTIs = append(p.dirtyTIs, ti)
	}
}

// flushTIs writes every task instance the pass changed, once each.
func flushTIs(tx *store.Tx, p *passState) error {
	for _, ti := range p.dirtyTIs {
		ti.dirty = false
		if ti.isNew {
			ti.isNew = false
			if err := tx.InsertTI(&ti.TaskInstance); err != nil {
				return err
			}
			continue
		}
		if err := tx.UpdateTI(&ti.TaskInstance); err != nil {
			return err
		}
	}
	p.dirtyTIs = p.dirtyTIs[:0]
	return nil
}

// liveEntry is one of this daemon's queue entries.
type liveEntry struct {
	store.Entry
	run *liveRun
	ti  *liveTI
	pe  *pools.Entry // what admission sees, built once
	// kept are the claims a reschedule sensor keeps between pokes; pokes counts its pokes.
	kept  []store.Requirement
	pokes int
	// reason is the last wait reason written for it.
	reason *pools.Reason
	// away: bound to a dead owner, it waits node_unavailable and holds no room (§9).
	away bool
	// failWith is set when an operator marked the running attempt failed (or a newer fire
	// replaced its run): the attempt is being killed, and its end fails the task with this
	// reason and no retry. Its claims are released only when its processes are gone.
	failWith string
}

// admission returns the entry as pools.Admit sees it, with its current block and force flag.
// Another owner's entry (not_mine, node_unavailable) leaves out _global: max_running limits
// each daemon on its own (§9).
func (le *liveEntry) admission(block pools.Block) pools.Entry {
	if le.pe == nil {
		pe := poolEntry(&le.Entry, block)
		if needs, kept := le.remaining(); kept != nil {
			pe.Needs, pe.Kept = requirementsToNeeds(needs), requirementsToNeeds(kept)
		}
		if block == pools.BlockNotMine || block == pools.BlockNodeAway {
			local := pe.Needs[:0:0]
			for _, n := range pe.Needs {
				if n.Pool != pools.GlobalPool {
					local = append(local, n)
				}
			}
			pe.Needs = local
		}
		le.pe = &pe
	}
	le.pe.Block, le.pe.Force = block, le.Force
	return *le.pe
}

func newLiveRun(r store.Run, d *dag.DAG) *liveRun {
	lr := &liveRun{Run: r, dag: d, weights: dag.PriorityWeights(d), index: map[string]int{}, noneLeft: -1,
		ups: map[string][]string{}, tis: map[string]*liveTI{}}
	for i, t := range d.Tasks {
		lr.index[t.ID] = i
		lr.ups[t.ID] = t.DependsOn
	}
	lr.topo = topoOrder(d)
	for _, t := range d.Tasks {
		lr.timed = lr.timed || t.Retries > 0 || t.Kind == dag.KindApproval || t.Kind == dag.KindSensor
	}
	lr.params = map[string]any{}
	for k, v := range d.Params {
		lr.params[k] = v
	}
	if r.Conf != "" {
		var conf map[string]any
		if json.Unmarshal([]byte(r.Conf), &conf) == nil {
			for k, v := range conf {
				lr.params[k] = v
			}
		}
	}
	return lr
}

// due is the due time of every entry of the run (§4.4): the logical date of a scheduled or
// catch-up run, the request time of a manual or test run.
func (r *liveRun) due() time.Time {
	switch r.RunType {
	case "schedule", "catchup":
		return r.LogicalDate
	}
	return r.QueuedAt
}

// topoOrder lists tasks so that every task follows its upstream tasks, keeping file order
// otherwise; validation has ruled out cycles.
func topoOrder(d *dag.DAG) []string {
	indeg := map[string]int{}
	down := map[string][]string{}
	for _, t := range d.Tasks {
		indeg[t.ID] += 0
		for _, u := range t.DependsOn {
			indeg[t.ID]++
			down[u] = append(down[u], t.ID)
		}
	}
	pos := map[string]int{}
	for i, t := range d.Tasks {
		pos[t.ID] = i
	}
	var ready, out []string
	for _, t := range d.Tasks {
		if indeg[t.ID] == 0 {
			ready = append(ready, t.ID)
		}
	}
	for len(ready) > 0 {
		sort.Slice(ready, func(i, j int) bool { return pos[ready[i]] < pos[ready[j]] })
		id := ready[0]
		ready = ready[1:]
		out = append(out, id)
		for _, dn := range down[id] {
			if indeg[dn]--; indeg[dn] == 0 {
				ready = append(ready, dn)
			}
		}
	}
	return out
}

func label(dagID, taskID string, try int) string {
	return fmt.Sprintf("%s.%s try %d", dagID, taskID, try)
}

// poolEntry converts an entry to what pools.Admit sees.
func poolEntry(e *store.Entry, block pools.Block) pools.Entry {
	pe := pools.Entry{ID: e.ID, Label: e.Label, Priority: e.Priority, Due: e.Due, Deadline: e.Deadline,
		Block: block, Force: e.Force, Needs: make([]pools.Need, len(e.Needs))}
	for i, n := range e.Needs {
		pe.Needs[i] = pools.Need{Pool: n.Pool, Slots: n.Slots}
	}
	return pe
}
