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
	"github.com/poolflow/poolflow/executor/runner"
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

func (rb *reloadBundle) start(t *testing.T) *Daemon {
	t.Helper()
	d := rb.daemon(t, func(c *Config) { c.PollEvery = 10 * time.Millisecond })
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop() })
	return d
}

// until polls cond: the daemon's watcher works on its own clock, and only its result is visible.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
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

// holdDAG is a task that holds its pool until its marker file exists.
func holdDAG(pool, marker string) string {
	return fmt.Sprintf("tasks:\n  - id: t\n    pool_requirements: {%s: 1}\n    bash: 'while [ ! -f %s ]; do sleep 0.02; done'\n", pool, marker)
}

// TestReloadPoolsDrainAndKeepAttempts: growing a file pool with on_resize: drain while entries
// wait keeps the old capacity until the queue drained, and the running attempt is never
// restarted; the change needs no restart of the daemon.
func TestReloadPoolsDrainAndKeepAttempts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "release")
	rb := setupReload(t, "max_running: 8\npools:\n  db: {slots: 1, on_resize: drain}\n", map[string]string{
		"hold.yaml": holdDAG("db", marker),
		"wait.yaml": "tasks:\n  - {id: t, bash: 'true', pool_requirements: {db: 1}}\n",
	})
	d := rb.start(t)
	ctx := context.Background()
	if _, err := d.Trigger(ctx, TriggerRequest{DAGID: "hold", RunID: "h"}); err != nil {
		t.Fatal(err)
	}
	started := rb.waitNotice(t, func(n Notice) bool { return n.Kind == NoticeAdmitted && n.DAGID == "hold" })
	res, err := d.Trigger(ctx, TriggerRequest{DAGID: "wait", RunID: "w"})
	if err != nil || !res.Queued || res.Pool != "db" {
		t.Fatalf("wait: %+v %v", res, err)
	}
	rb.writeConfig(t, "max_running: 8\npools:\n  db: {slots: 3, on_resize: drain}\n")
	until(t, "the reload to start draining db", func() bool {
		p := rb.pool(t, "db")
		return p.Slots == 1 && p.TargetSlots == 3
	})
	if got := d.Settings().Pools[0].Slots; got != 3 {
		t.Fatalf("settings in force: db %d slots", got)
	}
	// The running attempt was not thrown off: still its first admission, still running.
	run, _ := rb.st.GetRun(ctx, "hold", "h")
	if ti := rb.tis(t, run.PK)["t"]; ti.State != "running" || ti.TryNumber != started.Try {
		t.Fatalf("hold after reload: %+v", ti)
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rb.waitNotice(t, func(n Notice) bool { return n.Kind == NoticeRunEnded && n.DAGID == "wait" })
	until(t, "the drain to finish", func() bool {
		p := rb.pool(t, "db")
		return p.Slots == 3 && p.TargetSlots == store.NoTarget
	})
	// The attempt writes nothing: a log file, if any, could only hold a replay line.
	if log, err := os.ReadFile(runner.LogPath(rb.stateDir, "hold", "h", "t", 1)); err == nil && strings.Contains(string(log), "replay") {
		t.Fatalf("the attempt was replayed: %q", log)
	}
}

// TestReloadInvalidKeepsOld: a poolflow.yaml that does not parse, or whose rule names a pool
// that does not exist, is reported and the previous configuration stays in force; fixing the
// file brings it in.
func TestReloadInvalidKeepsOld(t *testing.T) {
	t.Parallel()
	rb := setupReload(t, "pools:\n  db: 2\n", map[string]string{"a.yaml": "tasks:\n  - {id: t, bash: 'true', pool_requirements: {db: 2}}\n"})
	d := rb.start(t)
	for _, bad := range []string{
		"pools:\n  db: lots\n  colour: {slots: 1, hue: red}\n",
		"pools:\n  db: 2\nrules:\n  - {name: r, priority: 1, when: 'true', pool: nowhere}\n",
	} {
		rb.writeConfig(t, bad)
		until(t, "the invalid file to be reported", func() bool { return d.ConfigStatus().Error != "" })
		st := d.ConfigStatus()
		if !strings.Contains(st.Error, "previous configuration stays in force") {
			t.Fatalf("status %+v", st)
		}
		if strings.Contains(bad, "lots") && !(strings.Contains(st.Error, "pools.db") && strings.Contains(st.Error, "pools.colour.hue")) {
			t.Fatalf("every problem at once, got %q", st.Error)
		}
		if s, _ := d.Settings().Pool("db"); s.Slots != 2 {
			t.Fatalf("db in force: %+v", s)
		}
		if dags, _ := d.DAGs(); len(dags) != 1 {
			t.Fatalf("DAGs after a refused reload: %d", len(dags))
		}
		rb.writeConfig(t, "pools:\n  db: 2\n  extra: 1\n")
		until(t, "the fixed file to be in force", func() bool { _, ok := d.Settings().Pool("extra"); return ok })
		if st := d.ConfigStatus(); st.Error != "" {
			t.Fatalf("status after the fix: %+v", st)
		}
		rb.writeConfig(t, "pools:\n  db: 2\n")
		until(t, "back to the first file", func() bool { _, ok := d.Settings().Pool("extra"); return !ok })
	}
	if err := d.Reload(context.Background()); err != nil {
		t.Fatalf("SIGHUP reload of a valid file: %v", err)
	}
}

