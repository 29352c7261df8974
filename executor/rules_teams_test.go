package executor

import (
	"strings"
	"testing"
)

// TestRuleSkipsAnotherTeamsPool (§15): a rule that would assign a pool the DAG's team may not
// use is skipped; the next rule (or the default pool) takes the attempt, and its queue entry
// records which rule was skipped and why, beside the rule that assigned its pool. A DAG of the
// pool's team still gets it. Pass by pass (Harness).
func TestRuleSkipsAnotherTeamsPool(t *testing.T) {
	t.Parallel()
	b := setup(t, `max_running: 8
pools:
  warehouse:
    slots: 1
    teams: [finance]
  shared: 2
rules:
  - {name: heavy, priority: 10, when: '"heavy" in tags', pool: warehouse}
  - {name: sales-big, priority: 20, when: 'team == "sales"', pool: shared}
`, map[string]string{
		"fin.yaml":   "team: finance\ntags: [heavy]\ntasks:\n  - {id: a, bash: 'true'}\n",
		"sales.yaml": "team: sales\ntags: [heavy]\ntasks:\n  - {id: a, bash: 'true'}\n",
		"none.yaml":  "tags: [heavy]\ntasks:\n  - {id: a, bash: 'true'}\n",
	})
	h, _ := b.harness(t, nil)
	for _, tc := range []struct {
		dag, rule, pool, skipped string
	}{
		{"fin", "heavy", "warehouse", ""},
		{"sales", "sales-big", "shared", "rule heavy skipped: pool warehouse is for team finance, not team sales"},
		{"none", "", "default", "rule heavy skipped: pool warehouse is for team finance; this DAG names no team"},
	} {
		res, started := h.trigger(t, TriggerRequest{DAGID: tc.dag, RunID: "r"})
		e, err := b.latest(res.Run.PK, "a")
		if err != nil || e.Rule != tc.rule || !hasPool(e.Needs, tc.pool) || e.RuleSkipped != tc.skipped {
			t.Errorf("%s: entry rule %q skipped %q needs %+v (%v); want rule %q pool %s skipped %q",
				tc.dag, e.Rule, e.RuleSkipped, e.Needs, err, tc.rule, tc.pool, tc.skipped)
		}
		h.drain(t, started...)
	}
}

// TestReloadRefusesTeamLockout (§15): a poolflow.yaml that gives a pool teams that would turn
// away a loaded DAG requiring it is not reloaded; the status names the DAG and the DAG stays
// loaded. Letting the DAG's team in too is reloaded.
func TestReloadRefusesTeamLockout(t *testing.T) {
	t.Parallel()
	rb := setupReload(t, "pools:\n  wh: 2\n", map[string]string{
		"sales_load.yaml": "team: sales\ntasks:\n  - {id: t, bash: 'true', pool_requirements: {wh: 1}}\n",
	})
	h, _ := rb.harness(t, nil)
	h.settle(t)
	rb.writeConfig(t, "pools:\n  wh: {slots: 2, teams: [finance]}\n")
	h.Reload()
	h.settle(t)
	st := h.ConfigStatus()
	if !strings.Contains(st.Error, "previous configuration stays in force") ||
		!strings.Contains(st.Error, "pool wh: teams [finance] would turn away sales_load (team sales)") {
		t.Fatalf("status %+v", st)
	}
	if wh, _ := h.Settings().Pool("wh"); len(wh.Teams) != 0 {
		t.Fatalf("wh's teams in force: %v", wh.Teams)
	}
	if dags, _ := h.DAGs(); len(dags) != 1 {
		t.Fatalf("DAGs after a refused reload: %d", len(dags))
	}
	rb.writeConfig(t, "pools:\n  wh: {slots: 2, teams: [finance, sales]}\n")
	rb.reload(t, h)
	h.settle(t)
	if st := h.ConfigStatus(); st.Error != "" {
		t.Fatalf("status after the fix: %+v", st)
	}
	if wh, _ := h.Settings().Pool("wh"); len(wh.Teams) != 2 {
		t.Fatalf("wh's teams in force: %v", wh.Teams)
	}
}
