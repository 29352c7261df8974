package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/storetest"
)

func mustParse(t *testing.T, src string) *Config {
	t.Helper()
	cfg, err := ParseChecked("poolflow.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func storedPool(name string, slots int) store.Pool {
	return store.Pool{Name: name, Slots: slots, TargetSlots: store.NoTarget, Ordering: "backfill", OnResize: "immediate", Source: "store"}
}

// TestEffective: what validation sees of file pools, stored pools and rules.
func TestEffective(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     string
		stored  []store.Pool
		pool    string
		want    int // capacity; -99 = no such pool
		problem string
	}{
		{"stored pool exists", "pools:\n  db: 1\n", []store.Pool{storedPool("api", 3)}, "api", 3, ""},
		{"file pool", "pools:\n  db: 1\n", nil, "db", 1, ""},
		{"a daemon's synced file rows are not pools of this file", "pools:\n  db: 1\n",
			[]store.Pool{{Name: "theirs", Slots: 5, TargetSlots: store.NoTarget, Source: "file"}}, "theirs", -99, ""},
		{"draining stored pool: its new capacity", "", []store.Pool{{Name: "api", Slots: 1, TargetSlots: 4, Source: "store"}}, "api", 4, ""},
		{"remainder counts stored pools", "max_running: 10\npools:\n  db: 2\n  default: {slots: remainder}\n",
			[]store.Pool{storedPool("api", 3)}, "default", 5, ""},
		{"remainder below 1", "max_running: 4\npools:\n  db: 2\n  default: {slots: remainder}\n",
			[]store.Pool{storedPool("api", 3)}, "default", -1, "pools.default.slots: remainder is -1"},
		{"file and stored name clash", "pools:\n  db: 1\n", []store.Pool{storedPool("db", 3)}, "db", 1, "pool db is defined in poolflow.yaml and also stored"},
		{"rule naming a stored pool", "rules:\n  - {name: r, priority: 1, when: 'true', pool: api}\n",
			[]store.Pool{storedPool("api", 1)}, "api", 1, ""},
		{"rule naming no pool", "rules:\n  - {name: r, priority: 1, when: 'true', pool: api}\n", nil, "api", -99,
			`poolflow.yaml:2:5: rule r: pool: unknown pool "api"`},
		{"rule slots over capacity", "pools:\n  db: 1\nrules:\n  - {name: r, priority: 1, when: 'true', pool: db, slots: 2}\n",
			nil, "db", 1, "rule r: slots: 2 slots exceed capacity 1 of pool db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			eff := NewEffective(mustParse(t, tt.cfg), tt.stored)
			c, ok := eff.Pool(tt.pool)
			if !ok {
				c = -99
			}
			if c != tt.want {
				t.Errorf("pool %s: %d, want %d", tt.pool, c, tt.want)
			}
			err := eff.Problems()
			switch {
			case tt.problem == "" && err != nil:
				t.Errorf("problems: %v", err)
			case tt.problem != "" && (err == nil || !strings.Contains(err.Error(), tt.problem)):
				t.Errorf("problems %v, want %q", err, tt.problem)
			}
		})
	}
}

