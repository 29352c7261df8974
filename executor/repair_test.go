package executor

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/executor/decide"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// repairDAG: a runs first (one slot of p, which hog may hold), b after a, gate an approval.
const repairDAG = `dag_id: r
tasks:
  - {id: a, bash: 'true', retries: 1, retry_delay: 1h, pool_requirements: {p: 1}}
  - {id: b, bash: 'true', depends_on: [a]}
  - {id: gate, approval: {}}
  - {id: hog, bash: 'true', pool_requirements: {p: 1}}
`

// repairWorld is a run of repairDAG stepped by hand.
type repairWorld struct {
	t       *testing.T
	b       *bundle
	h       *Harness
	run     store.Run
	p       *decide.Plan
	running map[int64]*attempt.Spec // started and not ended
}

// pass runs a pass and keeps the attempts it starts.
func (w *repairWorld) pass(events ...any) {
	w.t.Helper()
	w.p = w.h.mustPass(w.t, events...)
	for _, s := range w.p.Starts {
		w.running[s.Entry] = s
	}
}

func newRepairWorld(t *testing.T, hogFirst bool) *repairWorld {
	t.Helper()
	b := setup(t, "pools:\n  p: 1\n", map[string]string{"r.yaml": repairDAG})
	h, _ := b.harness(t, nil)
	w := &repairWorld{t: t, b: b, h: h, running: map[int64]*attempt.Spec{}}
	trig, reply := h.Trigger(TriggerRequest{DAGID: "r", RunID: "x"})
	w.pass(trig)
	r := <-reply
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	w.run = r.Res.Run
	return w
}

// ti is a task instance as memory holds it.
func (w *repairWorld) ti(id string) store.TaskInstance {
	w.t.Helper()
	if r := w.h.State().Runs[w.run.PK]; r != nil {
		return r.TIs[id].TaskInstance
	}
	return w.b.tis(w.t, w.run.PK)[id]
}

// end ends a's (or another task's) running attempt as its runner would.
func (w *repairWorld) end(task string, ok bool) {
	w.t.Helper()
	var ev any
	for id, s := range w.running {
		if s.Task.ID == task {
			ev = w.h.End(s, ok, "exit status 1")
			delete(w.running, id)
		}
	}
	if ev == nil {
		w.t.Fatalf("%s is not running (running: %v; memory: %+v)", task, w.running, w.ti(task))
	}
	w.pass(ev)
}

// command applies a repair command and returns its outcome.
func (w *repairWorld) command(kind vocab.CommandKind, params any) error {
	w.t.Helper()
	b, _ := json.Marshal(params)
	cmd, reply := w.h.Command(store.Command{Kind: kind, Run: w.run.PK, Who: "cli:test@host", Params: string(b)})
	w.pass(cmd)
	return <-reply
}

func (w *repairWorld) want(task string, st vocab.TaskState, try int) {
	w.t.Helper()
	if ti := w.ti(task); ti.State != st || ti.TryNumber != try {
		w.t.Fatalf("%s: %s try %d (%s %q), want %s try %d", task, ti.State, ti.TryNumber, ti.ReasonCode, ti.Reason, st, try)
	}
}

func killCount(p *decide.Plan) int { return len(p.Kills) }

