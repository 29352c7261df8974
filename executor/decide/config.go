package decide

import (
	"sort"

	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// applyConfig takes a new configuration generation (the registry validated a changed
// poolflow.yaml against the stored pools): the file pools are synced into the store (on_resize:
// drain keeps the old capacity while the queue drains, §4.7), the new rules assign the pools of
// the entries queued from now on (a waiting entry keeps the pool stored with it), and the new
// max_running becomes the _global limit of this daemon's waiting entries. Running attempts are
// never touched. Memory reads the synced pools at the next pass, which follows at once.
func (ps *pass) applyConfig() {
	eff := ps.in.Effective
	if eff == nil || ps.in.EffectiveGen == ps.CfgGen {
		return
	}
	prev := ps.Settings
	ps.Settings = eff.Settings
	ps.p.add(SyncPools{Settings: eff.Settings, Test: !ps.serve()})
	ps.Rules = eff.Rules
	clear(ps.ruleCache) // evaluated before this pass under the old rules
	if prev.MaxRunning != eff.Settings.MaxRunning {
		ps.setGlobalLimit(eff.Settings.MaxRunning)
	}
	ps.CfgGen = ps.in.EffectiveGen
	// The synced pools are read with everything else by the next pass, at once.
	ps.st.Invalidate()
	ps.p.Wake = true
}

// setGlobalLimit gives this daemon's waiting entries the new max_running as their _global
// limit (none when 0); new entries get it from requirements.
func (ps *pass) setGlobalLimit(maxRunning int) {
	ps.st.MaxRunning = maxRunning
	ps.st.InvalidateQueue() // _global's capacity changed
	var ids []int64
	for id, le := range ps.st.Entries {
		if le.State != vocab.EntryWaiting {
			continue
		}
		ids = append(ids, id)
		needs := le.Needs[:0:0]
		for _, n := range le.Needs {
			if n.Pool != pools.GlobalPool {
				needs = append(needs, n)
			}
		}
		if maxRunning > 0 {
			needs = append(needs, store.Requirement{Pool: pools.GlobalPool, Slots: 1, Implicit: true, Capacity: maxRunning})
			sort.Slice(needs, func(i, j int) bool { return needs[i].Pool < needs[j].Pool })
		}
		le.Needs = needs
		le.Why = nil
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	ps.p.add(SetImplicitLimit{ids, pools.GlobalPool, maxRunning})
}
