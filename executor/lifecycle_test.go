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
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// serve starts a daemon in serve mode (schedules on) over the bundle with a fake clock.
func (b *bundle) serve(t *testing.T, clock *FakeClock) *Daemon {
	t.Helper()
	b.clock = clock
	d := b.daemon(t, func(c *Config) { c.Clock = clock })
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop() })
	return d
}

// eventually polls the store until cond holds: the loop writes it from its own goroutine and
// exposes no signal for every state this test waits for.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

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

// TestLifecycle drives each lifecycle rule of §3.3 and §3.5 against the real store with an
// injected clock.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  string
		dags func(dir string) map[string]string
		run  func(t *testing.T, b *bundle, d *Daemon, clock *FakeClock, dir string)
	}{
		{
			name: "pause keeps entries waiting with reason paused",
			dags: func(string) map[string]string {
				return map[string]string{"p.yaml": "dag_id: p\ntasks:\n  - {id: a, bash: echo a}\n"}
			},
			run: func(t *testing.T, b *bundle, d *Daemon, clock *FakeClock, _ string) {
				setPaused(t, b, "p", true)
				cliTrigger(t, b, "p", "r", "a")
				eventually(t, "reason paused", func() bool {
					e, err := b.latest(b.mustRun(t, "p", "r").PK, "a")
					return err == nil && e.ReasonCode == "paused" && e.Reason == "waiting: DAG is paused"
				})
				setPaused(t, b, "p", false)
				eventually(t, "the run to succeed after unpause", func() bool { return b.mustRun(t, "p", "r").State == "success" })
			},
		},
		{
			name: "forbid keeps the next fire queued until the previous run ends",
			dags: func(dir string) map[string]string {
				return map[string]string{"f.yaml": fmt.Sprintf(`dag_id: f
schedule: "@every 1m"
concurrency_policy: forbid
tasks:
  - {id: a, bash: 'while [ ! -f %s ]; do sleep 0.02; done'}
`, filepath.Join(dir, "go"))}
			},
			run: func(t *testing.T, b *bundle, d *Daemon, clock *FakeClock, dir string) {
				clock.Advance(time.Minute)
				eventually(t, "the first fire to run", func() bool {
					rs := b.runs(t, "f")
					return len(rs) == 1 && rs[0].State == "running"
				})
				clock.Advance(time.Minute)
				eventually(t, "the second fire to wait with reason forbid", func() bool {
					rs := b.runs(t, "f")
					return len(rs) == 2 && rs[1].State == "queued" && strings.HasPrefix(rs[1].Reason, "forbid: waits for the previous run "+rs[0].RunID)
				})
				touch(t, filepath.Join(dir, "go"))
				eventually(t, "both runs to succeed in order", func() bool {
					rs := b.runs(t, "f")
					return len(rs) == 2 && rs[0].State == "success" && rs[1].State == "success" && !rs[1].StartDate.Before(rs[0].EndDate)
				})
			},
		},
		{
			name: "replace fails the previous run's unfinished tasks",
			dags: func(dir string) map[string]string {
				return map[string]string{"r.yaml": `dag_id: r
schedule: "@every 1m"
concurrency_policy: replace
tasks:
  - {id: a, bash: 'sleep 0.2'}
  - {id: b, depends_on: [a], bash: 'sleep 60'}
`}
			},
			run: func(t *testing.T, b *bundle, d *Daemon, clock *FakeClock, _ string) {
				clock.Advance(time.Minute)
				eventually(t, "the first run's b to run", func() bool {
					rs := b.runs(t, "r")
					return len(rs) == 1 && b.ti(t, "r", rs[0].RunID, "b").State == "running"
				})
				clock.Advance(time.Minute)
				eventually(t, "the first run to be replaced", func() bool {
					rs := b.runs(t, "r")
					return len(rs) == 2 && rs[0].State == "failed" && rs[1].State != "queued"
				})
				first := b.runs(t, "r")[0]
				if ti := b.ti(t, "r", first.RunID, "b"); ti.State != "failed" || ti.Reason != "replaced" {
					t.Fatalf("replaced run's b: %s %q", ti.State, ti.Reason)
				}
			},
		},
		{
			name: "a changed task definition is queued again with its try number",
			cfg:  "pools:\n  db: 1\n  other: 1\n",
			dags: func(dir string) map[string]string {
				return map[string]string{"c.yaml": changedDAG(dir, "db")}
			},
			run: func(t *testing.T, b *bundle, d *Daemon, clock *FakeClock, dir string) {
				if _, err := d.Trigger(context.Background(), TriggerRequest{DAGID: "c", RunID: "r"}); err != nil {
					t.Fatal(err)
				}
				pk := b.mustRun(t, "c", "r").PK
				eventually(t, "waiter to wait for db", func() bool {
					e, err := b.latest(pk, "waiter")
					return err == nil && e.ReasonCode == "pool_full"
				})
				before, _ := b.latest(pk, "waiter")
				write(t, filepath.Join(b.dagsDir, "c.yaml"), changedDAG(dir, "other"))
				eventually(t, "waiter to run on the new pool", func() bool {
					return b.tis(t, pk)["waiter"].State == "success"
				})
				after, _ := b.latest(pk, "waiter")
				if after.ID == before.ID || after.TryNumber != before.TryNumber || !after.Due.Equal(before.Due) ||
					len(after.Needs) == 0 || !hasPool(after.Needs, "other") || hasPool(after.Needs, "db") {
					t.Fatalf("before %+v after %+v", before, after)
				}
				touch(t, filepath.Join(dir, "go"))
			},
		},
		{
			name: "a newer fire retires a job's queued retry",
			dags: func(string) map[string]string {
				return map[string]string{"j.yaml": "schedule: '@every 1m'\nretries: 3\nretry_delay: 1h\ncommand: [\"false\"]\n"}
			},
			run: func(t *testing.T, b *bundle, d *Daemon, clock *FakeClock, _ string) {
				clock.Advance(time.Minute)
				eventually(t, "the job to wait for its retry", func() bool {
					rs := b.runs(t, "j")
					return len(rs) == 1 && b.ti(t, "j", rs[0].RunID, "j").State == "up_for_retry"
				})
				clock.Advance(time.Minute)
				eventually(t, "the retry to be retired", func() bool {
					rs := b.runs(t, "j")
					if len(rs) < 2 {
						return false
					}
					ti := b.ti(t, "j", rs[0].RunID, "j")
					return ti.State == "failed" && ti.Reason == "retry retired by a newer fire"
				})
			},
		},
		{
			name: "@reboot runs once at start",
			dags: func(string) map[string]string {
				return map[string]string{"boot.yaml": "schedule: '@reboot'\nbash: echo booted\n"}
			},
			run: func(t *testing.T, b *bundle, d *Daemon, clock *FakeClock, _ string) {
				eventually(t, "the reboot run", func() bool {
					rs := b.runs(t, "boot")
					return len(rs) == 1 && rs[0].State == "success"
				})
				// Passes after the first must not fire it again: wait for one that began after
				// the clock moved (a second fire would get a new logical date then).
				clock.Advance(time.Hour)
				d.Wake()
				b.waitNotice(t, func(n Notice) bool { return n.Kind == NoticePass && !n.At.Before(t0.Add(time.Hour)) })
				if rs := b.runs(t, "boot"); len(rs) != 1 {
					t.Fatalf("%d reboot runs", len(rs))
				}
			},
		},
		{
			name: "catch-up runs missed fires one at a time, in order",
			dags: func(string) map[string]string {
				return map[string]string{"cu.yaml": fmt.Sprintf("dag_id: cu\nschedule: '* * * * *'\ncatchup: true\nstart_date: %s\n"+
					"tasks:\n  - {id: a, bash: 'sleep 0.05'}\n", t0.Add(-2*time.Minute).Format(time.RFC3339))}
			},
			run: func(t *testing.T, b *bundle, d *Daemon, clock *FakeClock, _ string) {
				eventually(t, "three runs to succeed", func() bool {
					rs := b.runs(t, "cu")
					return len(rs) == 3 && rs[2].State == "success"
				})
				rs := b.runs(t, "cu")
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
			dags: func(dir string) map[string]string {
				return map[string]string{"qt.yaml": fmt.Sprintf(`dag_id: qt
tasks:
  - {id: holder, pool_requirements: {db: 1}, bash: 'while [ ! -f %s ]; do sleep 0.02; done', priority_weight: 9, weight_rule: absolute}
  - {id: waiter, pool_requirements: {db: 1}, queue_timeout: 30s, retries: 1, retry_delay: 1m, bash: echo ran}
`, filepath.Join(dir, "go"))}
			},
			run: func(t *testing.T, b *bundle, d *Daemon, clock *FakeClock, dir string) {
				res, err := d.Trigger(context.Background(), TriggerRequest{DAGID: "qt", RunID: "r"})
				if err != nil {
					t.Fatal(err)
				}
				pk := res.Run.PK
				eventually(t, "waiter to wait", func() bool {
					e, err := b.latest(pk, "waiter")
					return err == nil && e.ReasonCode == "pool_full"
				})
				clock.Advance(31 * time.Second)
				eventually(t, "the entry to expire", func() bool {
					ti := b.tis(t, pk)["waiter"]
					return ti.State == "up_for_retry" && ti.TryNumber == 1 && ti.ReasonCode == vocab.ReasonExpired &&
						strings.HasPrefix(ti.Reason, "queue_timeout 30s")
				})
				e, _ := b.latest(pk, "waiter")
				if e.State != "expired" {
					t.Fatalf("entry %s", e.State)
				}
				touch(t, filepath.Join(dir, "go"))
				clock.Advance(time.Minute)
				eventually(t, "the retry to run", func() bool {
					ti := b.tis(t, pk)["waiter"]
					return ti.State == "success" && ti.TryNumber == 2
				})
			},
		},
		{
			name: "on_resize drain keeps the old capacity until the old queue is empty",
			cfg:  "pools:\n  db: {slots: 2, on_resize: drain}\n",
			dags: func(dir string) map[string]string {
				return map[string]string{"dr.yaml": fmt.Sprintf(`dag_id: dr
tasks:
  - {id: a, pool_requirements: {db: 2}, bash: 'while [ ! -f %s ]; do sleep 0.02; done'}
  - {id: b, pool_requirements: {db: 2}, bash: echo b}
`, filepath.Join(dir, "go"))}
			},
			run: func(t *testing.T, b *bundle, d *Daemon, clock *FakeClock, dir string) {
				res, err := d.Trigger(context.Background(), TriggerRequest{DAGID: "dr", RunID: "r"})
				if err != nil {
					t.Fatal(err)
				}
				eventually(t, "b to wait", func() bool {
					e, err := b.latest(res.Run.PK, "b")
					return err == nil && e.ReasonCode == "pool_full"
				})
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
				touch(t, filepath.Join(dir, "go"))
				d.Wake()
				eventually(t, "the run to succeed and db to switch to 1 slot", func() bool {
					ps, _ := b.st.ListPools(context.Background())
					p := poolNamed(ps, "db")
					return b.mustRun(t, "dr", "r").State == "success" && p.Slots == 1 && p.TargetSlots == store.NoTarget
				})
			},
		},
		{
			name: "max_active_tis_per_dag limits a task across runs",
			dags: func(dir string) map[string]string {
				return map[string]string{"lim.yaml": fmt.Sprintf(`dag_id: lim
tasks:
  - {id: a, max_active_tis_per_dag: 1, bash: 'while [ ! -f %s ]; do sleep 0.02; done'}
`, filepath.Join(dir, "go"))}
			},
			run: func(t *testing.T, b *bundle, d *Daemon, clock *FakeClock, dir string) {
				for _, id := range []string{"r1", "r2"} {
					if _, err := d.Trigger(context.Background(), TriggerRequest{DAGID: "lim", RunID: id}); err != nil {
						t.Fatal(err)
					}
				}
				eventually(t, "the second run's task to wait on the task limit", func() bool {
					e, err := b.latest(b.mustRun(t, "lim", "r2").PK, "a")
					return err == nil && e.ReasonCode == "task_limit" && hasPool(e.Needs, "_task/lim/a")
				})
				touch(t, filepath.Join(dir, "go"))
				eventually(t, "both runs to succeed", func() bool {
					return b.mustRun(t, "lim", "r1").State == "success" && b.mustRun(t, "lim", "r2").State == "success"
				})
			},
		},
		{
			name: "a removed DAG retires its waiting entries and fails its run once its running attempt ends",
			cfg:  "pools:\n  db: 1\n",
			dags: func(dir string) map[string]string {
				return map[string]string{"gone.yaml": fmt.Sprintf(`dag_id: gone
tasks:
  - {id: holder, pool_requirements: {db: 1}, bash: 'while [ ! -f %s ]; do sleep 0.02; done', priority_weight: 9, weight_rule: absolute}
  - {id: waiter, pool_requirements: {db: 1}, bash: echo never}
`, filepath.Join(dir, "go"))}
			},
			run: func(t *testing.T, b *bundle, d *Daemon, clock *FakeClock, dir string) {
				res, err := d.Trigger(context.Background(), TriggerRequest{DAGID: "gone", RunID: "r"})
				if err != nil {
					t.Fatal(err)
				}
				eventually(t, "waiter to wait", func() bool {
					e, err := b.latest(res.Run.PK, "waiter")
					return err == nil && e.ReasonCode == "pool_full"
				})
				if err := os.Remove(filepath.Join(b.dagsDir, "gone.yaml")); err != nil {
					t.Fatal(err)
				}
				eventually(t, "the waiting entry to be retired", func() bool {
					e, err := b.latest(res.Run.PK, "waiter")
					return err == nil && e.State == "retired"
				})
				// An outside write reloads the loop's memory: the run stays tracked while its
				// attempt runs, so the attempt's end is not lost.
				setPaused(t, b, "other", true)
				if r := b.mustRun(t, "gone", "r"); r.State != "running" {
					t.Fatalf("run %s while its attempt runs", r.State)
				}
				touch(t, filepath.Join(dir, "go"))
				eventually(t, "the run to fail", func() bool { return b.mustRun(t, "gone", "r").State == "failed" })
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
			dags: func(dir string) map[string]string {
				return map[string]string{"tf.yaml": fmt.Sprintf(`dag_id: tf
tasks:
  - {id: holder, pool_requirements: {db: 1}, bash: 'while [ ! -f %s ]; do sleep 0.02; done', priority_weight: 9, weight_rule: absolute}
  - {id: waiter, pool_requirements: {db: 1}, retries: 5, bash: echo never}
`, filepath.Join(dir, "go"))}
			},
			run: func(t *testing.T, b *bundle, d *Daemon, clock *FakeClock, dir string) {
				if _, err := d.Trigger(context.Background(), TriggerRequest{DAGID: "tf", RunID: "r"}); err != nil {
					t.Fatal(err)
				}
				pk := b.mustRun(t, "tf", "r").PK
				if err := d.Command(context.Background(), store.Command{Kind: "fail", Run: pk, TaskID: "waiter"}); err != nil {
					t.Fatal(err)
				}
				if ti := b.tis(t, pk)["waiter"]; ti.State != "failed" || ti.Reason != "marked failed by operator" {
					t.Fatalf("waiter %s %q", ti.State, ti.Reason)
				}
				touch(t, filepath.Join(dir, "go"))
				eventually(t, "the run to end failed", func() bool { return b.mustRun(t, "tf", "r").State == "failed" })
				if ti := b.tis(t, pk)["waiter"]; ti.TryNumber > 1 || !ti.StartDate.IsZero() {
					t.Fatalf("waiter ran after being marked failed: %+v", ti)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			b := setup(t, tc.cfg, tc.dags(dir))
			clock := NewFakeClock(t0)
			d := b.serve(t, clock)
			// The first pass records the DAGs and starts their schedules from t0.
			b.waitNotice(t, func(n Notice) bool { return n.Kind == NoticePass })
			tc.run(t, b, d, clock, dir)
		})
	}
}

func changedDAG(dir, pool string) string {
	return fmt.Sprintf(`dag_id: c
tasks:
  - {id: holder, pool_requirements: {db: 1}, bash: 'while [ ! -f %s ]; do sleep 0.02; done', priority_weight: 9, weight_rule: absolute}
  - {id: waiter, pool_requirements: {%s: 1}, bash: echo waited}
`, filepath.Join(dir, "go"), pool)
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
