package executor

import (
	"fmt"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/rules"
	"github.com/poolflow/poolflow/vocab"
)

// compileRules takes the configuration the daemon starts with (§6): the DAGs are loaded and
// validated against it, and its rules compiled against the file's and the stored pools. A
// configuration with problems is refused at start (a reload with problems keeps the previous
// one instead, reload.go).
func (l *loop) compileRules() error {
	l.reg.ensure()
	eff, gen := l.reg.effective()
	if err := eff.Problems(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	l.cfg.Settings, l.ruleSet, l.cfgGen = eff.Settings, eff.Rules, gen
	return nil
}

// ruleKey names one attempt a rule assigns a pool to.
type ruleKey struct {
	dag, run, task string
	try            int
}

// assignment is a rule's answer for one attempt.
type assignment struct {
	pool  string
	slots int
	rule  string
}

// assign picks the pool of a task that declares none: the first matching rule (§6), else
// {default: 1}. Assignments evaluated before the pass's transaction are taken from the cache.
func (l *loop) assign(run *liveRun, ti *liveTI, try int) (pool string, slots int, rule string) {
	if l.ruleSet == nil {
		return "default", 1, ""
	}
	key := ruleKey{run.DAGID, run.RunID, ti.TaskID, try}
	a, ok := l.ruleCache[key]
	if !ok {
		l.ruleMisses++
		a = l.evalRules(run, ti.task, try)
	}
	return a.pool, a.slots, a.rule
}

func (l *loop) evalRules(run *liveRun, t *dag.Task, try int) assignment {
	trigger := run.RunType
	if trigger == vocab.RunTest {
		trigger = vocab.RunManual
	}
	res := l.ruleSet.Assign(rules.Attrs{DAGID: run.DAGID, TaskID: t.ID, RunID: run.RunID, Owner: run.dag.Owner,
		Tags: run.dag.Tags, Trigger: string(trigger), Params: run.params, TryNumber: try, Kind: string(t.Kind),
		LogicalDate: run.LogicalDate})
	return assignment{pool: res.Pool, slots: res.Slots, rule: res.Rule}
}

// prepareRules evaluates, before the pass's transaction, the rules of the attempts the pass
// can foresee: the first tasks of the runs it will create for manual starts and a test run,
// the tasks downstream of attempts that ended, the tasks on a run's frontier and the retries
// that are due. Rules are user code of unknown cost; a pass holds SQLite's write lock, and
// every other writer waits for it. What the pass did not foresee is evaluated inside it.
func (l *loop) prepareRules(now time.Time) {
	if l.ruleSet == nil {
		return
	}
	if l.ruleCache == nil {
		l.ruleCache = map[ruleKey]assignment{}
	}
	put := func(run *liveRun, t *dag.Task, try int) {
		if t == nil || len(t.PoolRequirements) > 0 || t.Kind == dag.KindApproval {
			return
		}
		key := ruleKey{run.DAGID, run.RunID, t.ID, try}
		if _, ok := l.ruleCache[key]; !ok {
			l.ruleCache[key] = l.evalRules(run, t, try)
		}
	}
	roots := func(d *dag.DAG, runType vocab.RunType, req TriggerRequest) {
		r, err := l.runRecord(d, runType, req.LogicalDate, req.RunID, req.Conf, "", false, now)
		if err != nil {
			return
		}
		run := newLiveRun(r, d)
		for _, t := range d.Tasks {
			if len(t.DependsOn) == 0 {
				put(run, t, 1)
			}
		}
	}
	if t := l.cfg.Test; t != nil && l.testPK == 0 {
		if d := l.reg.get(t.DAGID); d != nil {
			roots(d, vocab.RunTest, TriggerRequest{Conf: t.Conf})
		}
	}
	for _, ev := range l.pending {
		switch ev := ev.(type) {
		case *evTrigger:
			if d := l.reg.get(ev.req.DAGID); d != nil {
				roots(d, vocab.RunManual, ev.req)
			}
		case *evFinished:
			le := l.entries[ev.entry]
			if le == nil || le.ti == nil || le.run.layout == nil || le.ti.idx < 0 || le.run.shared {
				continue
			}
			if t := le.ti.task; !ev.ok && t != nil && le.TryNumber <= t.Retries {
				put(le.run, t, le.TryNumber+1) // a retry with no delay is queued in this pass
			}
			for _, c := range le.run.layout.Down[le.ti.idx] {
				if ti := le.run.byIdx[c]; ti != nil && ti.State == vocab.TaskNone {
					put(le.run, ti.task, ti.TryNumber+1)
				}
			}
		}
	}
	for _, run := range l.runs {
		if run.layout == nil || run.shared {
			continue
		}
		for _, pos := range run.frontier {
			if ti := run.byIdx[run.layout.Order[pos]]; ti != nil && ti.State == vocab.TaskNone {
				put(run, ti.task, ti.TryNumber+1)
			}
		}
		for ti := range run.timers {
			if ti.State == vocab.TaskUpForRetry && !now.Before(ti.NextAt) {
				put(run, ti.task, ti.TryNumber+1)
			}
		}
	}
}
