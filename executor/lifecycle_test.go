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
	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/executor/decide"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func (b *bundle) runs(t *testing.T, dagID string) []store.Run {
	t.Helper()
	rs, _, err := b.st.ListRuns(context.Background(), dagID, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	// oldest first
	for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
		rs[i], rs[j] = rs[j], rs[i]
	}
	return rs
}

func (b *bundle) ti(t *testing.T, dagID, runID, taskID string) store.TaskInstance {
	t.Helper()
	r, err := b.st.GetRun(context.Background(), dagID, runID)
	if err != nil {
		t.Fatal(err)
	}
	return b.tis(t, r.PK)[taskID]
}

// TestLifecycle drives each lifecycle rule of §3.3 and §3.5 pass by pass (Harness) against the
// real store with an injected clock. Nothing runs the attempts: each case ends them by hand, so
// what it asserts holds right after the pass that decided it.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  string
		dags map[string]string
		// first: the attempts the first pass (at t0) started.
		run func(t *testing.T, b *bundle, h *Harness, clock *FakeClock, first []*attempt.Spec)
	}{
		{
			name: "pause keeps entries waiting with reason paused",
			dags: map[string]string{"p.yaml": "dag_id: p\ntasks:\n  - {id: a, bash: echo a}\n"},
			run: func(t *testing.T, b *bundle, h *Harness, clock *FakeClock, _ []*attempt.Spec) {
				setPaused(t, b, "p", true)
				cliTrigger(t, b, "p", "r", "a")
				if started := h.settle(t); len(started) != 0 {
					t.Fatalf("a paused DAG's task started: %v", tasks(started))
				}
				if e, err := b.latest(b.mustRun(t, "p", "r").PK, "a"); err != nil || e.ReasonCode != "paused" || e.Reason != "waiting: DAG is paused" {
					t.Fatalf("a's entry while paused: %s %q %v", e.ReasonCode, e.Reason, err)
				}
				setPaused(t, b, "p", false)
				h.drain(t, specOf(t, h.settle(t), "p", "a"))
				if r := b.mustRun(t, "p", "r"); r.State != "success" {
					t.Fatalf("run %s after unpause", r.State)
				}
			},
		},
		{
			name: "forbid keeps the next fire queued until the previous run ends",
			dags: map[string]string{"f.yaml": `dag_id: f
schedule: "@every 1m"
concurrency_policy: forbid
tasks:
  - {id: a, bash: 'true'}
`},
			run: func(t *testing.T, b *bundle, h *Harness, clock *FakeClock, _ []*attempt.Spec) {
				clock.Advance(time.Minute)
				first := specOf(t, h.settle(t), "f", "a")
				if rs := b.runs(t, "f"); len(rs) != 1 || rs[0].State != "running" {
					t.Fatalf("after the first fire: %+v", rs)
				}
				clock.Advance(time.Minute)
				if started := h.settle(t); len(started) != 0 {
					t.Fatalf("the second fire started %v while the first run runs", tasks(started))
				}
				rs := b.runs(t, "f")
				if len(rs) != 2 || rs[1].State != "queued" || !strings.HasPrefix(rs[1].Reason, "forbid: waits for the previous run "+rs[0].RunID) {
					t.Fatalf("the second fire: %+v", rs)
				}
				clock.Advance(time.Second) // the first run ends a second later
				h.drain(t, first)
				rs = b.runs(t, "f")
				if len(rs) != 2 || rs[0].State != "success" || rs[1].State != "success" || rs[1].StartDate.Before(rs[0].EndDate) {
					t.Fatalf("both runs to succeed in order: %+v", rs)
				}
			},
		},
		{
			name: "replace fails the previous run's unfinished tasks",
			dags: map[string]string{"r.yaml": `dag_id: r
schedule: "@every 1m"
concurrency_policy: replace
tasks:
  - {id: a, bash: 'true'}
  - {id: b, depends_on: [a], bash: 'sleep 60'}
`},
			run: func(t *testing.T, b *bundle, h *Harness, clock *FakeClock, _ []*attempt.Spec) {
				clock.Advance(time.Minute)
				a := specOf(t, h.settle(t), "r", "a")
				bRun := specOf(t, h.succeed(t, a), "r", "b")
				rs := b.runs(t, "r")
				if len(rs) != 1 || b.ti(t, "r", rs[0].RunID, "b").State != "running" {
					t.Fatalf("the first run's b does not run: %+v", rs)
				}
				clock.Advance(time.Minute)
				plans, err := h.Settle()
				if err != nil {
					t.Fatal(err)
				}
				if !killed(plans, bRun.Entry) {
					t.Fatal("the new fire did not stop the previous run's b")
				}
				h.settle(t, h.End(bRun, false, "killed by signal terminated"))
				rs = b.runs(t, "r")
				if len(rs) != 2 || rs[0].State != "failed" || rs[1].State == "queued" {
					t.Fatalf("the first run was not replaced: %+v", rs)
				}
				if ti := b.ti(t, "r", rs[0].RunID, "b"); ti.State != "failed" || ti.Reason != "replaced" {
					t.Fatalf("replaced run's b: %s %q", ti.State, ti.Reason)
				}
			},
		},
		{
			name: "a changed task definition is queued again with its try number",
			cfg:  "pools:\n  db: 1\n  other: 1\n",
			dags: map[string]string{"c.yaml": changedDAG("db")},
			run: func(t *testing.T, b *bundle, h *Harness, clock *FakeClock, _ []*attempt.Spec) {
				res, started := h.trigger(t, TriggerRequest{DAGID: "c", RunID: "r"})
				specOf(t, started, "c", "holder")
				pk := res.Run.PK
				before, err := b.latest(pk, "waiter")
				if err != nil || before.ReasonCode != "pool_full" {
					t.Fatalf("waiter does not wait for db: %+v %v", before, err)
				}
				write(t, filepath.Join(b.dagsDir, "c.yaml"), changedDAG("other"))
				if !h.Reload() {
					t.Fatal("the changed DAG file was not loaded")
				}
				h.succeed(t, specOf(t, h.settle(t), "c", "waiter"))
				if ti := b.tis(t, pk)["waiter"]; ti.State != "success" {
					t.Fatalf("waiter %s on the new pool", ti.State)
				}
				after, _ := b.latest(pk, "waiter")
				if after.ID == before.ID || after.TryNumber != before.TryNumber || !after.Due.Equal(before.Due) ||
					len(after.Needs) == 0 || !hasPool(after.Needs, "other") || hasPool(after.Needs, "db") {
					t.Fatalf("before %+v after %+v", before, after)
				}
			},
		},
		{
			name: "a newer fire retires a job's queued retry",
			dags: map[string]string{"j.yaml": "schedule: '@every 1m'\nretries: 3\nretry_delay: 1h\ncommand: [\"false\"]\n"},
			run: func(t *testing.T, b *bundle, h *Harness, clock *FakeClock, _ []*attempt.Spec) {
				clock.Advance(time.Minute)
				j := specOf(t, h.settle(t), "j", "j")
				h.settle(t, h.End(j, false, "exit status 1"))
				rs := b.runs(t, "j")
				if len(rs) != 1 || b.ti(t, "j", rs[0].RunID, "j").State != "up_for_retry" {
					t.Fatalf("the job does not wait for its retry: %+v", rs)
				}
				clock.Advance(time.Minute)
				h.settle(t)
				rs = b.runs(t, "j")
				if len(rs) < 2 {
					t.Fatalf("%d runs after the second fire", len(rs))
				}
				if ti := b.ti(t, "j", rs[0].RunID, "j"); ti.State != "failed" || ti.Reason != "retry retired by a newer fire" {
					t.Fatalf("the first run's retry: %s %q", ti.State, ti.Reason)
				}
			},
		},
		{
			name: "@reboot runs once at start",
			dags: map[string]string{"boot.yaml": "schedule: '@reboot'\nbash: echo booted\n"},
			run: func(t *testing.T, b *bundle, h *Harness, clock *FakeClock, first []*attempt.Spec) {
				h.drain(t, specOf(t, first, "boot", "boot"))
				if rs := b.runs(t, "boot"); len(rs) != 1 || rs[0].State != "success" {
					t.Fatalf("the reboot run: %+v", rs)
				}
				// Passes after the first must not fire it again (a second fire would get a new
				// logical date now).
				clock.Advance(time.Hour)
				h.settle(t)
				if rs := b.runs(t, "boot"); len(rs) != 1 {
					t.Fatalf("%d reboot runs", len(rs))
				}
			},
		},
		{
			name: "catch-up runs missed fires one at a time, in order",
			dags: map[string]string{"cu.yaml": fmt.Sprintf("dag_id: cu\nschedule: '* * * * *'\ncatchup: true\nstart_date: %s\n"+
				"tasks:\n  - {id: a, bash: 'sleep 0.05'}\n", t0.Add(-2*time.Minute).Format(time.RFC3339))},
			run: func(t *testing.T, b *bundle, h *Harness, clock *FakeClock, first []*attempt.Spec) {
				started := first
				for i := 0; i < 3; i++ {
					if len(started) != 1 {
						t.Fatalf("catch-up step %d started %v, want one a", i, tasks(started))
					}
					a := specOf(t, started, "cu", "a")
					clock.Advance(time.Second) // each run takes a second: the next starts after it
					started = h.succeed(t, a)
				}
				rs := b.runs(t, "cu")
				if len(rs) != 3 || len(started) != 0 {
					t.Fatalf("%d runs, then %v started", len(rs), tasks(started))
				}
				for i, r := range rs {
					if want := t0.Add(time.Duration(i-2) * time.Minute); !r.LogicalDate.Equal(want) || r.State != "success" {
						t.Errorf("run %d: %s %v, want success at %v", i, r.RunID, r.LogicalDate, want)
					}
					if i > 0 && r.StartDate.Before(rs[i-1].EndDate) {
						t.Errorf("run %d started %v before run %d ended %v", i, r.StartDate, i-1, rs[i-1].EndDate)
					}
				}
				if rs[0].RunType != "catchup" || rs[2].RunType != "schedule" {
					t.Errorf("run types %s, %s", rs[0].RunType, rs[2].RunType)
				}
			},
		},
		{
			name: "queue_timeout expires a waiting entry as a failed attempt that retries",
			cfg:  "pools:\n  db: 1\n",
			dags: map[string]string{"qt.yaml": `dag_id: qt
tasks:
  - {id: holder, pool_requirements: {db: 1}, bash: 'true', priority_weight: 9, weight_rule: absolute}
  - {id: waiter, pool_requirements: {db: 1}, queue_timeout: 30s, retries: 1, retry_delay: 1m, bash: echo ran}
`},
			run: func(t *testing.T, b *bundle, h *Harness, clock *FakeClock, _ []*attempt.Spec) {
				res, started := h.trigger(t, TriggerRequest{DAGID: "qt", RunID: "r"})
				holder := specOf(t, started, "qt", "holder")
				pk := res.Run.PK
				if e, err := b.latest(pk, "waiter"); err != nil || e.ReasonCode != "pool_full" {
					t.Fatalf("waiter does not wait: %+v %v", e, err)
				}
				clock.Advance(31 * time.Second)
				h.settle(t)
				ti := b.tis(t, pk)["waiter"]
				if ti.State != "up_for_retry" || ti.TryNumber != 1 || ti.ReasonCode != vocab.ReasonExpired ||
					!strings.HasPrefix(ti.Reason, "queue_timeout 30s") {
					t.Fatalf("waiter after its deadline: %s try %d %s %q", ti.State, ti.TryNumber, ti.ReasonCode, ti.Reason)
				}
				if e, _ := b.latest(pk, "waiter"); e.State != "expired" {
					t.Fatalf("entry %s", e.State)
				}
				h.settle(t, h.End(holder, true, ""))
				clock.Advance(time.Minute)
				h.drain(t, specOf(t, h.settle(t), "qt", "waiter"))
				if ti := b.tis(t, pk)["waiter"]; ti.State != "success" || ti.TryNumber != 2 {
					t.Fatalf("the retry: %s try %d", ti.State, ti.TryNumber)
				}
			},
		},
		{
			name: "on_resize drain keeps the old capacity until the old queue is empty",
			cfg:  "pools:\n  db: {slots: 2, on_resize: drain}\n",
			dags: map[string]string{"dr.yaml": `dag_id: dr
tasks:
  - {id: a, pool_requirements: {db: 2}, bash: 'true'}
  - {id: b, pool_requirements: {db: 2}, bash: echo b}
`},
			run: func(t *testing.T, b *bundle, h *Harness, clock *FakeClock, _ []*attempt.Spec) {
				res, started := h.trigger(t, TriggerRequest{DAGID: "dr", RunID: "r"})
				a := specOf(t, started, "dr", "a")
				if e, err := b.latest(res.Run.PK, "b"); err != nil || e.ReasonCode != "pool_full" {
					t.Fatalf("b does not wait: %+v %v", e, err)
				}
				// The configuration shrinks db to 1 while b waits: b keeps its place and its
				// 2 slots fit the stored capacity; the pool drains, then switches.
				cfg, err := config.Parse("poolflow.yaml", []byte("pools:\n  db: {slots: 1, on_resize: drain}\n"))
				if err != nil {
					t.Fatal(err)
				}
				cli, err := b.st.Reopen(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				defer cli.Close()
				if err := cli.WithTx(context.Background(), func(tx store.Tx) error { return config.SyncPools(tx, cfg, time.Now()) }); err != nil {
					t.Fatal(err)
				}
				ps, _ := b.st.ListPools(context.Background())
				if p := poolNamed(ps, "db"); p.Slots != 2 || p.TargetSlots != 1 {
					t.Fatalf("db during the drain: %+v", p)
				}
				h.drain(t, a)
				ps, _ = b.st.ListPools(context.Background())
				if p := poolNamed(ps, "db"); b.mustRun(t, "dr", "r").State != "success" || p.Slots != 1 || p.TargetSlots != store.NoTarget {
					t.Fatalf("run %s, db %+v: want success and db switched to 1 slot", b.mustRun(t, "dr", "r").State, p)
				}
			},
		},
		{
			name: "max_active_tis_per_dag limits a task across runs",
			dags: map[string]string{"lim.yaml": `dag_id: lim
tasks:
  - {id: a, max_active_tis_per_dag: 1, bash: 'true'}
`},
			run: func(t *testing.T, b *bundle, h *Harness, clock *FakeClock, _ []*attempt.Spec) {
				_, started := h.trigger(t, TriggerRequest{DAGID: "lim", RunID: "r1"})
				a1 := specOf(t, started, "lim", "a")
				if _, started := h.trigger(t, TriggerRequest{DAGID: "lim", RunID: "r2"}); len(started) != 0 {
					t.Fatalf("the second run's task started beside the first: %v", tasks(started))
				}
				if e, err := b.latest(b.mustRun(t, "lim", "r2").PK, "a"); err != nil || e.ReasonCode != "task_limit" || !hasPool(e.Needs, "_task/lim/a") {
					t.Fatalf("the second run's task does not wait on the task limit: %+v %v", e, err)
				}
				h.drain(t, a1)
				if r1, r2 := b.mustRun(t, "lim", "r1"), b.mustRun(t, "lim", "r2"); r1.State != "success" || r2.State != "success" {
					t.Fatalf("runs %s %s, want both success", r1.State, r2.State)
				}
			},
		},
		{
			name: "a removed DAG retires its waiting entries and fails its run once its running attempt ends",
			cfg:  "pools:\n  db: 1\n",
			dags: map[string]string{"gone.yaml": `dag_id: gone
tasks:
  - {id: holder, pool_requirements: {db: 1}, bash: 'true', priority_weight: 9, weight_rule: absolute}
  - {id: waiter, pool_requirements: {db: 1}, bash: echo never}
`},
			run: func(t *testing.T, b *bundle, h *Harness, clock *FakeClock, _ []*attempt.Spec) {
				res, started := h.trigger(t, TriggerRequest{DAGID: "gone", RunID: "r"})
				holder := specOf(t, started, "gone", "holder")
				if e, err := b.latest(res.Run.PK, "waiter"); err != nil || e.ReasonCode != "pool_full" {
					t.Fatalf("waiter does not wait: %+v %v", e, err)
				}
				if err := os.Remove(filepath.Join(b.dagsDir, "gone.yaml")); err != nil {
					t.Fatal(err)
				}
				if !h.Reload() {
					t.Fatal("the removal was not seen")
				}
				h.settle(t)
				if e, err := b.latest(res.Run.PK, "waiter"); err != nil || e.State != "retired" {
					t.Fatalf("the waiting entry: %+v %v", e, err)
				}
				// An outside write reloads the loop's memory: the run stays tracked while its
				// attempt runs, so the attempt's end is not lost.
				setPaused(t, b, "other", true)
				h.settle(t)
				if r := b.mustRun(t, "gone", "r"); r.State != "running" {
					t.Fatalf("run %s while its attempt runs", r.State)
				}
				h.settle(t, h.End(holder, true, ""))
				if r := b.mustRun(t, "gone", "r"); r.State != "failed" {
					t.Fatalf("run %s once its attempt ended", r.State)
				}
				if ti := b.tis(t, res.Run.PK)["holder"]; ti.State != "success" || ti.EndDate.IsZero() {
					t.Errorf("holder %s (end %v): its end was not recorded", ti.State, ti.EndDate)
				}
				if claims, _ := b.st.ListClaims(context.Background()); len(claims) != 0 {
					t.Errorf("claims left: %+v", claims)
				}
			},
		},
		{
			name: "tasks fail ends a waiting task with no retry",
			cfg:  "pools:\n  db: 1\n",
			dags: map[string]string{"tf.yaml": `dag_id: tf
tasks:
  - {id: holder, pool_requirements: {db: 1}, bash: 'true', priority_weight: 9, weight_rule: absolute}
  - {id: waiter, pool_requirements: {db: 1}, retries: 5, bash: echo never}
`},
			run: func(t *testing.T, b *bundle, h *Harness, clock *FakeClock, _ []*attempt.Spec) {
				res, started := h.trigger(t, TriggerRequest{DAGID: "tf", RunID: "r"})
				holder := specOf(t, started, "tf", "holder")
				pk := res.Run.PK
				if _, err := h.command(t, store.Command{Kind: "fail", Run: pk, TaskID: "waiter"}); err != nil {
					t.Fatal(err)
				}
				if ti := b.tis(t, pk)["waiter"]; ti.State != "failed" || ti.Reason != "marked failed by operator" {
					t.Fatalf("waiter %s %q", ti.State, ti.Reason)
				}
				h.settle(t, h.End(holder, true, ""))
				if r := b.mustRun(t, "tf", "r"); r.State != "failed" {
					t.Fatalf("run %s, want failed", r.State)
				}
				if ti := b.tis(t, pk)["waiter"]; ti.TryNumber > 1 || !ti.StartDate.IsZero() {
					t.Fatalf("waiter ran after being marked failed: %+v", ti)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tc.cfg, tc.dags)
			h, clock := b.harness(t, nil)
			// The first pass records the DAGs and starts their schedules from t0.
			first := h.settle(t)
			tc.run(t, b, h, clock, first)
		})
	}
}

