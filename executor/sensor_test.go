package executor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/vocab"
)

// TestRescheduleProof: pool p has 1 slot; a higher-priority sensor waits for a file that maker
// (pool p, no dependency between them) creates. In reschedule mode the sensor releases p between
// pokes, maker runs and the run succeeds; in poke mode the sensor never gives the slot up, times
// out, and the run fails.
func TestRescheduleProof(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode          string
		run           vocab.RunState
		sensor, maker vocab.TaskState
	}{
		{"reschedule", "success", "success", "success"},
		{"poke", "failed", "failed", "success"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "ready")
			b := setup(t, "pools:\n  p: 1\n", map[string]string{"proof.yaml": fmt.Sprintf(`
dag_id: proof
tasks:
  - id: sensor
    sensor: {file_exists: %s, mode: %s, poke_interval: 100ms, timeout: 2s}
    pool_requirements: {p: 1}
    priority_weight: 10
  - id: maker
    pool_requirements: {p: 1}
    bash: touch %s
`, file, tc.mode, file)})
			run := b.testRun(t, "proof", nil)
			tis := b.tis(t, run.PK)
			if run.State != tc.run || tis["sensor"].State != tc.sensor || tis["maker"].State != tc.maker {
				t.Fatalf("run %s, sensor %s (%s), maker %s; want %s %s %s", run.State, tis["sensor"].State,
					tis["sensor"].Reason, tis["maker"].State, tc.run, tc.sensor, tc.maker)
			}
			if tc.mode == "poke" {
				if tis["sensor"].Reason != "sensor timeout 2s passed" || tis["sensor"].TryNumber != 1 {
					t.Errorf("poke sensor: reason %q try %d", tis["sensor"].Reason, tis["sensor"].TryNumber)
				}
				if tis["maker"].StartDate.Before(tis["sensor"].EndDate) {
					t.Errorf("maker started %v while the poking sensor held p until %v", tis["maker"].StartDate, tis["sensor"].EndDate)
				}
				return
			}
			s := tis["sensor"]
			if s.TryNumber != 1 || !s.StartDate.Before(tis["maker"].StartDate) || s.EndDate.Before(tis["maker"].EndDate) {
				t.Errorf("sensor try %d %v–%v around maker %v–%v", s.TryNumber, s.StartDate, s.EndDate,
					tis["maker"].StartDate, tis["maker"].EndDate)
			}
			e, err := b.st.LatestEntry(context.Background(), run.PK, "sensor")
			if err != nil || e.State != "done" {
				t.Fatalf("sensor entry %+v %v: one entry, same queue ID for every poke", e, err)
			}
		})
	}
}

// TestIncludeDeferredPerPool: a reschedule sensor needing {a: 1, b: 1}, where only a has
// include_deferred, holds a and not b between pokes; a task needing only b runs meanwhile; a
// task needing a waits for the sensor to finish.
func TestIncludeDeferredPerPool(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "ready")
	b := setup(t, "pools:\n  a: {slots: 1, include_deferred: true}\n  b: 1\n", map[string]string{"defer.yaml": fmt.Sprintf(`
dag_id: defer
tasks:
  - id: sensor
    sensor: {file_exists: %s, mode: reschedule, poke_interval: 100ms, timeout: 20s}
    pool_requirements: {a: 1, b: 1}
    priority_weight: 100
    weight_rule: absolute
  - id: warmup
    bash: sleep 0.3
  - id: only_b
    depends_on: [warmup]
    pool_requirements: {b: 1}
    bash: echo b
  - id: needs_a
    depends_on: [warmup]
    pool_requirements: {a: 1}
    bash: echo a
`, file)})
	d := b.daemon(t, func(c *Config) { c.Test = &TestRun{DAGID: "defer"} })
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	n := b.waitNotice(t, func(n Notice) bool { return n.Kind == NoticeAttemptEnded && n.TaskID == "only_b" })
	run, err := b.st.GetRun(context.Background(), "defer", n.RunID)
	if err != nil {
		t.Fatal(err)
	}
	sensorEntry, err := b.st.LatestEntry(context.Background(), run.PK, "sensor")
	if err != nil {
		t.Fatal(err)
	}
	claims, err := b.st.ListClaims(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, c := range claims {
		if c.Entry == sensorEntry.ID {
			held[c.Pool] = true
		}
	}
	tis := b.tis(t, run.PK)
	// only_b ran on b, so the sensor was between pokes then; whenever it is, it keeps a only.
	if !held["a"] || held["b"] && tis["sensor"].State == "up_for_reschedule" {
		t.Fatalf("between pokes the sensor holds %v (state %s), want a and not b", held, tis["sensor"].State)
	}
	if tis["needs_a"].State != "scheduled" || !tis["needs_a"].StartDate.IsZero() {
		t.Fatalf("needs_a is %s while the sensor keeps a", tis["needs_a"].State)
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	<-d.Done()
	end, _ := d.TestRunResult()
	tis = b.tis(t, run.PK)
	if end.State != "success" || tis["needs_a"].StartDate.Before(tis["sensor"].EndDate) {
		t.Fatalf("run %s; needs_a started %v, sensor ended %v", end.State, tis["needs_a"].StartDate, tis["sensor"].EndDate)
	}
}

// TestKeptClaimsNoDeadlock: the sensor of TestIncludeDeferredPerPool plus a higher-priority task
// needing {a: 1, b: 1} where b is strict: the sensor, walked first in b, still finishes; then the
// task runs.
func TestKeptClaimsNoDeadlock(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "ready")
	b := setup(t, "pools:\n  a: {slots: 1, include_deferred: true}\n  b: {slots: 1, ordering: strict}\n",
		map[string]string{"dl.yaml": fmt.Sprintf(`
dag_id: dl
tasks:
  - id: sensor
    sensor: {file_exists: %[1]s, mode: reschedule, poke_interval: 100ms, timeout: 20s}
    pool_requirements: {a: 1, b: 1}
    priority_weight: 10
    weight_rule: absolute
  - id: warmup
    bash: sleep 0.3
  - id: big
    depends_on: [warmup]
    pool_requirements: {a: 1, b: 1}
    priority_weight: 100
    weight_rule: absolute
    bash: echo big
  - id: maker
    depends_on: [warmup]
    bash: sleep 0.5; touch %[1]s
`, file)})
	run := b.testRun(t, "dl", nil)
	tis := b.tis(t, run.PK)
	if run.State != "success" {
		t.Fatalf("run %s: %+v", run.State, tis)
	}
	if tis["big"].StartDate.Before(tis["sensor"].EndDate) {
		t.Errorf("big started %v before the sensor ended %v", tis["big"].StartDate, tis["sensor"].EndDate)
	}
}

