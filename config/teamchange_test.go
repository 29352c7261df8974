package config

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/storetest"
)

func teamDAG(id, team string, reqs map[string]int) *dag.DAG {
	return &dag.DAG{ID: id, Team: team, Tasks: []*dag.Task{{ID: "t", PoolRequirements: reqs}}}
}

// TestTeamChangeRefused (§15, §4.1): changing a stored pool's teams so that a loaded DAG
// requiring it would be turned away is refused (ErrPoolInUse: a 409 over the API) naming the
// DAGs, unless forced; a change that turns nobody away, or one with no DAG requiring the pool,
// goes through.
func TestTeamChangeRefused(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, filepath.Join(t.TempDir(), "poolflow.db"), store.Options{})
	ctx := context.Background()
	now := time.Now()
	cfg := Default()
	write := func(fn func(tx store.Tx) error) error { return st.WithTx(ctx, fn) }
	dags := []*dag.DAG{
		teamDAG("fin_load", "finance", map[string]int{"wh": 1}),
		teamDAG("sales_load", "sales", map[string]int{"wh": 2}),
		teamDAG("report", "", map[string]int{"wh": 1}),
		teamDAG("other", "ops", map[string]int{"db": 1}),
	}
	set := func(teams []string, force bool) error {
		return write(func(tx store.Tx) error {
			return SetPool(tx, cfg, dags, pools.Spec{Name: "wh", Slots: 4, Teams: teams}, force, now)
		})
	}
	if err := set(nil, false); err != nil {
		t.Fatal(err)
	}
	err := set([]string{"finance"}, false)
	if !errors.Is(err, ErrPoolInUse) ||
		!strings.Contains(err.Error(), "pool wh: teams [finance] would turn away report (no team), sales_load (team sales), which require it") ||
		strings.Contains(err.Error(), "fin_load") || strings.Contains(err.Error(), "other") {
		t.Fatalf("restricting wh to finance: %v", err)
	}
	if p, _ := st.ListPools(ctx); len(p) != 1 || len(p[0].Teams) != 0 {
		t.Fatalf("a refused change was written: %+v", p)
	}
	// Let in every team that requires it: nothing is turned away.
	if err := set([]string{"finance", "sales"}, false); !errors.Is(err, ErrPoolInUse) || !strings.Contains(err.Error(), "report (no team)") {
		t.Fatalf("finance, sales: %v", err)
	}
	dags = dags[:2]
	if err := set([]string{"finance", "sales"}, false); err != nil {
		t.Fatalf("finance, sales without report: %v", err)
	}
	// Dropping sales now turns sales_load away; --force does it anyway.
	if err := set([]string{"finance"}, false); !errors.Is(err, ErrPoolInUse) || !strings.Contains(err.Error(), "sales_load (team sales)") {
		t.Fatalf("dropping sales: %v", err)
	}
	if err := set([]string{"finance"}, true); err != nil {
		t.Fatalf("forced: %v", err)
	}
}

// TeamLockouts: a reload's pools turn away loaded DAGs only when their teams change so.
func TestTeamLockouts(t *testing.T) {
	t.Parallel()
	before := NewEffective(mustParse(t, "pools:\n  wh: 2\n  db: 1\n"), nil)
	dags := []*dag.DAG{teamDAG("sales_load", "sales", map[string]int{"wh": 1}), teamDAG("fin", "finance", map[string]int{"db": 1})}
	for _, tc := range []struct{ cfg, want string }{
		{"pools:\n  wh: 2\n  db: 1\n", ""},
		{"pools:\n  wh: {slots: 2, teams: [sales, finance]}\n  db: {slots: 1, teams: [finance]}\n", ""},
		{"pools:\n  wh: {slots: 2, teams: [finance]}\n  db: 1\n", "pool wh: teams [finance] would turn away sales_load (team sales)"},
		{"pools:\n  wh: {slots: 2, teams: [finance]}\n  db: {slots: 1, teams: [ops]}\n", "fin (team finance)"},
	} {
		err := TeamLockouts(before, NewEffective(mustParse(t, tc.cfg), nil), dags)
		if tc.want == "" && err != nil || tc.want != "" && (!errors.Is(err, ErrPoolInUse) || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