// killed reports whether a plan stops the attempt of entry.
func killed(plans []*decide.Plan, entry int64) bool {
	for _, p := range plans {
		for _, k := range p.Kills {
			if k.Entry == entry {
				return true
			}
		}
	}
	return false
}

func changedDAG(pool string) string {
	return fmt.Sprintf(`dag_id: c
tasks:
  - {id: holder, pool_requirements: {db: 1}, bash: 'true', priority_weight: 9, weight_rule: absolute}
  - {id: waiter, pool_requirements: {%s: 1}, bash: echo waited}
`, pool)
}

func hasPool(needs []store.Requirement, pool string) bool {
	for _, n := range needs {
		if n.Pool == pool {
			return true
		}
	}
	return false
}

func (b *bundle) mustRun(t *testing.T, dagID, runID string) store.Run {
	t.Helper()
	r, err := b.st.GetRun(context.Background(), dagID, runID)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// setPaused writes the pause flag as the CLI does: from another connection, which the loop
// notices through data_version.
func setPaused(t *testing.T, b *bundle, dagID string, paused bool) {
	t.Helper()
	cli, err := b.st.Reopen(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if err := cli.WithTx(context.Background(), func(tx store.Tx) error {
		if err := tx.UpsertDAG(dagID, "", "", time.Now()); err != nil {
			return err
		}
		return tx.SetPaused(dagID, paused, time.Now())
	}); err != nil {
		t.Fatal(err)
	}
}

func touch(t *testing.T, path string) { write(t, path, "") }

func write(t *testing.T, path, body string) {
	t.Helper()
	// Through a rename, so the loop never reads half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// cliTrigger creates a manual run from another connection, as `poolflow dags trigger` does.
func cliTrigger(t *testing.T, b *bundle, dagID, runID string, tasks ...string) {
	t.Helper()
	cli, err := b.st.Reopen(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	now := time.Now().UTC()
	err = cli.WithTx(context.Background(), func(tx store.Tx) error {
		r := &store.Run{DAGID: dagID, RunID: runID, RunType: "manual", LogicalDate: now, State: "queued", QueuedAt: now}
		if err := tx.InsertRun(r); err != nil {
			return err
		}
		for _, id := range tasks {
			if err := tx.InsertTI(&store.TaskInstance{Run: r.PK, TaskID: id, State: "none"}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func poolNamed(ps []store.Pool, name string) store.Pool {
	for _, p := range ps {
		if p.Name == name {
			return p
		}
	}
	return store.Pool{}
}

// TestFirstPassDoesNotWaitForAPoll: a daemon's first pass runs as soon as it starts, not at the
// first poll tick, so a dags test of one task ends without any poll (a poll tick of an hour
// here; it was 50 ms of every dags test and every start).
func TestFirstPassDoesNotWaitForAPoll(t *testing.T) {
	t.Parallel()
	b := setup(t, "", map[string]string{"one.yaml": "dag_id: one\ntasks:\n  - {id: a, command: [\"true\"]}\n"})
	d := b.daemon(t, func(c *Config) {
		c.Test = &TestRun{DAGID: "one"}
		c.PollEvery = time.Hour
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.Done():
	case <-time.After(5 * time.Second): // the lease renewal would pass at 10 s
		d.Stop()
		t.Fatal("the test run waited for a poll tick")
	}
	if run, ok := d.TestRunResult(); !ok || run.State != "success" {
		t.Fatalf("run %+v, want success", run)
	}
}