// TestClearAndMarkTransitions: each state a task instance can be in, cleared and marked
// (§10.1, §10.2), pass by pass over the store.
func TestClearAndMarkTransitions(t *testing.T) {
	t.Parallel()
	t.Run("clear a failed task with its downstream: try 2 with a fresh set of retries", func(t *testing.T) {
		t.Parallel()
		w := newRepairWorld(t, false)
		w.end("a", false)  // try 1 fails: up_for_retry (retries 1, 1h); hog takes p
		w.end("hog", true) // p is free for the retry
		w.b.clock.(*FakeClock).Advance(2 * time.Hour)
		w.pass()
		w.end("a", false) // try 2 fails: no tries left
		w.want("a", vocab.TaskFailed, 2)
		w.want("b", vocab.TaskUpstreamFailed, 0)
		if err := w.command(vocab.CommandClear, store.ClearParams{TaskIDs: []string{"a"}, Downstream: true}); err != nil {
			t.Fatal(err)
		}
		w.want("a", vocab.TaskRunning, 3) // cleared, ready and admitted in the same pass
		w.want("b", vocab.TaskNone, 0)
		// Its entry is due at the clear, not at the run's due time (§10.1), as the preview says.
		if e, err := w.b.latest(w.run.PK, "a"); err != nil || !e.Due.Equal(w.b.clock.Now()) || e.Due.Equal(w.run.QueuedAt) {
			t.Errorf("try 3's entry is due at %v (%v), want the clear's time %v", e.Due, err, w.b.clock.Now())
		}
		if ti := w.ti("a"); ti.MaxTries != 2+1+1 {
			t.Errorf("a's tries allowed %d, want 4 (try 2 + retries 1 + 1)", ti.MaxTries)
		}
		w.end("a", false) // try 3 fails: a retry is left
		w.want("a", vocab.TaskUpForRetry, 3)
	})
	t.Run("clear a running attempt: stopped first, no retry used, try 2 once its claims are free", func(t *testing.T) {
		t.Parallel()
		w := newRepairWorld(t, false)
		w.want("a", vocab.TaskRunning, 1)
		if err := w.command(vocab.CommandClear, store.ClearParams{TaskIDs: []string{"a"}}); err != nil {
			t.Fatal(err)
		}
		if killCount(w.p) != 1 || len(w.p.Starts) != 0 {
			t.Fatalf("clear of a running attempt: kills %v, starts %v", w.p.Kills, started(w.p))
		}
		w.want("a", vocab.TaskRunning, 1) // until its attempt ended
		w.end("a", false)                 // killed: its end releases p, and try 2 (a weighs more than hog) takes it
		if got := started(w.p); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("after the stopped end: starts %v, want [a]", got)
		}
		w.want("a", vocab.TaskRunning, 2)
		atts, _ := w.b.st.ListAttempts(context.Background(), w.run.PK, "a")
		if len(atts) != 1 || atts[0].ReasonCode != vocab.ReasonCleared || atts[0].Reason != "cleared by cli:test@host" {
			t.Fatalf("attempts of a: %+v", atts)
		}
	})
	t.Run("mark a running task success: stopped, then success, and downstream runs", func(t *testing.T) {
		t.Parallel()
		w := newRepairWorld(t, false)
		if err := w.command(vocab.CommandMark, store.MarkParams{State: "success", TaskIDs: []string{"a"}}); err != nil {
			t.Fatal(err)
		}
		w.end("a", false)
		w.want("a", vocab.TaskSuccess, 1)
		if got := started(w.p); !slices.Contains(got, "b") {
			t.Fatalf("b does not start after a was marked success: %v", got)
		}
	})
	t.Run("mark a failed task success: the upstream_failed task after it runs, in the reopened run", func(t *testing.T) {
		t.Parallel()
		w := newRepairWorld(t, false)
		cmd, _ := w.h.Command(store.Command{Kind: vocab.CommandApprove, Run: w.run.PK, TaskID: "gate", Who: "t"})
		w.pass(cmd)
		w.end("a", false) // try 1 fails, up for retry in 1 h; hog takes p
		w.end("hog", true)
		if err := w.command(vocab.CommandMark, store.MarkParams{State: "failed", TaskIDs: []string{"a"}}); err != nil {
			t.Fatal(err)
		}
		w.want("b", vocab.TaskUpstreamFailed, 0)
		if r := w.b.mustRun(t, "r", "x"); r.State != vocab.RunFailed {
			t.Fatalf("run %s after a was marked failed", r.State)
		}
		if err := w.command(vocab.CommandMark, store.MarkParams{State: "success", TaskIDs: []string{"a"}}); err != nil {
			t.Fatal(err)
		}
		w.want("a", vocab.TaskSuccess, 1)
		w.want("b", vocab.TaskRunning, 1)
		w.end("b", true)
		if r := w.b.mustRun(t, "r", "x"); r.State != vocab.RunSuccess {
			t.Fatalf("run %s after a was marked success and b ran", r.State)
		}
	})
	t.Run("mark a waiting task failed: its entry retired, no retry", func(t *testing.T) {
		t.Parallel()
		w := newRepairWorld(t, false)
		w.want("hog", vocab.TaskScheduled, 0) // p is a's
		if err := w.command(vocab.CommandMark, store.MarkParams{State: "failed", TaskIDs: []string{"hog"}}); err != nil {
			t.Fatal(err)
		}
		w.want("hog", vocab.TaskFailed, 0)
		if ti := w.ti("hog"); ti.ReasonCode != vocab.ReasonMarked || ti.Reason != "marked failed by cli:test@host" {
			t.Fatalf("hog: %s %q", ti.ReasonCode, ti.Reason)
		}
		es, _ := w.b.st.ListEntries(context.Background(), vocab.EntryWaiting)
		if len(es) != 0 {
			t.Fatalf("waiting entries after the mark: %+v", es)
		}
	})
	t.Run("mark a task not yet ready skipped, and clear an approval gate", func(t *testing.T) {
		t.Parallel()
		w := newRepairWorld(t, false)
		if err := w.command(vocab.CommandMark, store.MarkParams{State: "skipped", TaskIDs: []string{"b"}}); err != nil {
			t.Fatal(err)
		}
		w.want("b", vocab.TaskSkipped, 0)
		w.want("gate", vocab.TaskAwaitingApproval, 1)
		if err := w.command(vocab.CommandClear, store.ClearParams{TaskIDs: []string{"gate"}}); err != nil {
			t.Fatal(err)
		}
		w.want("gate", vocab.TaskAwaitingApproval, 1) // waits for a new decision
	})
	t.Run("an ended run reopens: clear, and mark", func(t *testing.T) {
		t.Parallel()
		w := newRepairWorld(t, false)
		cmd, _ := w.h.Command(store.Command{Kind: vocab.CommandApprove, Run: w.run.PK, TaskID: "gate", Who: "t"})
		w.pass(cmd)
		w.end("a", true)
		w.end("hog", true)
		w.end("b", true)
		if r := w.b.mustRun(t, "r", "x"); r.State != vocab.RunSuccess {
			t.Fatalf("run %s", r.State)
		}
		if err := w.command(vocab.CommandClear, store.ClearParams{TaskIDs: []string{"b"}}); err != nil {
			t.Fatal(err)
		}
		if r := w.h.State().Runs[w.run.PK]; r == nil || r.State != vocab.RunRunning {
			t.Fatalf("the cleared run is not running again: %+v", r)
		}
		w.want("b", vocab.TaskRunning, 2)
		w.end("b", true)
		if r := w.b.mustRun(t, "r", "x"); r.State != vocab.RunSuccess {
			t.Fatalf("run after the clear: %s", r.State)
		}
	})
	t.Run("bad requests: an unknown task, an unknown state", func(t *testing.T) {
		t.Parallel()
		w := newRepairWorld(t, false)
		if err := w.command(vocab.CommandClear, store.ClearParams{TaskIDs: []string{"zz"}}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("clear of an unknown task: %v", err)
		}
		if err := w.command(vocab.CommandMark, store.MarkParams{State: "running", TaskIDs: []string{"a"}}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("mark running: %v", err)
		}
	})
}

