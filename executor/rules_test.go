package executor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/vocab"
)

const rulesCfg = `max_running: 8
pools:
  wh: 1
  other: 1
  retry_pool: 2
rules:
  - {name: retries, priority: 5, when: 'try_number > 1', pool: retry_pool}
  - {name: etl, priority: 10, when: 'dag_id startsWith "etl_"', pool: %s}
`

// TestRulesAssignmentIsSticky: an attempt without requirements gets the first matching rule's
// pool; the assignment is stored with its entry and survives a restart with changed rules; a
// retry is assigned afresh with the try number it will run as.
func TestRulesAssignmentIsSticky(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gate := filepath.Join(dir, "go")
	b := setup(t, fmt.Sprintf(rulesCfg, "wh"), map[string]string{"etl_x.yaml": fmt.Sprintf(`
tasks:
  - {id: holder, pool_requirements: {wh: 1}, bash: 'while [ ! -f %s ]; do sleep 0.02; done', priority_weight: 9, weight_rule: absolute}
  - {id: ruled, retries: 1, retry_delay: 0s, bash: 'if [ "$POOLFLOW_TRY_NUMBER" = 1 ]; then exit 1; fi'}
`, gate)})
	d := b.daemon(t, nil)
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := d.Trigger(context.Background(), TriggerRequest{DAGID: "etl_x", RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	pk := res.Run.PK
	eventually(t, "ruled to wait for wh", func() bool {
		e, err := b.latest(pk, "ruled")
		return err == nil && e.ReasonCode == "pool_full" && e.Rule == "etl" && hasPool(e.Needs, "wh")
	})
	d.Stop()

	// The rules change: etl_ now maps to "other". The waiting entry keeps wh.
	cfg, err := config.Parse("poolflow.yaml", []byte(fmt.Sprintf(rulesCfg, "other")))
	if err != nil {
		t.Fatal(err)
	}
	b.cfg = cfg
	d2 := b.daemon(t, nil)
	if err := d2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer d2.Stop()
	eventually(t, "the restarted daemon to keep ruled waiting on wh", func() bool {
		e, err := b.latest(pk, "ruled")
		return err == nil && e.State == "waiting" && e.ReasonCode == "pool_full" && hasPool(e.Needs, "wh") && !hasPool(e.Needs, "other")
	})
	touch(t, gate)
	eventually(t, "the run to succeed", func() bool { return b.mustRun(t, "etl_x", "r").State == "success" })
	e, err := b.latest(pk, "ruled")
	if err != nil || e.TryNumber != 2 || e.Rule != "retries" || !hasPool(e.Needs, "retry_pool") {
		t.Fatalf("the retry's entry: %+v %v; want try 2 assigned afresh by rule retries", e, err)
	}
}

// TestNoQueue: a manual start that asks not to wait is refused with the pool's message unless
// its ready tasks are admitted at once.
func TestNoQueue(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gate := filepath.Join(dir, "go")
	b := setup(t, "pools:\n  db: 1\n", map[string]string{"nq.yaml": fmt.Sprintf(`
dag_id: nq
tasks:
  - {id: a, pool_requirements: {db: 1}, bash: 'while [ ! -f %s ]; do sleep 0.02; done'}
`, gate)})
	d := b.daemon(t, nil)
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	res, err := d.Trigger(context.Background(), TriggerRequest{DAGID: "nq", RunID: "first", NoQueue: true})
	if err != nil || res.Queued {
		t.Fatalf("first start: %+v %v, want admitted at once", res, err)
	}
	_, err = d.Trigger(context.Background(), TriggerRequest{DAGID: "nq", RunID: "second", NoQueue: true})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "pool db cannot admit nq.a try 1 at once") {
		t.Fatalf("second start: %v", err)
	}
	if r := b.mustRun(t, "nq", "second"); r.State != "failed" || r.ReasonCode != vocab.ReasonRejected || r.Reason == "" {
		t.Fatalf("refused run: %s %s %q", r.State, r.ReasonCode, r.Reason)
	}
	res, err = d.Trigger(context.Background(), TriggerRequest{DAGID: "nq", RunID: "third"})
	if err != nil || !res.Queued || res.Pool != "db" || res.QueueID == 0 {
		t.Fatalf("queued start: %+v %v", res, err)
	}
	touch(t, gate)
	eventually(t, "the queued run to succeed", func() bool { return b.mustRun(t, "nq", "third").State == "success" })
}

// TestTriggerBehindMaxActiveRuns: a manual start waiting for max_active_runs is reported as
// queued; one that asked not to queue is refused.
func TestTriggerBehindMaxActiveRuns(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "go")
	b := setup(t, "", map[string]string{"one.yaml": fmt.Sprintf(`
dag_id: one
max_active_runs: 1
tasks:
  - {id: a, bash: 'while [ ! -f %s ]; do sleep 0.02; done'}
`, gate)})
	d := b.daemon(t, nil)
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	if res, err := d.Trigger(context.Background(), TriggerRequest{DAGID: "one", RunID: "r1"}); err != nil || res.Queued {
		t.Fatalf("r1: %+v %v", res, err)
	}
	res, err := d.Trigger(context.Background(), TriggerRequest{DAGID: "one", RunID: "r2"})
	if err != nil || !res.Queued || res.Run.State != "queued" {
		t.Fatalf("r2: %+v %v, want a queued run", res, err)
	}
	_, err = d.Trigger(context.Background(), TriggerRequest{DAGID: "one", RunID: "r3", NoQueue: true})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "max_active_runs 1") {
		t.Fatalf("r3: %v", err)
	}
	touch(t, gate)
	eventually(t, "r2 to run after r1", func() bool { return b.mustRun(t, "one", "r2").State == "success" })
	if r := b.mustRun(t, "one", "r3"); r.State != "failed" {
		t.Fatalf("r3 %s", r.State)
	}
}

// TestRulesAreEvaluatedBeforeTheTransaction: the pool rules of every attempt a pass queues —
// a test run's first tasks, the tasks after one that ended, a retry with no delay — are
// evaluated before the pass takes the write lock, never inside it.
func TestRulesAreEvaluatedBeforeTheTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t, fmt.Sprintf(rulesCfg, "other"), map[string]string{"etl_fan.yaml": `
tasks:
  - {id: a, bash: 'true'}
  - {id: b, bash: 'true'}
  - {id: c, depends_on: [a, b], bash: 'true'}
  - {id: d, depends_on: [c], retries: 1, retry_delay: 0s, bash: '[ "$POOLFLOW_TRY_NUMBER" -gt 1 ]'}
  - {id: e, depends_on: [c], bash: 'true'}
  - {id: f, depends_on: [d, e], bash: 'true'}
`})
	d := b.daemon(t, func(c *Config) { c.Test = &TestRun{DAGID: "etl_fan"} })
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-d.Done()
	d.Stop()
	run, _ := d.TestRunResult()
	if run.State != "success" {
		t.Fatalf("run %s", run.State)
	}
	if n := d.loop.dec.RuleMisses; n != 0 {
		t.Errorf("%d rule assignments were evaluated inside a transaction", n)
	}
	for _, task := range []string{"a", "b", "c", "d", "e", "f"} {
		e, err := b.latest(run.PK, task)
		want := "etl"
		if task == "d" {
			want = "retries" // its second try
		}
		if err != nil || e.Rule != want {
			t.Errorf("task %s: entry %+v %v, want rule %s", task, e, err, want)
		}
	}
}
