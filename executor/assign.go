package executor

import (
	"fmt"

	"github.com/poolflow/poolflow/rules"
)

// compileRules compiles the pool rules of poolflow.yaml once at start (§6). Pools are checked
// against the configured ones and those kept in the store.
func (l *loop) compileRules() error {
	specs := l.cfg.Settings.Rules
	if len(specs) == 0 {
		return nil
	}
	known := map[string]bool{}
	for _, p := range l.cfg.Settings.Pools {
		known[p.Name] = true
	}
	if stored, err := l.storedPools(); err == nil {
		for _, p := range stored {
			known[p.Name] = true
		}
	}
	set, err := rules.CompileFile(l.cfg.Settings.File, specs, func(n string) bool { return known[n] }, rules.DefaultPool)
	if err != nil {
		return fmt.Errorf("pool rules: %w", err)
	}
	set.SetLogger(l.log)
	l.rules = func(run *liveRun, ti *liveTI, try int) (string, int, string) {
		trigger := run.RunType
		if trigger == "test" {
			trigger = "manual"
		}
		res := set.Assign(rules.Attrs{DAGID: run.DAGID, TaskID: ti.TaskID, RunID: run.RunID, Owner: run.dag.Owner,
			Tags: run.dag.Tags, Trigger: trigger, Params: run.params, TryNumber: try, Kind: string(ti.task.Kind),
			LogicalDate: run.LogicalDate})
		return res.Pool, res.Slots, res.Rule
	}
	return nil
}
