package decide

import (
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/rules"
	"github.com/poolflow/poolflow/vocab"
)

// ruleKey names one attempt a rule assigns a pool to.
type ruleKey struct {
	dag, run, task string
	try            int
}

// assignment is a rule's answer for one attempt.
type assignment struct {
	pool    string
	slots   int
	rule    string
	skipped string // the rules skipped for the DAG's team, and why (§15); "" for none
}

// assign picks the pool of a task that declares none: the first matching rule (§6), else
// {default: 1}. Assignments evaluated before the pass's transaction are taken from the cache.
func (ps *pass) assign(run *state.Run, ti *state.TI, try int) assignment {
	if ps.Rules == nil {
		return assignment{pool: "default", slots: 1}
	}
	key := ruleKey{run.DAGID, run.RunID, ti.TaskID, try}
	a, ok := ps.ruleCache[key]
	if !ok {
		ps.RuleMisses++
		var item any
		idx := -1
		if ti.Instance {
			idx = ti.MapIndex
			if items, err := ps.items(run, run.TIs[ti.Base]); err == nil && idx < len(items) {
				item = items[idx]
			}
		}
		a = ps.evalRulesFor(run, ti.Task, try, item, idx)
	}
	return a
}

func (d *Decider) evalRules(run *state.Run, t *dag.Task, try int) assignment {
	return d.evalRulesFor(run, t, try, nil, -1)
}

// evalRulesFor evaluates the rules for one try; a mapped instance's rules see its item (§14).
func (d *Decider) evalRulesFor(run *state.Run, t *dag.Task, try int, item any, mapIndex int) assignment {
	trigger := run.RunType
	if trigger == vocab.RunTest {
		trigger = vocab.RunManual
	}
	res := d.Rules.Assign(rules.Attrs{DAGID: run.DAGID, TaskID: t.ID, RunID: run.RunID, Owner: run.DAG.Owner,
		Team: run.DAG.Team, Tags: run.DAG.Tags, Trigger: string(trigger), Params: run.Params, TryNumber: try, Kind: string(t.Kind),
		LogicalDate: run.LogicalDate, Item: item, MapIndex: mapIndex})
	return assignment{pool: res.Pool, slots: res.Slots, rule: res.Rule, skipped: res.Skipped()}
}

// PrepareRules evaluates, before the pass's transaction, the rules of the attempts the pass
// can foresee: the first tasks of the runs it will create for manual starts and a test run,
// the tasks downstream of attempts that ended, the tasks on a run's frontier and the retries
// that are due. Rules are user code of unknown cost; a pass holds the writers' lock, and every
// other writer waits for it. What the pass did not foresee is evaluated inside it.
func (d *Decider) PrepareRules(events []any, now time.Time) {
	if d.Rules == nil {
		return
	}
	if d.ruleCache == nil {
		d.ruleCache = map[ruleKey]assignment{}
	}
	clear(d.ruleCache)
	put := func(run *state.Run, t *dag.Task, try int) {
		if t == nil || len(t.PoolRequirements) > 0 || t.Kind == dag.KindApproval {
			return
		}
		key := ruleKey{run.DAGID, run.RunID, t.ID, try}
		if _, ok := d.ruleCache[key]; !ok {
			d.ruleCache[key] = d.evalRules(run, t, try)
		}
	}
	ps := &pass{Decider: d, now: now, st: d.St, in: &Input{Now: now}, p: &Plan{}}
	roots := func(g *dag.DAG, runType vocab.RunType, req TriggerRequest) {
		r, err := ps.runRecord(g, runType, req.LogicalDate, req.RunID, req.Conf, "", false)
		if err != nil {
			return
		}
		run := state.NewRun(r, g)
		for _, t := range g.Tasks {
			if len(t.DependsOn) == 0 {
				put(run, t, 1)
			}
		}
	}
	if t := d.cfg.Test; t != nil && d.St.TestPK == 0 {
		if g := d.DAG(t.DAGID); g != nil {
			roots(g, vocab.RunTest, TriggerRequest{Conf: t.Conf})
		}
	}
	for _, ev := range events {
		switch ev := ev.(type) {
		case *Trigger:
			if g := d.DAG(ev.Req.DAGID); g != nil {
				roots(g, vocab.RunManual, ev.Req)
			}
		case *attempt.Ended:
			le := d.St.Entries[ev.Entry]
			if le == nil || le.TI == nil || le.Run.Layout == nil || le.TI.Idx < 0 || le.Run.Shared {
				continue
			}
			if t := le.TI.Task; !ev.OK && t != nil && le.TryNumber <= t.Retries {
				put(le.Run, t, le.TryNumber+1) // a retry with no delay is queued in this pass
			}
			for _, c := range le.Run.Layout.Down[le.TI.Idx] {
				if ti := le.Run.ByIdx[c]; ti != nil && ti.State == vocab.TaskNone {
					put(le.Run, ti.Task, ti.TryNumber+1)
				}
			}
		}
	}
	for _, run := range d.St.Runs {
		if run.Layout == nil || run.Shared {
			continue
		}
		for _, ti := range run.Frontier() {
			if ti.State == vocab.TaskNone {
				put(run, ti.Task, ti.TryNumber+1)
			}
		}
		for ti := range run.Timers {
			if ti.State == vocab.TaskUpForRetry && !now.Before(ti.NextAt) {
				put(run, ti.Task, ti.TryNumber+1)
			}
		}
	}
}