// TestDeleteRunAndAuditEvents: a deletion is refused while an attempt runs, forced it stops
// the attempts and the run goes once they ended (§10.3); every command leaves its audit event
// with its actor and outcome, refusals too (§10.4).
func TestDeleteRunAndAuditEvents(t *testing.T) {
	t.Parallel()
	w := newRepairWorld(t, false)
	err := w.command(vocab.CommandDelete, store.DeleteParams{})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("delete while a runs: %v", err)
	}
	if err := w.command(vocab.CommandDelete, store.DeleteParams{Force: true}); err != nil {
		t.Fatalf("forced delete: %v", err)
	}
	if killCount(w.p) != 1 {
		t.Fatalf("forced delete kills %v", w.p.Kills)
	}
	if _, err := w.b.st.GetRun(context.Background(), "r", "x"); err != nil {
		t.Fatalf("the run went before its attempt ended: %v", err)
	}
	// The stopped attempt ends: the pending deletion is applied in the same pass, with nothing
	// else to make the daemon read its pending commands again (it read them at every pass since).
	w.end("a", false)
	if _, err := w.b.st.GetRun(context.Background(), "r", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the run after its attempts ended: %v", err)
	}
	if _, ok := w.h.State().Runs[w.run.PK]; ok {
		t.Fatal("memory still holds the deleted run")
	}
	evs, n, err := w.b.st.ListEvents(context.Background(), store.EventFilter{DAGID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, string(e.Action)+"/"+e.Actor+"/"+e.Outcome)
	}
	slices.Reverse(got)
	want := []string{"trigger/api/ok", "delete_run/cli:test@host/conflict: task a of run x is running: wait for it, or delete with force",
		"delete_run/cli:test@host/ok"}
	if n != len(want) || !slices.Equal(got, want) {
		t.Fatalf("events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestTriggerNoteNamesItsAuthor: a note given with a trigger says who wrote it and when, as
// any other note does (§10.3).
func TestTriggerNoteNamesItsAuthor(t *testing.T) {
	t.Parallel()
	b := setup(t, "", map[string]string{"quick.yaml": "tasks:\n  - id: a\n    command: ['true']\n"})
	h, clock := b.harness(t, nil)
	trig, reply := h.Trigger(TriggerRequest{DAGID: "quick", RunID: "n1", Note: "rerun for the audit", Who: "api:10.0.0.7"})
	h.mustPass(t, trig)
	if r := <-reply; r.Err != nil {
		t.Fatal(r.Err)
	}
	r := b.mustRun(t, "quick", "n1")
	if r.Note != "rerun for the audit" || r.NoteBy != "api:10.0.0.7" || !r.NoteAt.Equal(clock.Now()) {
		t.Fatalf("note %q by %q at %v", r.Note, r.NoteBy, r.NoteAt)
	}
}