// TestReloadRulesSticky: a waiting entry keeps the pool a rule gave it when the rules change;
// a new attempt gets the new rule's pool.
func TestReloadRulesSticky(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "release")
	rule := func(pool string) string {
		return "pools:\n  a: 1\n  b: 1\nrules:\n  - {name: r, priority: 1, when: 'dag_id == \"free\"', pool: " + pool + "}\n"
	}
	rb := setupReload(t, rule("a"), map[string]string{
		"hold.yaml": holdDAG("a", marker),
		"free.yaml": "tasks:\n  - {id: t, bash: 'true'}\n",
	})
	d := rb.start(t)
	ctx := context.Background()
	if _, err := d.Trigger(ctx, TriggerRequest{DAGID: "hold", RunID: "h"}); err != nil {
		t.Fatal(err)
	}
	rb.waitNotice(t, func(n Notice) bool { return n.Kind == NoticeAdmitted && n.DAGID == "hold" })
	res, err := d.Trigger(ctx, TriggerRequest{DAGID: "free", RunID: "f1"})
	if err != nil || !res.Queued || res.Pool != "a" {
		t.Fatalf("f1: %+v %v", res, err)
	}
	rb.writeConfig(t, rule("b"))
	until(t, "the new rule", func() bool { return d.Settings().Rules[0].Pool == "b" })
	res, err = d.Trigger(ctx, TriggerRequest{DAGID: "free", RunID: "f2"})
	if err != nil || res.Queued {
		t.Fatalf("f2 should run at once in pool b: %+v %v", res, err)
	}
	run, _ := rb.st.GetRun(ctx, "free", "f1")
	e, err := rb.st.LatestEntry(ctx, run.PK, "t")
	if err != nil || e.State != "waiting" || len(e.Needs) == 0 || !hasNeed(e.Needs, "a") || hasNeed(e.Needs, "b") {
		t.Fatalf("f1 entry after the rule change: %+v %v", e, err)
	}
	os.WriteFile(marker, nil, 0o644)
	rb.waitNotice(t, func(n Notice) bool { return n.Kind == NoticeRunEnded && n.RunID == "f1" })
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
	marker := filepath.Join(t.TempDir(), "release")
	task := func(id string) string {
		return fmt.Sprintf("  - {id: %s, bash: 'while [ ! -f %s ]; do sleep 0.02; done'}\n", id, marker)
	}
	rb := setupReload(t, "max_running: 1\n", map[string]string{"fan.yaml": "tasks:\n" + task("a") + task("b") + task("c")})
	d := rb.start(t)
	ctx := context.Background()
	res, err := d.Trigger(ctx, TriggerRequest{DAGID: "fan", RunID: "r"})
	if err != nil || !res.Queued || res.Pool != pools.GlobalPool {
		t.Fatalf("trigger: %+v %v (two of three wait for max_running)", res, err)
	}
	first := rb.waitNotice(t, func(n Notice) bool { return n.Kind == NoticeAdmitted })
	rb.writeConfig(t, "max_running: 3\n")
	seen := map[string]bool{first.TaskID: true}
	for len(seen) < 3 {
		n := rb.waitNotice(t, func(n Notice) bool { return n.Kind == NoticeAdmitted })
		if seen[n.TaskID] {
			t.Fatalf("%s admitted twice: restarted", n.TaskID)
		}
		seen[n.TaskID] = true
	}
	os.WriteFile(marker, nil, 0o644)
	if n := rb.waitNotice(t, func(n Notice) bool { return n.Kind == NoticeRunEnded }); n.State != "success" {
		t.Fatalf("run %s", n.State)
	}
}

// TestStoredPoolRevalidates: a pool created in the store by another process makes a DAG that
// needs it valid in the running daemon, and a run triggered right away finds it.
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
	until(t, "the import error to come back", func() bool { _, errs := d.DAGs(); return len(errs) == 1 })
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
