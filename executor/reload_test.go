package executor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
)

// reloadBundle is a bundle whose poolflow.yaml is a real file the daemon watches.
type reloadBundle struct {
	*bundle
	cfgPath string
}

func setupReload(t *testing.T, cfgYAML string, dags map[string]string) *reloadBundle {
	t.Helper()
	b := setup(t, "", dags)
	rb := &reloadBundle{bundle: b, cfgPath: filepath.Join(b.dir, "poolflow.yaml")}
	rb.writeConfig(t, cfgYAML)
	cfg, err := config.LoadChecked(rb.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	b.cfg = cfg
	return rb
}

func (rb *reloadBundle) writeConfig(t *testing.T, body string) {
	t.Helper()
	tmp := rb.cfgPath + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, rb.cfgPath); err != nil { // as editors save
		t.Fatal(err)
	}
}

func (rb *reloadBundle) pool(t *testing.T, name string) store.Pool {
	t.Helper()
	ps, err := rb.st.ListPools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Name == name {
			return p
		}
	}
	return store.Pool{Name: name, Slots: -99}
}

func (rb *reloadBundle) start(t *testing.T) *Daemon {
	t.Helper()
	d := rb.daemon(t, func(c *Config) { c.PollEvery = 10 * time.Millisecond })
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop() })
	return d
}

// reload makes the registry read the changed poolflow.yaml, as its watcher does on the file's
// notification, and fails the test unless the file changed what is in force.
func (rb *reloadBundle) reload(t *testing.T, h *Harness) {
	t.Helper()
	if !h.Reload() {
		t.Fatal("the new poolflow.yaml changed nothing")
	}
}

// holdDAG is a task that holds one slot of its pool.
func holdDAG(pool string) string {
	return fmt.Sprintf("tasks:\n  - id: t\n    pool_requirements: {%s: 1}\n    bash: 'true'\n", pool)
}

// The tests below step the daemon (Harness) and make its registry read the changed file as its
// watcher would (Reload); e2e's TestConfigReloadsLive has a real daemon's watcher see it.

// TestReloadPoolsDrainAndKeepAttempts: growing a file pool with on_resize: drain while entries
// wait keeps the old capacity until the queue drained, and the running attempt is never
// restarted; the change needs no restart of the daemon.
func TestReloadPoolsDrainAndKeepAttempts(t *testing.T) {
	t.Parallel()
	rb := setupReload(t, "max_running: 8\npools:\n  db: {slots: 1, on_resize: drain}\n", map[string]string{
		"hold.yaml": holdDAG("db"),
		"wait.yaml": "tasks:\n  - {id: t, bash: 'true', pool_requirements: {db: 1}}\n",
	})
	h, _ := rb.harness(t, nil)
	_, started := h.trigger(t, TriggerRequest{DAGID: "hold", RunID: "h"})
	hold := specOf(t, started, "hold", "t")
	res, started := h.trigger(t, TriggerRequest{DAGID: "wait", RunID: "w"})
	if !res.Queued || res.Pool != "db" || len(started) != 0 {
		t.Fatalf("wait: %+v (started %v)", res, tasks(started))
	}
	rb.writeConfig(t, "max_running: 8\npools:\n  db: {slots: 3, on_resize: drain}\n")
	rb.reload(t, h)
	plans, err := h.Settle()
	if err != nil {
		t.Fatal(err)
	}
	if p := rb.pool(t, "db"); p.Slots != 1 || p.TargetSlots != 3 {
		t.Fatalf("db after the reload: %+v, want draining from 1 to 3", p)
	}
	if got := h.Settings().Pools[0].Slots; got != 3 {
		t.Fatalf("settings in force: db %d slots", got)
	}
	// The running attempt was not thrown off: still its first admission, still running.
	for _, p := range plans {
		if killed(plans, hold.Entry) || len(p.Starts) != 0 {
			t.Fatalf("the reload stopped hold or started %v", tasks(p.Starts))
		}
	}
	run, _ := rb.st.GetRun(context.Background(), "hold", "h")
	if ti := rb.tis(t, run.PK)["t"]; ti.State != "running" || ti.TryNumber != hold.Try {
		t.Fatalf("hold after reload: %+v", ti)
	}
	wait := specOf(t, h.succeed(t, hold), "wait", "t")
	if started := h.succeed(t, wait); len(started) != 0 {
		t.Fatalf("started %v after the queue drained", tasks(started))
	}
	if r := rb.mustRun(t, "wait", "w"); r.State != "success" {
		t.Fatalf("run w %s", r.State)
	}
	if p := rb.pool(t, "db"); p.Slots != 3 || p.TargetSlots != store.NoTarget {
		t.Fatalf("db once drained: %+v, want 3 slots", p)
	}
}

