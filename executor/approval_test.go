package executor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

const gateDAG = `dag_id: gate
max_active_tasks: 1
tasks:
  - id: approve
    approval: {timeout: 1h}
  - id: side
    bash: echo side
  - id: publish
    depends_on: [approve]
    bash: echo published
  - id: cleanup
    depends_on: [approve]
    trigger_rule: all_done
    bash: echo cleaned
`

// TestApprovalGates: a gate occupies no pool and no max_active_tasks slot; approving lets its
// downstream run; rejecting fails it (an all_done downstream still runs, the run fails); a timeout
// fails it. Who decided, when and the note are recorded. Pass by pass (Harness).
func TestApprovalGates(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		decide    func(t *testing.T, h *Harness, clock *FakeClock, run int64) []*attempt.Spec
		run       vocab.RunState
		gate      vocab.TaskState
		reason    string
		published vocab.TaskState
	}{
		{"approve", func(t *testing.T, h *Harness, _ *FakeClock, run int64) []*attempt.Spec {
			return command(t, h, store.Command{Kind: "approve", Run: run, TaskID: "approve", Who: "ana", Note: "looks good"})
		}, "success", "success", "approved by ana at 2026-03-01T12:00:00Z: looks good", "success"},
		{"reject", func(t *testing.T, h *Harness, _ *FakeClock, run int64) []*attempt.Spec {
			return command(t, h, store.Command{Kind: "reject", Run: run, TaskID: "approve", Who: "bo", Note: "not today"})
		}, "failed", "failed", "rejected by bo at 2026-03-01T12:00:00Z: not today", "upstream_failed"},
		{"timeout", func(t *testing.T, h *Harness, clock *FakeClock, _ int64) []*attempt.Spec {
			clock.Advance(time.Hour)
			return h.settle(t)
		}, "failed", "failed", "approval timeout 1h0m0s passed", "upstream_failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, "", map[string]string{"gate.yaml": gateDAG})
			h, clock := b.harness(t, nil)
			res, started := h.trigger(t, TriggerRequest{DAGID: "gate", RunID: "r"})
			pk := res.Run.PK
			// side runs although max_active_tasks is 1: the gate holds no slot.
			h.drain(t, specOf(t, started, "gate", "side"))
			if ti := b.tis(t, pk)["side"]; ti.State != "success" {
				t.Fatalf("side is %s beside the gate", ti.State)
			}
			if ti := b.tis(t, pk)["approve"]; ti.State != "awaiting_approval" {
				t.Fatalf("gate is %s", ti.State)
			}
			if _, err := b.st.LatestEntry(context.Background(), pk, "approve"); err == nil {
				t.Fatal("the gate has a queue entry")
			}
			h.drain(t, tc.decide(t, h, clock, pk)...)
			tis := b.tis(t, pk)
			if r := b.mustRun(t, "gate", "r"); r.State != tc.run {
				t.Errorf("run %s, want %s", r.State, tc.run)
			}
			if g := tis["approve"]; g.State != tc.gate || g.Reason != tc.reason || g.TryNumber != 1 {
				t.Errorf("gate %s %q try %d, want %s %q", g.State, g.Reason, g.TryNumber, tc.gate, tc.reason)
			}
			if tis["publish"].State != tc.published || tis["cleanup"].State != "success" {
				t.Errorf("publish %s cleanup %s", tis["publish"].State, tis["cleanup"].State)
			}
		})
	}
}

// command applies an operator command in a pass and returns the attempts the passes started;
// a refusal fails the test.
func command(t *testing.T, h *Harness, c store.Command) []*attempt.Spec {
	t.Helper()
	started, err := h.command(t, c)
	if err != nil {
		t.Fatal(err)
	}
	return started
}

// TestApprovalRefusals: deciding a gate that is not waiting is a conflict.
func TestApprovalRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, "", map[string]string{"gate.yaml": gateDAG})
	h, _ := b.harness(t, nil)
	res, started := h.trigger(t, TriggerRequest{DAGID: "gate", RunID: "r"})
	h.drain(t, specOf(t, started, "gate", "side"))
	_, err := h.command(t, store.Command{Kind: "approve", Run: res.Run.PK, TaskID: "side"})
	if err == nil || !strings.Contains(err.Error(), "not awaiting approval") {
		t.Fatalf("approve a finished task: %v", err)
	}
}