// TestSensorChecks covers the check kinds and soft_fail.
func TestSensorChecks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, sensor string
		state        vocab.TaskState
	}{
		{"command_met", `{command: ["true"], poke_interval: 100ms, timeout: 2s}`, "success"},
		{"command_error", `{command: ["sh", "-c", "exit 7"], poke_interval: 100ms, timeout: 2s}`, "failed"},
		{"soft_fail", `{command: ["false"], poke_interval: 100ms, timeout: 300ms, soft_fail: true}`, "skipped"},
		{"reschedule_soft_fail", `{file_exists: /nonexistent/x, mode: reschedule, poke_interval: 100ms, timeout: 300ms, soft_fail: true}`, "skipped"},
		{"backoff_timeout", `{command: ["false"], poke_interval: 50ms, exponential_backoff: true, max_wait: 100ms, timeout: 400ms}`, "failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, "", map[string]string{"s.yaml": "dag_id: s\ntasks:\n  - id: s\n    sensor: " + tc.sensor + "\n"})
			run := b.testRun(t, "s", nil)
			if ti := b.tis(t, run.PK)["s"]; ti.State != tc.state {
				t.Fatalf("state %s (%s), want %s", ti.State, ti.Reason, tc.state)
			}
		})
	}
}

// TestTaskLimitOutlivesARun: max_active_tis_per_dag is one implicit pool shared by every run of
// the task (§4.2). Two runs' reschedule sensors take turns on it; the first one's run ends while
// the second waits for its next poke. The second must still poke and succeed: its entry names a
// pool the loop's admission queue must keep for it (it had been forgotten with the first run, so
// the entry waited for ever while every pool it needs was free; issue 25).
func TestTaskLimitOutlivesARun(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "go")
	b := setup(t, "", map[string]string{"sens.yaml": fmt.Sprintf(`
dag_id: sens
tasks:
  - id: s
    max_active_tis_per_dag: 1
    sensor: {file_exists: %s, mode: reschedule, poke_interval: 10s, timeout: 1h}
`, file)})
	h, clock := b.harness(t, nil)
	// poke is the poke of run's sensor, which the passes started.
	poke := func(started []*attempt.Spec, run string) *attempt.Spec {
		t.Helper()
		s := specOf(t, started, "sens", "s")
		if len(started) != 1 || s.RunID != run {
			t.Fatalf("started %v of run %s, want the poke of %s", tasks(started), s.RunID, run)
		}
		return s
	}
	// notMet ends a poke whose file is not there yet: the sensor waits for its next poke.
	notMet := func(s *attempt.Spec) {
		t.Helper()
		end := h.End(s, false, "")
		end.Reschedule = true
		h.settle(t, end)
		if st := b.ti(t, "sens", s.RunID, "s").State; st != "up_for_reschedule" {
			t.Fatalf("%s's sensor is %s, want up_for_reschedule", s.RunID, st)
		}
	}
	_, started := h.trigger(t, TriggerRequest{DAGID: "sens", RunID: "r1"})
	notMet(poke(started, "r1")) // next poke at t0+10s
	clock.Advance(5 * time.Second)
	_, started = h.trigger(t, TriggerRequest{DAGID: "sens", RunID: "r2"})
	notMet(poke(started, "r2"))    // next poke at t0+15s
	clock.Advance(5 * time.Second) // r1 pokes, succeeds, its run ends; r2 still waits for its poke
	h.succeed(t, poke(h.settle(t), "r1"))
	if r := b.mustRun(t, "sens", "r1"); r.State != "success" {
		t.Fatalf("run r1 %s", r.State)
	}
	clock.Advance(5 * time.Second)
	h.succeed(t, poke(h.settle(t), "r2"))
	if r := b.mustRun(t, "sens", "r2"); r.State != "success" {
		t.Fatalf("run r2 ended %s (%s)", r.State, r.Reason)
	}
}
