package executor

import (
	"fmt"
	"testing"

	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// stateDAG puts a run's tasks in each state a task instance can have: run runs (and holds p),
// wait waits for p, ok succeeded, bad failed, retry is up for retry (1 h), after is
// upstream_failed (after bad), skip is skipped by its trigger rule (all_failed, after ok), gate
// awaits approval, later is none (after run).
const stateDAG = `dag_id: m
tasks:
  - {id: run, bash: 'true', pool_requirements: {p: 1}}
  - {id: wait, bash: 'true', pool_requirements: {p: 1}}
  - {id: ok, bash: 'true'}
  - {id: bad, bash: 'true'}
  - {id: retry, bash: 'true', retries: 1, retry_delay: 1h}
  - {id: after, bash: 'true', depends_on: [bad]}
  - {id: skip, bash: 'true', depends_on: [ok], trigger_rule: all_failed}
  - {id: gate, approval: {}}
  - {id: later, bash: 'true', depends_on: [run]}
`

// stateWorld is a run of stateDAG with every task in its state, stepped by hand.
func stateWorld(t *testing.T) *repairWorld {
	t.Helper()
	b := setup(t, "pools:\n  p: 1\n", map[string]string{"m.yaml": stateDAG})
	h, _ := b.harness(t, nil)
	w := &repairWorld{t: t, b: b, h: h, running: map[int64]*attempt.Spec{}}
	trig, reply := h.Trigger(TriggerRequest{DAGID: "m", RunID: "x"})
	w.pass(trig)
	r := <-reply
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	w.run = r.Res.Run
	w.end("ok", true)
	w.end("bad", false)
	w.end("retry", false)
	for task, st := range map[string]vocab.TaskState{"run": vocab.TaskRunning, "wait": vocab.TaskScheduled,
		"ok": vocab.TaskSuccess, "bad": vocab.TaskFailed, "retry": vocab.TaskUpForRetry, "after": vocab.TaskUpstreamFailed,
		"skip": vocab.TaskSkipped, "gate": vocab.TaskAwaitingApproval, "later": vocab.TaskNone} {
		if ti := w.ti(task); ti.State != st {
			t.Fatalf("setting up: %s is %s, want %s", task, ti.State, st)
		}
	}
	return w
}

// TestRepairStateMachine: each state a task instance can be in × clear and the three marks
// (§10.1, §10.2), applied to that one task: its state (and try) after the command's pass,
// whether its attempt was stopped, and — for a running one — its state once the stopped attempt
// ended; and what the tasks after it do (downstream follows its trigger rule).
func TestRepairStateMachine(t *testing.T) {
	t.Parallel()
	type want struct {
		st    vocab.TaskState
		try   int
		kill  bool
		ended vocab.TaskState // a running task's state once its stopped attempt ended
	}
	type next struct { // a task downstream of the one changed, after the pass
		task string
		st   vocab.TaskState
	}
	cases := []struct {
		task   string
		action string // clear, or the state marked
		want   want
		next   *next
	}{
		// Clear: back to none, then as its trigger rule and the pools say, in the same pass.
		{"run", "clear", want{vocab.TaskRunning, 1, true, vocab.TaskRunning}, nil}, // try 2 takes p once try 1 ended
		{"wait", "clear", want{vocab.TaskScheduled, 0, false, ""}, nil},            // waits for p again, due at the clear
		// A clear takes its selection only (as Airflow's): skip stays as it was, until cleared.
		{"ok", "clear", want{vocab.TaskRunning, 2, false, ""}, &next{"skip", vocab.TaskSkipped}},
		{"bad", "clear", want{vocab.TaskRunning, 2, false, ""}, nil},
		{"retry", "clear", want{vocab.TaskRunning, 2, false, ""}, nil}, // runs again at once
		{"after", "clear", want{vocab.TaskUpstreamFailed, 0, false, ""}, nil},
		{"skip", "clear", want{vocab.TaskSkipped, 0, false, ""}, nil},
		{"gate", "clear", want{vocab.TaskAwaitingApproval, 1, false, ""}, nil}, // a new decision
		{"later", "clear", want{vocab.TaskNone, 0, false, ""}, nil},

		// Mark success: no further try; downstream follows its trigger rule.
		{"run", "success", want{vocab.TaskRunning, 1, true, vocab.TaskSuccess}, nil},
		{"wait", "success", want{vocab.TaskSuccess, 0, false, ""}, nil},
		{"ok", "success", want{vocab.TaskSuccess, 1, false, ""}, nil},
		{"bad", "success", want{vocab.TaskSuccess, 1, false, ""}, &next{"after", vocab.TaskRunning}},
		{"retry", "success", want{vocab.TaskSuccess, 1, false, ""}, nil},
		{"after", "success", want{vocab.TaskSuccess, 0, false, ""}, nil},
		{"skip", "success", want{vocab.TaskSuccess, 0, false, ""}, nil},
		{"gate", "success", want{vocab.TaskSuccess, 1, false, ""}, nil},
		{"later", "success", want{vocab.TaskSuccess, 0, false, ""}, nil},

		// Mark failed.
		{"run", "failed", want{vocab.TaskRunning, 1, true, vocab.TaskFailed}, nil},
		{"wait", "failed", want{vocab.TaskFailed, 0, false, ""}, nil},
		{"ok", "failed", want{vocab.TaskFailed, 1, false, ""}, &next{"skip", vocab.TaskRunning}},
		{"bad", "failed", want{vocab.TaskFailed, 1, false, ""}, nil},
		{"retry", "failed", want{vocab.TaskFailed, 1, false, ""}, nil},
		{"after", "failed", want{vocab.TaskFailed, 0, false, ""}, nil},
		{"skip", "failed", want{vocab.TaskFailed, 0, false, ""}, nil},
		{"gate", "failed", want{vocab.TaskFailed, 1, false, ""}, nil},
		{"later", "failed", want{vocab.TaskFailed, 0, false, ""}, nil},

		// Mark skipped.
		{"run", "skipped", want{vocab.TaskRunning, 1, true, vocab.TaskSkipped}, nil},
		{"wait", "skipped", want{vocab.TaskSkipped, 0, false, ""}, nil},
		{"ok", "skipped", want{vocab.TaskSkipped, 1, false, ""}, &next{"skip", vocab.TaskSkipped}},
		{"bad", "skipped", want{vocab.TaskSkipped, 1, false, ""}, &next{"after", vocab.TaskSkipped}},
		{"retry", "skipped", want{vocab.TaskSkipped, 1, false, ""}, nil},
		{"after", "skipped", want{vocab.TaskSkipped, 0, false, ""}, nil},
		{"skip", "skipped", want{vocab.TaskSkipped, 0, false, ""}, nil},
		{"gate", "skipped", want{vocab.TaskSkipped, 1, false, ""}, nil},
		{"later", "skipped", want{vocab.TaskSkipped, 0, false, ""}, nil},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s %s", c.action, c.task), func(t *testing.T) {
			t.Parallel()
			w := stateWorld(t)
			var err error
			if c.action == "clear" {
				err = w.command(vocab.CommandClear, store.ClearParams{TaskIDs: []string{c.task}})
			} else {
				err = w.command(vocab.CommandMark, store.MarkParams{State: c.action, TaskIDs: []string{c.task}})
			}
			if err != nil {
				t.Fatal(err)
			}
			if ti := w.ti(c.task); ti.State != c.want.st || ti.TryNumber != c.want.try {
				t.Errorf("after the command: %s try %d (%q), want %s try %d", ti.State, ti.TryNumber, ti.Reason, c.want.st, c.want.try)
			}
			if kill := len(w.p.Kills) > 0; kill != c.want.kill {
				t.Errorf("attempt stopped: %v, want %v", kill, c.want.kill)
			}
			if c.next != nil {
				if ti := w.ti(c.next.task); ti.State != c.next.st {
					t.Errorf("%s after it: %s (%q), want %s", c.next.task, ti.State, ti.Reason, c.next.st)
				}
			}
			if c.want.ended != "" {
				w.end(c.task, false) // killed
				if ti := w.ti(c.task); ti.State != c.want.ended {
					t.Errorf("once the stopped attempt ended: %s try %d, want %s", ti.State, ti.TryNumber, c.want.ended)
				}
			}
		})
	}
}
