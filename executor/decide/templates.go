package decide

import (
	"fmt"
	"maps"
	"slices"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/vocab"
)

// render evaluates the templates of a task instance's try (§14): nil, nil for a task without
// any. Evaluation is a pure function of the run, the try and the upstream outputs in memory,
// so the queueing and the start of one try render the same values.
func (ps *pass) render(run *state.Run, ti *state.TI, try int) (*dag.Rendered, error) {
	vars, err := ps.instanceVars(run, ti, try)
	if vars == nil {
		return nil, err
	}
	return run.DAG.Render(ti.Task, vars)
}

// renderPools evaluates only a task instance's templated pool requirements (nil when it has
// none), as render would.
func (ps *pass) renderPools(run *state.Run, ti *state.TI, try int) (map[string]int, error) {
	vars, err := ps.instanceVars(run, ti, try)
	if vars == nil {
		return nil, err
	}
	return run.DAG.RenderPools(ti.Task, vars)
}

// instanceVars are the template variables of a try of a task instance, a mapped instance's
// with its item; nil, nil for a task without templates.
func (ps *pass) instanceVars(run *state.Run, ti *state.TI, try int) (*dag.TemplateVars, error) {
	if run.TemplateErr != "" {
		return nil, fmt.Errorf("%s", run.TemplateErr)
	}
	if run.DAG == nil || ti.Task == nil || !run.DAG.Templated(ti.Task) {
		return nil, nil
	}
	vars := ps.templateVars(run, ti, try)
	if ti.Instance {
		parent := run.TIs[ti.Base]
		if parent == nil {
			return nil, fmt.Errorf("mapped instance %s has no task %s", ti.TaskID, ti.Base)
		}
		items, err := ps.items(run, parent)
		if err != nil {
			return nil, err
		}
		if ti.MapIndex >= len(items) {
			return nil, fmt.Errorf("%s: no item %d in a list of %d", ti.Base, ti.MapIndex, len(items))
		}
		vars.Item, vars.MapIndex = items[ti.MapIndex], ti.MapIndex
	}
	return vars, nil
}

// renderReady evaluates the templates of the ready tasks that have them, when they are queued:
// one whose template fails, or whose evaluated requirements name a pool that does not exist,
// fails that try with the reason (the retry policy applies); the others are queued as usual.
func (ps *pass) renderReady(ready []readyTask) []readyTask {
	out := ready[:0]
	for _, r := range ready {
		rd, err := ps.render(r.run, r.ti, r.try)
		if err == nil && rd != nil && rd.Pools != nil {
			r.pools = rd.Pools
			err = ps.poolsExist(rd.Pools)
		}
		if err != nil {
			ps.templateFailed(r.run, r.ti, r.try, err)
			continue
		}
		out = append(out, r)
	}
	return out
}

// poolsExist refuses evaluated requirements that name a pool nobody configured.
func (ps *pass) poolsExist(named map[string]int) error {
	for _, name := range slices.Sorted(maps.Keys(named)) {
		if _, ok := ps.st.Pools[name]; !ok {
			return fmt.Errorf("pool_requirements: pool %q does not exist (%d slots asked)", name, named[name])
		}
	}
	return nil
}

func (ps *pass) templateFailed(run *state.Run, ti *state.TI, try int, err error) {
	ps.p.warn("task cannot be queued: its template failed", keyDAG, run.DAGID, keyRun, run.RunID, keyTask, ti.TaskID,
		keyTry, try, "reason", err.Error())
	ti.StartDate, ti.EndDate = timeZero, timeZero
	ps.failAttempt(run, ti, try, "", err.Error(), ps.now, false)
}

// startTask is the task an admitted try runs: its own, or a copy with its templated fields
// evaluated; fail says why it cannot run (its values changed under it and no longer evaluate).
func (ps *pass) startTask(run *state.Run, ti *state.TI, try int) (t *dag.Task, fail string) {
	rd, err := ps.render(run, ti, try)
	switch {
	case err != nil:
		return ti.Task, err.Error()
	case rd == nil:
		return ti.Task, ""
	}
	c := *ti.Task
	if ti.Instance {
		c.ID = ti.TaskID // its log, its POOLFLOW_TASK_ID: the instance's own
	}
	if rd.Argv != nil {
		c.Command = rd.Argv
	}
	if rd.Env != nil {
		c.Env = rd.Env
	}
	if rd.Sensor != nil {
		c.Sensor = rd.Sensor
	}
	if rd.Pools != nil {
		c.PoolRequirements = rd.Pools
	}
	return &c, ""
}

// templateVars are the values of a try's templates, from memory.
func (ps *pass) templateVars(run *state.Run, ti *state.TI, try int) *dag.TemplateVars {
	return explain.TemplateVars(run.DAG, ti.Task, run.RunID, run.LogicalDate, run.Params, run.Conf, try,
		func(id string) (string, bool) {
			u := run.TIs[id]
			if u == nil {
				return "", false
			}
			if u.State == vocab.TaskSuccess {
				return u.Output, true
			}
			return "", true
		})
}
