package dag

import (
	"strings"
	"testing"
)

// TestTeamPools: a task may require only pools open to its DAG's team (§15, §2.3); the error
// names the file position, the pool and the team, in YAML and in Go.
func TestTeamPools(t *testing.T) {
	t.Parallel()
	opts := LoadOptions{
		Pools: func(name string) (int, bool) { return 4, name == "warehouse" || name == "shared" || name == "ledger" },
		PoolTeams: func(name string) []string {
			switch name {
			case "warehouse":
				return []string{"analytics"}
			case "ledger":
				return []string{"finance", "audit"}
			}
			return nil
		},
	}
	tests := []struct {
		name, src string
		want      string // "" = valid
	}{
		{"own team's pool", "team: analytics\ntasks:\n  - {id: a, bash: x, pool_requirements: {warehouse: 1}}\n", ""},
		{"a pool for every team", "team: analytics\ntasks:\n  - {id: a, bash: x, pool_requirements: {shared: 1}}\n", ""},
		{"one of the pool's teams", "team: audit\ntasks:\n  - {id: a, bash: x, pool_requirements: {ledger: 2}}\n", ""},
		{"another team's pool", "team: finance\ntasks:\n  - id: load\n    bash: x\n    pool_requirements: {warehouse: 1}\n",
			"d.yaml:5:25: dag d, task load: pool_requirements.warehouse: pool warehouse is for team analytics, not team finance"},
		{"no team", "tasks:\n  - {id: a, bash: x, pool_requirements: {ledger: 1}}\n",
			"pool ledger is for team finance, audit; this DAG names no team"},
		{"pool: shorthand", "team: finance\ntasks:\n  - {id: a, bash: x, pool: warehouse}\n", "pool warehouse is for team analytics, not team finance"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, errs := Parse("d.yaml", []byte(tt.src), opts)
			switch {
			case tt.want == "" && len(errs) > 0:
				t.Fatalf("errors: %v", errs)
			case tt.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.want)):
				t.Fatalf("errors %v, want one with %q", errs, tt.want)
			case tt.want == "" && d.Team == "":
				t.Fatalf("team not read: %+v", d)
			}
		})
	}
	// Go authoring: Team is a DAG option.
	g := New("g", Team("finance"))
	g.Bash("a", "true", Pools(map[string]int{"warehouse": 1}))
	errs := Validate(g, opts)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "pool warehouse is for team analytics, not team finance") {
		t.Fatalf("Go DAG: %v", errs)
	}
}