// TestValidateFolderAndFilesAgree: the folder and its files get the same answer from the one
// validation, a stored pool included.
func TestValidateFolderAndFilesAgree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"uses_api.yaml": "tasks:\n  - {id: a, bash: 'true', pool_requirements: {api_pool: 2}}\n",
		"too_big.yaml":  "tasks:\n  - {id: a, bash: 'true', pool_requirements: {api_pool: 5}}\n",
		"dup.yaml":      "dag_id: uses_api\ntasks:\n  - {id: a, bash: 'true'}\n",
	}
	var paths []string
	for _, name := range []string{"dup.yaml", "too_big.yaml", "uses_api.yaml"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(files[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	eff := NewEffective(mustParse(t, ""), []store.Pool{storedPool("api_pool", 3)})
	folder := Validate(Sources{Dir: dir}, eff)
	listed := Validate(Sources{Files: paths}, eff)
	for _, v := range []Validation{folder, listed} {
		if len(v.DAGs) != 1 || v.DAGs[0].ID != "uses_api" || len(v.Errors) != 2 {
			t.Fatalf("validation: %d DAGs, errors %v", len(v.DAGs), v.Errors)
		}
	}
	for i := range folder.Errors {
		if folder.Errors[i].Error() != listed.Errors[i].Error() {
			t.Errorf("folder %q, files %q", folder.Errors[i], listed.Errors[i])
		}
	}
	if _, err := folder.ValidDAG("too_big"); !errors.Is(err, ErrInvalidDAG) || !strings.Contains(err.Error(), "exceed capacity 3") {
		t.Errorf("ValidDAG(too_big) = %v", err)
	}
}

// TestPoolOpsWriteOnlyTheirPool: pools set/delete change one stored row; the file pools a daemon
// synced stay as they are, even from a command that runs with another configuration.
func TestPoolOpsWriteOnlyTheirPool(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, filepath.Join(t.TempDir(), "poolflow.db"), store.Options{})
	ctx := context.Background()
	daemonCfg := mustParse(t, "max_running: 10\npools:\n  db: 2\n  default: {slots: remainder}\n")
	now := time.Now()
	if err := st.WithTx(ctx, func(tx store.Tx) error { return SyncPools(tx, daemonCfg, now) }); err != nil {
		t.Fatal(err)
	}
	before, _ := st.ListPools(ctx)
	cliCfg := Default() // a command run without --config
	write := func(fn func(tx store.Tx) error) error { return st.WithTx(ctx, fn) }
	if err := write(func(tx store.Tx) error {
		return SetPool(tx, cliCfg, nil, pools.Spec{Name: "api", Slots: 3}, false, now)
	}); err != nil {
		t.Fatal(err)
	}
	after, _ := st.ListPools(ctx)
	if len(after) != len(before)+1 {
		t.Fatalf("pools %v -> %v", before, after)
	}
	for i, p := range before {
		if !reflect.DeepEqual(after[i+1], p) && !reflect.DeepEqual(after[i], p) {
			t.Errorf("file pool %s changed", p.Name)
		}
	}
	err := write(func(tx store.Tx) error {
		return SetPool(tx, cliCfg, nil, pools.Spec{Name: "db", Slots: 9}, false, now)
	})
	if !errors.Is(err, ErrFilePool) {
		t.Errorf("setting a daemon's file pool from another config: %v", err)
	}
	err = write(func(tx store.Tx) error { return DeletePool(tx, cliCfg, nil, "default", true, now) })
	if !errors.Is(err, ErrFilePool) || !strings.Contains(err.Error(), "it is the default pool") ||
		!strings.Contains(err.Error(), "does not define it") {
		t.Errorf("deleting the default pool: %v", err)
	}
	withDefault := mustParse(t, "pools:\n  default: 7\n")
	err = write(func(tx store.Tx) error { return DeletePool(tx, withDefault, nil, "default", true, now) })
	if err == nil || !strings.Contains(err.Error(), "poolflow.yaml:2 under pools.default") {
		t.Errorf("deleting a configured default pool: %v", err)
	}
}

// TestRulePoolsAreInUse: a stored pool a rule names cannot be deleted, or shrunk below the
// rule's slots, without force.
func TestRulePoolsAreInUse(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, filepath.Join(t.TempDir(), "poolflow.db"), store.Options{})
	ctx := context.Background()
	now := time.Now()
	cfg := mustParse(t, "rules:\n  - {name: to-api, priority: 1, when: 'true', pool: api, slots: 2}\n")
	write := func(fn func(tx store.Tx) error) error { return st.WithTx(ctx, fn) }
	if err := write(func(tx store.Tx) error { return SetPool(tx, cfg, nil, pools.Spec{Name: "api", Slots: 3}, false, now) }); err != nil {
		t.Fatal(err)
	}
	err := write(func(tx store.Tx) error { return DeletePool(tx, cfg, nil, "api", false, now) })
	if !errors.Is(err, ErrPoolInUse) || !strings.Contains(err.Error(), "rule to-api") {
		t.Fatalf("delete: %v", err)
	}
	err = write(func(tx store.Tx) error { return SetPool(tx, cfg, nil, pools.Spec{Name: "api", Slots: 1}, false, now) })
	if !errors.Is(err, ErrPoolInUse) || !strings.Contains(err.Error(), "rule to-api") {
		t.Fatalf("shrink: %v", err)
	}
	if err := write(func(tx store.Tx) error { return DeletePool(tx, cfg, nil, "api", true, now) }); err != nil {
		t.Fatalf("forced delete: %v", err)
	}
}