// TestReloadInvalidKeepsOld: a poolflow.yaml that does not parse, or whose rule names a pool
// that does not exist, is reported and the previous configuration stays in force; fixing the
// file brings it in.
func TestReloadInvalidKeepsOld(t *testing.T) {
	t.Parallel()
	rb := setupReload(t, "pools:\n  db: 2\n", map[string]string{"a.yaml": "tasks:\n  - {id: t, bash: 'true', pool_requirements: {db: 2}}\n"})
	h, _ := rb.harness(t, nil)
	h.settle(t)
	for _, bad := range []string{
		"pools:\n  db: lots\n  colour: {slots: 1, hue: red}\n",
		"pools:\n  db: 2\nrules:\n  - {name: r, priority: 1, when: 'true', pool: nowhere}\n",
	} {
		rb.writeConfig(t, bad)
		h.Reload()
		h.settle(t)
		st := h.ConfigStatus()
		if st.Error == "" || !strings.Contains(st.Error, "previous configuration stays in force") {
			t.Fatalf("status %+v", st)
		}
		if strings.Contains(bad, "lots") && !(strings.Contains(st.Error, "pools.db") && strings.Contains(st.Error, "pools.colour.hue")) {
			t.Fatalf("every problem at once, got %q", st.Error)
		}
		if s, _ := h.Settings().Pool("db"); s.Slots != 2 {
			t.Fatalf("db in force: %+v", s)
		}
		if dags, _ := h.DAGs(); len(dags) != 1 {
			t.Fatalf("DAGs after a refused reload: %d", len(dags))
		}
		rb.writeConfig(t, "pools:\n  db: 2\n  extra: 1\n")
		rb.reload(t, h)
		h.settle(t)
		if _, ok := h.Settings().Pool("extra"); !ok {
			t.Fatal("the fixed file is not in force")
		}
		if st := h.ConfigStatus(); st.Error != "" {
			t.Fatalf("status after the fix: %+v", st)
		}
		rb.writeConfig(t, "pools:\n  db: 2\n")
		rb.reload(t, h)
		h.settle(t)
		if _, ok := h.Settings().Pool("extra"); ok {
			t.Fatal("the first file is not back in force")
		}
	}
	if err := h.ReloadConfig(context.Background()); err != nil {
		t.Fatalf("SIGHUP reload of a valid file: %v", err)
	}
}

