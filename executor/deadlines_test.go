package executor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/notify"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

const deadlineCfg = "pools:\n  p: 1\nnotifiers:\n  ops: {type: command, command: ['true']}\n"

func triggerRun(t *testing.T, h *Harness, dagID, runID string) *pendingPlan {
	t.Helper()
	trig, reply := h.Trigger(TriggerRequest{DAGID: dagID, RunID: runID})
	p := h.mustPass(t, trig)
	r := <-reply
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	return &pendingPlan{run: r.Res.Run, starts: p.Starts}
}

type pendingPlan struct {
	run    store.Run
	starts []*attempt.Spec
}

// TestDagrunTimeout: a run still open at its dagrun_timeout fails: its running attempt is
// stopped, its not-yet-ready task skipped, the run ends failed with reason dagrun_timeout, and
// its on_failure is told once. The loop wakes for it on its own.
func TestDagrunTimeout(t *testing.T) {
	b := setup(t, deadlineCfg, map[string]string{"slow.yaml": `dag_id: slow
dagrun_timeout: 1h
on_failure: [ops]
tasks:
  - {id: a, bash: 'sleep 7200', on_failure: [ops]}
  - {id: c, bash: 'true', depends_on: [a]}
`})
	h, clock := b.harness(t, nil)
	pp := triggerRun(t, h, "slow", "x")
	if len(pp.starts) != 1 {
		t.Fatalf("starts %v", pp.starts)
	}
	if w := h.l.dec.NextWake(clock.Now()); !w.Equal(t0.Add(time.Hour)) {
		t.Fatalf("next wake %v, want the timeout at %v", w, t0.Add(time.Hour))
	}
	clock.Advance(time.Hour)
	p := h.mustPass(t)
	if len(p.Kills) != 1 || p.Kills[0].Entry != pp.starts[0].Entry || !strings.Contains(p.Kills[0].Reason, "dagrun_timeout 1h0m0s passed") {
		t.Fatalf("kills %+v", p.Kills)
	}
	if tis := b.tis(t, pp.run.PK); tis["c"].State != vocab.TaskSkipped || tis["c"].ReasonCode != vocab.ReasonDagrunTimeout {
		t.Fatalf("c = %+v", tis["c"])
	}
	// The stopped attempt ends: a fails, the run ends failed, reason dagrun_timeout.
	clock.Advance(time.Second)
	h.mustPass(t, h.End(pp.starts[0], false, "killed by SIGTERM"))
	h.mustPass(t)
	run, err := b.st.GetRunByPK(context.Background(), pp.run.PK)
	if err != nil {
		t.Fatal(err)
	}
	if run.State != vocab.RunFailed || run.ReasonCode != vocab.ReasonDagrunTimeout || !strings.Contains(run.Reason, "dagrun_timeout") {
		t.Fatalf("run %+v", run)
	}
	if tis := b.tis(t, pp.run.PK); tis["a"].State != vocab.TaskFailed {
		t.Fatalf("a = %+v", tis["a"])
	}
	got := events(outbox(t, b.st))
	if strings.Join(got, ",") != "task_failed:a,run_failed:" {
		t.Fatalf("events %v", got)
	}
	ev, _ := notify.Decode(outbox(t, b.st)[1], "")
	if !strings.Contains(ev.Reason, "dagrun_timeout 1h0m0s passed") {
		t.Fatalf("run_failed reason %q", ev.Reason)
	}
}

// TestDeadlineMiss: a run still open at its deadline tells on_deadline_miss once, and nothing
// else changes; the loop wakes for it.
func TestDeadlineMiss(t *testing.T) {
	b := setup(t, deadlineCfg, map[string]string{"late.yaml": `dag_id: late
deadline: {after: 30m, from: queued}
on_deadline_miss: [ops]
tasks:
  - {id: a, bash: 'sleep 7200'}
`})
	h, clock := b.harness(t, nil)
	pp := triggerRun(t, h, "late", "x")
	if w := h.l.dec.NextWake(clock.Now()); !w.Equal(t0.Add(30 * time.Minute)) {
		t.Fatalf("next wake %v", w)
	}
	clock.Advance(30 * time.Minute)
	p := h.mustPass(t)
	if len(p.Kills) != 0 {
		t.Fatal("a deadline stopped something")
	}
	clock.Advance(time.Minute)
	h.mustPass(t)
	ns := outbox(t, b.st)
	if got := events(ns); strings.Join(got, ",") != "deadline_miss:" {
		t.Fatalf("events %v", got)
	}
	ev, _ := notify.Decode(ns[0], "")
	if ev.Deadline == nil || !ev.Deadline.Equal(t0.Add(30*time.Minute)) || ev.State != string(vocab.RunRunning) ||
		!strings.Contains(ev.Reason, "still running 30m0s after its queued") {
		t.Fatalf("event %+v", ev)
	}
	_ = pp
}

// TestQueueWait: an entry still waiting on_queue_wait.after after it joined the queue tells
// its task's on_queue_wait once, with why it waits in words and its place in line when it is sent.
func TestQueueWait(t *testing.T) {
	b := setup(t, deadlineCfg, map[string]string{"q.yaml": `dag_id: q
tasks:
  - {id: hog, bash: 'sleep 7200', pool_requirements: {p: 1}}
  - {id: ahead, bash: 'true', pool_requirements: {p: 1}}
  - {id: load_orders, bash: 'true', pool_requirements: {p: 1}, on_queue_wait: {after: 10m, notify: [ops]}}
`})
	h, clock := b.harness(t, nil)
	pp := triggerRun(t, h, "q", "x")
	if len(pp.starts) != 1 || pp.starts[0].Task.ID != "hog" {
		t.Fatalf("starts %v", pp.starts)
	}
	if w := h.l.dec.NextWake(clock.Now()); !w.Equal(t0.Add(10 * time.Minute)) {
		t.Fatalf("next wake %v", w)
	}
	clock.Advance(9 * time.Minute)
	h.mustPass(t)
	if n := len(outbox(t, b.st)); n != 0 {
		t.Fatalf("%d events before the wait was long enough", n)
	}
	clock.Advance(2 * time.Minute)
	h.mustPass(t)
	clock.Advance(time.Minute)
	h.mustPass(t)
	ns := outbox(t, b.st)
	if got := events(ns); strings.Join(got, ",") != "queue_wait:load_orders" {
		t.Fatalf("events %v", got)
	}
	ev, _ := notify.Decode(ns[0], "")
	if ev.Wait == nil || ev.Wait.Seconds != 11*60 || ev.Wait.Pool != "p" {
		t.Fatalf("wait %+v", ev.Wait)
	}
	explainWait(b.st, clock.Now)(context.Background(), &ev)
	// Its place in p's line is said too (§13): ahead is first.
	// (ahead has waited past starvation_after, 10m by default: p is kept for it.)
	want := "load_orders has waited 11 min: pool p is kept for starved q.ahead try 1; 2nd in line for p"
	if ev.Reason != want || ev.Wait.Place != 2 {
		t.Fatalf("reason %q (place %d)\nwant   %q", ev.Reason, ev.Wait.Place, want)
	}
}
