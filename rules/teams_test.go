package rules

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// teamSet routes heavy ETL to warehouse, which only finance may use, then anything tagged
// "big" to shared, which every team may use.
func teamSet(t *testing.T) *Set {
	t.Helper()
	set := mustCompile(t,
		Spec{Name: "heavy-etl", Priority: 10, When: `"heavy" in tags`, Pool: "warehouse", Slots: 2},
		Spec{Name: "big", Priority: 20, When: `"big" in tags`, Pool: "shared"},
	)
	open := map[string][]string{"warehouse": {"finance"}}
	set.CheckTeams(func(pool, team string) string {
		teams := open[pool]
		if len(teams) == 0 || slices.Contains(teams, team) {
			return ""
		}
		return fmt.Sprintf("pool %s is for team %s, not team %s", pool, strings.Join(teams, ", "), teamWord(team))
	})
	return set
}

// A rule that assigns a pool the attempt's team may not use is skipped with the reason (§15):
// the next matching rule, or the default pool, takes the attempt.
func TestAssignSkipsAnotherTeamsPool(t *testing.T) {
	t.Parallel()
	set := teamSet(t)
	tests := []struct {
		name        string
		attrs       Attrs
		rule, pool  string
		slots       int
		skipped     string
		why         string
		wantTextHas string
	}{
		{name: "own team's pool", attrs: Attrs{Team: "finance", Tags: []string{"heavy"}},
			rule: "heavy-etl", pool: "warehouse", slots: 2, why: "rule heavy-etl (priority 10) matched"},
		{name: "another team falls to the default pool", attrs: Attrs{Team: "sales", Tags: []string{"heavy"}},
			pool: "default", slots: 1, skipped: "rule heavy-etl skipped: pool warehouse is for team finance, not team sales",
			why:         "no rule matched for team sales: default pool",
			wantTextHas: "rule heavy-etl (priority 10) matched but is skipped: pool warehouse is for team finance, not team sales"},
		{name: "no team falls through to the next rule", attrs: Attrs{Tags: []string{"heavy", "big"}},
			rule: "big", pool: "shared", slots: 1, skipped: "rule heavy-etl skipped: pool warehouse is for team finance, not team (none)",
			why: "rule big (priority 20) matched", wantTextHas: "matched but is skipped"},
		{name: "a rule that does not match is not skipped", attrs: Attrs{Team: "sales", Tags: []string{"big"}},
			rule: "big", pool: "shared", slots: 1, why: "rule big (priority 20) matched"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := set.Assign(tt.attrs)
			if res.Rule != tt.rule || res.Pool != tt.pool || res.Slots != tt.slots {
				t.Errorf("got rule %q pool %s slots %d, want rule %q pool %s slots %d", res.Rule, res.Pool, res.Slots, tt.rule, tt.pool, tt.slots)
			}
			if got := res.Skipped(); got != tt.skipped {
				t.Errorf("Skipped() = %q, want %q", got, tt.skipped)
			}
			if res.Why != tt.why {
				t.Errorf("Why = %q, want %q", res.Why, tt.why)
			}
			if !strings.Contains(res.Text(), tt.wantTextHas) {
				t.Errorf("Text() = %q, want it to contain %q", res.Text(), tt.wantTextHas)
			}
		})
	}
}

func TestSkippedRuleJSONAndTeamAttr(t *testing.T) {
	t.Parallel()
	a, err := ParseAttrs([]string{"team=sales", "tags=heavy"}, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := teamSet(t).Assign(a).JSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"rule":null,"pool":"default","slots":1,"why":"no rule matched for team sales: default pool","rules":[` +
		`{"name":"heavy-etl","priority":10,"matched":true,"error":null,"skipped":"pool warehouse is for team finance, not team sales"},` +
		`{"name":"big","priority":20,"matched":false,"error":null,"skipped":null}]}`
	if string(got) != want {
		t.Errorf("JSON:\n got: %s\nwant: %s", got, want)
	}
	// A condition may read the team too.
	set := mustCompile(t, Spec{Name: "fin", Priority: 1, When: `team == "finance"`, Pool: "p"})
	if set.Assign(Attrs{Team: "finance"}).Rule != "fin" || set.Assign(Attrs{Team: "sales"}).Rule != "" {
		t.Error("team is not visible to conditions")
	}
}

// The first skip of a rule is logged, later ones are not.
func TestSkipWarnedOncePerRule(t *testing.T) {
	t.Parallel()
	set := teamSet(t)
	var buf bytes.Buffer
	set.SetLogger(slog.New(slog.NewTextHandler(&buf, nil)))
	for range 3 {
		set.Assign(Attrs{Team: "sales", Tags: []string{"heavy"}})
	}
	if n := strings.Count(buf.String(), "skipped"); n != 1 {
		t.Errorf("logged %d skips, want 1:\n%s", n, buf.String())
	}
}
