package executor

import (
	"context"
	"errors"
	"fmt"
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
// retry is assigned afresh with the try number it will run as. Pass by pass (Harness).
func TestRulesAssignmentIsSticky(t *testing.T) {
	t.Parallel()
	b := setup(t, fmt.Sprintf(rulesCfg, "wh"), map[string]string{"etl_x.yaml": `
tasks:
  - {id: holder, pool_requirements: {wh: 1}, bash: 'true', priority_weight: 9, weight_rule: absolute}
  - {id: ruled, retries: 1, retry_delay: 0s, bash: 'if [ "$POOLFLOW_TRY_NUMBER" = 1 ]; then exit 1; fi'}
`})
	h, _ := b.harness(t, nil)
	res, started := h.trigger(t, TriggerRequest{DAGID: "etl_x", RunID: "r"})
	holder := specOf(t, started, "etl_x", "holder")
	pk := res.Run.PK
	if e, err := b.latest(pk, "ruled"); err != nil || e.ReasonCode != "pool_full" || e.Rule != "etl" || !hasPool(e.Needs, "wh") {
		t.Fatalf("ruled does not wait for wh: %+v %v", e, err)
	}
	// The daemon stops: its attempt is stopped and waits to replay.
	if err := h.Shutdown(h.Stopped(holder)); err != nil {
		t.Fatal(err)
	}

	// The rules change: etl_ now maps to "other". The waiting entry keeps wh.
	cfg, err := config.Parse("poolflow.yaml", []byte(fmt.Sprintf(rulesCfg, "other")))
	if err != nil {
		t.Fatal(err)
	}
	b.cfg = cfg
	h2, _ := b.harness(t, nil) // the same daemon id: a restart
	holder = specOf(t, h2.settle(t), "etl_x", "holder")
	if e, err := b.latest(pk, "ruled"); err != nil || e.State != "waiting" || e.ReasonCode != "pool_full" || !hasPool(e.Needs, "wh") || hasPool(e.Needs, "other") {
		t.Fatalf("the restarted daemon does not keep ruled waiting on wh: %+v %v", e, err)
	}
	ruled := specOf(t, h2.succeed(t, holder), "etl_x", "ruled")
	h2.drain(t, h2.settle(t, h2.End(ruled, false, "exit status 1"))...)
	if r := b.mustRun(t, "etl_x", "r"); r.State != "success" {
		t.Fatalf("run %s, want success", r.State)
	}
	e, err := b.latest(pk, "ruled")
	if err != nil || e.TryNumber != 2 || e.Rule != "retries" || !hasPool(e.Needs, "retry_pool") {
		t.Fatalf("the retry's entry: %+v %v; want try 2 assigned afresh by rule retries", e, err)
	}
}

// TestNoQueue: a manual start that asks not to wait is refused with the pool's message unless
// its ready tasks are admitted at once. Pass by pass (Harness).
func TestNoQueue(t *testing.T) {
	t.Parallel()
	b := setup(t, "pools:\n  db: 1\n", map[string]string{"nq.yaml": `
dag_id: nq
tasks:
  - {id: a, pool_requirements: {db: 1}, bash: 'true'}
`})
	h, _ := b.harness(t, nil)
	res, started := h.trigger(t, TriggerRequest{DAGID: "nq", RunID: "first", NoQueue: true})
	if res.Queued {
		t.Fatalf("first start: %+v, want admitted at once", res)
	}
	first := specOf(t, started, "nq", "a")
	ev, ch := h.Trigger(TriggerRequest{DAGID: "nq", RunID: "second", NoQueue: true})
	h.settle(t, ev)
	if err := reply(t, ch).Err; !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "pool db cannot admit nq.a try 1 at once") {
		t.Fatalf("second start: %v", err)
	}
	if r := b.mustRun(t, "nq", "second"); r.State != "failed" || r.ReasonCode != vocab.ReasonRejected || r.Reason == "" {
		t.Fatalf("refused run: %s %s %q", r.State, r.ReasonCode, r.Reason)
	}
	res, _ = h.trigger(t, TriggerRequest{DAGID: "nq", RunID: "third"})
	if !res.Queued || res.Pool != "db" || res.QueueID == 0 {
		t.Fatalf("queued start: %+v", res)
	}
	h.drain(t, first)
	if r := b.mustRun(t, "nq", "third"); r.State != "success" {
		t.Fatalf("the queued run %s, want success", r.State)
	}
}

// TestTriggerBehindMaxActiveRuns: a manual start waiting for max_active_runs is reported as
// queued; one that asked not to queue is refused. Pass by pass (Harness).
func TestTriggerBehindMaxActiveRuns(t *testing.T) {
	t.Parallel()
	b := setup(t, "", map[string]string{"one.yaml": `
dag_id: one
max_active_runs: 1
tasks:
  - {id: a, bash: 'true'}
`})
	h, _ := b.harness(t, nil)
	res, started := h.trigger(t, TriggerRequest{DAGID: "one", RunID: "r1"})
	if res.Queued {
		t.Fatalf("r1: %+v", res)
	}
	r1 := specOf(t, started, "one", "a")
	if res, started := h.trigger(t, TriggerRequest{DAGID: "one", RunID: "r2"}); !res.Queued || res.Run.State != "queued" || len(started) != 0 {
		t.Fatalf("r2: %+v (started %v), want a queued run", res, tasks(started))
	}
	ev, ch := h.Trigger(TriggerRequest{DAGID: "one", RunID: "r3", NoQueue: true})
	h.settle(t, ev)
	if err := reply(t, ch).Err; !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "max_active_runs 1") {
		t.Fatalf("r3: %v", err)
	}
	h.drain(t, r1)
	if r := b.mustRun(t, "one", "r2"); r.State != "success" {
		t.Fatalf("r2 %s after r1, want success", r.State)
	}
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