// TestReloadEmptyFileKeepsOld: a poolflow.yaml emptied after a non-empty one (a writer that
// truncated and stalled) is not put in force, and says how to mean "no pools"; the written
// file, and an explicit empty configuration, are.
func TestReloadEmptyFileKeepsOld(t *testing.T) {
	t.Parallel()
	rb := setupReload(t, "pools:\n  db: 2\n", map[string]string{"a.yaml": "tasks:\n  - {id: t, bash: 'true', pool_requirements: {db: 1}}\n"})
	h, _ := rb.harness(t, nil)
	h.settle(t)
	rb.writeConfig(t, "")
	h.Reload()
	h.settle(t)
	if st := h.ConfigStatus(); !strings.Contains(st.Error, "empty") || !strings.Contains(st.Error, "# no pools") {
		t.Fatalf("status after emptying: %+v", st)
	}
	if s, ok := h.Settings().Pool("db"); !ok || s.Slots != 2 {
		t.Fatalf("db in force after emptying: %+v %v", s, ok)
	}
	rb.writeConfig(t, "pools:\n  db: 3\n")
	rb.reload(t, h)
	h.settle(t)
	if s, _ := h.Settings().Pool("db"); s.Slots != 3 || h.ConfigStatus().Error != "" {
		t.Fatalf("the written file: db %+v, status %+v", s, h.ConfigStatus())
	}
	rb.writeConfig(t, "# no pools\n")
	rb.reload(t, h)
	h.settle(t)
	if _, ok := h.Settings().Pool("db"); ok {
		t.Fatal("a file that says no pools left db in force")
	}
}

// TestReloadRulesSticky: a waiting entry keeps the pool a rule gave it when the rules change;
// a new attempt gets the new rule's pool.
func TestReloadRulesSticky(t *testing.T) {
	t.Parallel()
	rule := func(pool string) string {
		return "pools:\n  a: 1\n  b: 1\nrules:\n  - {name: r, priority: 1, when: 'dag_id == \"free\"', pool: " + pool + "}\n"
	}
	rb := setupReload(t, rule("a"), map[string]string{
		"hold.yaml": holdDAG("a"),
		"free.yaml": "tasks:\n  - {id: t, bash: 'true'}\n",
	})
	h, _ := rb.harness(t, nil)
	ctx := context.Background()
	_, started := h.trigger(t, TriggerRequest{DAGID: "hold", RunID: "h"})
	hold := specOf(t, started, "hold", "t")
	res, _ := h.trigger(t, TriggerRequest{DAGID: "free", RunID: "f1"})
	if !res.Queued || res.Pool != "a" {
		t.Fatalf("f1: %+v", res)
	}
	rb.writeConfig(t, rule("b"))
	rb.reload(t, h)
	if got := h.Settings().Rules[0].Pool; got != "b" {
		t.Fatalf("the rule in force assigns %s, want b", got)
	}
	res, started = h.trigger(t, TriggerRequest{DAGID: "free", RunID: "f2"})
	if res.Queued {
		t.Fatalf("f2 should run at once in pool b: %+v", res)
	}
	f2 := specOf(t, started, "free", "t")
	run, _ := rb.st.GetRun(ctx, "free", "f1")
	e, err := rb.st.LatestEntry(ctx, run.PK, "t")
	if err != nil || e.State != "waiting" || len(e.Needs) == 0 || !hasNeed(e.Needs, "a") || hasNeed(e.Needs, "b") {
		t.Fatalf("f1 entry after the rule change: %+v %v", e, err)
	}
	h.drain(t, hold, f2)
	if r := rb.mustRun(t, "free", "f1"); r.State != "success" {
		t.Fatalf("f1 %s, want success", r.State)
	}
}

func hasNeed(needs []store.Requirement, pool string) bool {
	for _, n := range needs {
		if n.Pool == pool {
			return true
		}
	}
	return false
}

