package explain

import (
	"sort"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
)

// Requirements are the requirement rows of an attempt of task t in run runID of d (§4.2; its
// max_active_tasks pool is dagPool, the scheduler's one string per run, or built here): the
// task's pool_requirements (or legacy pool), else the pool assign gives (the first matching
// rule, else {default: 1}), plus the implicit limits — _global (maxRunning, none when 0), the
// run's max_active_tasks, the task's per-DAG and per-run limits — by pool name. The scheduler
// queues an attempt with them, and a clear's preview asks admission about them.
//
// named, when not nil, are the task's named-pool requirements with its templates evaluated
// (dag.Rendered.Pools, §14), in place of t.PoolRequirements.
func Requirements(d *dag.DAG, t *dag.Task, named map[string]int, runID, dagPool string, maxRunning int,
	assign func() (pool string, slots int)) []store.Requirement {
	if dagPool == "" {
		dagPool = pools.DAGPoolPrefix + d.ID + "/" + runID
	}
	var needs []store.Requirement
	reqs := t.PoolRequirements
	if named != nil {
		reqs = named
	}
	if len(reqs) > 0 {
		for pool, slots := range reqs {
			needs = append(needs, store.Requirement{Pool: pool, Slots: slots})
		}
	} else {
		pool, slots := assign()
		needs = append(needs, store.Requirement{Pool: pool, Slots: slots})
	}
	if maxRunning > 0 {
		needs = append(needs, store.Requirement{Pool: pools.GlobalPool, Slots: 1, Implicit: true, Capacity: maxRunning})
	}
	needs = append(needs, store.Requirement{Pool: dagPool, Slots: 1, Implicit: true, Capacity: d.MaxActiveTasks})
	if n := t.MaxActiveTIsPerDAG; n > 0 {
		needs = append(needs, store.Requirement{Pool: pools.TaskPrefix + d.ID + "/" + t.ID, Slots: 1, Implicit: true, Capacity: n})
	}
	if n := t.MaxActiveTIsPerDAGRun; n > 0 {
		needs = append(needs, store.Requirement{Pool: pools.TaskPrefix + d.ID + "/" + runID + "/" + t.ID, Slots: 1,
			Implicit: true, Capacity: n})
	}
	sort.Slice(needs, func(i, j int) bool { return needs[i].Pool < needs[j].Pool })
	return needs
}
