package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRulesTestSkipsAnotherTeamsPool: `rules test` says that a rule assigning a pool the DAG's
// team may not use is skipped, and why (§15), for a team given as an attribute or read from
// the DAG that dag_id names.
func TestRulesTestSkipsAnotherTeamsPool(t *testing.T) {
	t.Parallel()
	cfg := `max_running: 8
pools:
  wh:
    slots: 2
    teams: [finance]
  db: 1
rules:
  - {name: heavy, priority: 10, when: '"heavy" in tags', pool: wh}
`
	p := newProject(t, cfg, map[string]string{
		"etl_sales.yaml": "team: sales\ntags: [heavy]\ntasks:\n  - {id: a, bash: 'true'}\n",
	})
	const skipped = "rule heavy (priority 10) matched but is skipped: pool wh is for team finance, not team sales"
	for _, args := range [][]string{
		{"rules", "test", "--attr", "team=sales", "--attr", "tags=heavy"},
		{"rules", "test", "--attr", "dag_id=etl_sales", "--attr", "tags=heavy"},
	} {
		out, errOut, code := p.run(args...)
		if code != 0 || !strings.Contains(out, "no rule matched for team sales: default pool default, 1 slot") ||
			!strings.Contains(out, skipped) {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	out, errOut, code := p.run("rules", "test", "--attr", "dag_id=etl_sales", "--attr", "team=finance", "--attr", "tags=heavy", "-o", "json")
	var res map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res["rule"] != "heavy" || res["pool"] != "wh" {
		t.Errorf("finance: exit %d %s%s", code, out, errOut)
	}
}