// TestReloadMaxRunning: raising max_running admits waiting entries without restarting the
// running one; the waiting entries' _global limit follows the file.
func TestReloadMaxRunning(t *testing.T) {
	t.Parallel()
	task := func(id string) string { return fmt.Sprintf("  - {id: %s, bash: 'true'}\n", id) }
	rb := setupReload(t, "max_running: 1\n", map[string]string{"fan.yaml": "tasks:\n" + task("a") + task("b") + task("c")})
	h, _ := rb.harness(t, nil)
	res, first := h.trigger(t, TriggerRequest{DAGID: "fan", RunID: "r"})
	if !res.Queued || res.Pool != pools.GlobalPool || len(first) != 1 {
		t.Fatalf("trigger: %+v, started %v (two of three wait for max_running)", res, tasks(first))
	}
	rb.writeConfig(t, "max_running: 3\n")
	rb.reload(t, h)
	more := h.settle(t)
	seen := map[string]bool{}
	for _, s := range append(first, more...) {
		if seen[s.Task.ID] {
			t.Fatalf("%s admitted twice: restarted", s.Task.ID)
		}
		seen[s.Task.ID] = true
	}
	if len(seen) != 3 {
		t.Fatalf("running %v after max_running 3, want all three", seen)
	}
	h.drain(t, append(first, more...)...)
	if r := rb.mustRun(t, "fan", "r"); r.State != "success" {
		t.Fatalf("run %s", r.State)
	}
}

// TestStoredPoolRevalidates: a pool created in the store by another process makes a DAG that
// needs it valid in the running daemon, and a run triggered right away finds it. A real daemon:
// what is under test is the loop waiting for its registry's watcher before the trigger's pass.
func TestStoredPoolRevalidates(t *testing.T) {
	t.Parallel()
	rb := setupReload(t, "pools:\n  db: 1\n", map[string]string{"x.yaml": "tasks:\n  - {id: t, bash: 'true', pool_requirements: {extra: 2}}\n"})
	d := rb.start(t)
	if dags, errs := d.DAGs(); len(dags) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "extra") {
		t.Fatalf("before: %v %v", dags, errs)
	}
	other, err := store.Open(context.Background(), rb.st.Path(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	err = other.WithTx(context.Background(), func(tx store.Tx) error {
		return config.SetPool(tx, rb.cfg, nil, pools.Spec{Name: "extra", Slots: 2}, false, time.Now())
	})
	if err != nil {
		t.Fatal(err)
	}
	d.Wake() // as the API does after a write; the CLI's write is noticed by polling
	res, err := d.Trigger(context.Background(), TriggerRequest{DAGID: "x", RunID: "r"})
	if err != nil {
		t.Fatalf("trigger right after the pool was created: %v", err)
	}
	if n := rb.waitNotice(t, func(n Notice) bool { return n.Kind == NoticeRunEnded }); n.State != "success" || res.Run.RunID != "r" {
		t.Fatalf("run %s (%s)", n.State, n.Reason)
	}
	err = other.WithTx(context.Background(), func(tx store.Tx) error {
		return config.DeletePool(tx, rb.cfg, nil, "extra", true, time.Now())
	})
	if err != nil {
		t.Fatal(err)
	}
	// The watcher re-validates off the loop and wakes it when done: the pass after it sees it.
	rb.untilPass(t, "the import error to come back", func() bool { _, errs := d.DAGs(); return len(errs) == 1 })
}

// TestLargeParamsGoToAFile: params too large for one environment string reach the task as a
// file (POOLFLOW_PARAMS_FILE), so the attempt starts instead of failing with "argument list too
// long"; small params stay in POOLFLOW_PARAMS.
func TestLargeParamsGoToAFile(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 200<<10)
	b := setup(t, "", map[string]string{
		"big.yaml":   "params: {blob: " + big + "}\ntasks:\n  - id: t\n    bash: 'test -z \"$POOLFLOW_PARAMS\" && grep -q xxxx \"$POOLFLOW_PARAMS_FILE\"'\n",
		"small.yaml": "params: {a: 1}\ntasks:\n  - id: t\n    bash: 'test \"$POOLFLOW_PARAMS\" = \"{\\\"a\\\":1}\" && test -z \"$POOLFLOW_PARAMS_FILE\"'\n",
	})
	for _, id := range []string{"big", "small"} {
		if run := b.testRun(t, id, nil); run.State != "success" {
			t.Errorf("%s: run %s (%s)", id, run.State, b.tis(t, run.PK)["t"].Reason)
		}
	}
}
