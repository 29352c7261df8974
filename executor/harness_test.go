package executor

import (
	"context"
	"slices"
	"testing"

	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/executor/decide"
	"github.com/poolflow/poolflow/store"
)

// harness steps a daemon over the bundle by hand, on a fake clock at t0 (the bundle's, shared
// by its daemons).
func (b *bundle) harness(t testing.TB, mod func(*Config)) (*Harness, *FakeClock) {
	t.Helper()
	clock, ok := b.clock.(*FakeClock)
	if !ok {
		clock = NewFakeClock(t0)
		b.clock = clock
	}
	cfg := Config{Store: b.st, Settings: b.cfg, DAGsDir: b.dagsDir, StateDir: b.stateDir, DaemonID: "harness-" + t.Name(),
		Clock: clock}
	if mod != nil {
		mod(&cfg)
	}
	h, err := NewHarness(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Stop() })
	return h, clock
}

// pass runs one pass and fails the test on error.
func (h *Harness) mustPass(t testing.TB, events ...any) *decide.Plan {
	t.Helper()
	p, err := h.Passes(events...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// started names the tasks a plan starts, in order.
func started(p *decide.Plan) []string {
	var out []string
	for _, s := range p.Starts {
		out = append(out, s.Task.ID)
	}
	return out
}

func startOf(t testing.TB, p *decide.Plan, task string) *attempt.Spec {
	t.Helper()
	for _, s := range p.Starts {
		if s.Task.ID == task {
			return s
		}
	}
	t.Fatalf("%s not started: %v", task, started(p))
	return nil
}

// TestSpecExample is §4.4's example, pass by pass: max_running 2, pool db of 1; a{db:1},
// b{db:1}, c{} in one run at equal priority: the first pass admits a and c; after a finishes,
// the next pass admits b.
func TestSpecExample(t *testing.T) {
	t.Parallel()
	b := setup(t, "max_running: 2\npools:\n  db: 1\n", map[string]string{"x.yaml": `dag_id: x
tasks:
  - {id: a, bash: 'true', pool_requirements: {db: 1}}
  - {id: b, bash: 'true', pool_requirements: {db: 1}}
  - {id: c, bash: 'true'}
`})
	h, _ := b.harness(t, nil)
	trig, reply := h.Trigger(TriggerRequest{DAGID: "x", RunID: "r"})
	p := h.mustPass(t, trig)
	if got := started(p); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("first pass starts %v, want [a c]", got)
	}
	if r := <-reply; r.Err != nil || !r.Res.Queued {
		t.Fatalf("trigger answered %+v", r)
	}
	p = h.mustPass(t, h.End(startOf(t, p, "a"), true, ""))
	if got := started(p); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("after a ends the pass starts %v, want [b]", got)
	}
}

// settle runs Harness.Settle and fails the test on error; it returns the attempts the passes
// started, in order.
func (h *Harness) settle(t testing.TB, events ...any) []*attempt.Spec {
	t.Helper()
	plans, err := h.Settle(events...)
	if err != nil {
		t.Fatal(err)
	}
	var out []*attempt.Spec
	for _, p := range plans {
		out = append(out, p.Starts...)
	}
	return out
}

// succeed ends the attempts successfully in one pass, settles, and returns what the passes
// started.
func (h *Harness) succeed(t testing.TB, specs ...*attempt.Spec) []*attempt.Spec {
	t.Helper()
	var evs []any
	for _, s := range specs {
		evs = append(evs, h.End(s, true, ""))
	}
	return h.settle(t, evs...)
}

// drain runs the attempts and every attempt they lead to: each ends successfully as soon as
// it starts, pass after pass, until a pass starts nothing.
func (h *Harness) drain(t testing.TB, specs ...*attempt.Spec) {
	t.Helper()
	for len(specs) > 0 {
		specs = h.succeed(t, specs...)
	}
}

// tasks names the tasks of attempts, in order.
func tasks(specs []*attempt.Spec) []string {
	out := []string{}
	for _, s := range specs {
		out = append(out, s.DAGID+"."+s.Task.ID)
	}
	return out
}

// specOf finds the attempt of dag.task among specs.
func specOf(t testing.TB, specs []*attempt.Spec, dagID, taskID string) *attempt.Spec {
	t.Helper()
	for _, s := range specs {
		if s.DAGID == dagID && s.Task.ID == taskID {
			return s
		}
	}
	t.Fatalf("%s.%s not started: %v", dagID, taskID, tasks(specs))
	return nil
}

// reply reads a trigger's answer, which a committed pass has given.
func reply(t testing.TB, ch <-chan decide.TriggerReply) decide.TriggerReply {
	t.Helper()
	select {
	case r := <-ch:
		return r
	default:
		t.Fatal("the trigger was not answered by the pass")
		return decide.TriggerReply{}
	}
}

// outcome reads a command's outcome, which a committed pass has given.
func outcome(t testing.TB, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	default:
		t.Fatal("the command was not answered by the pass")
		return nil
	}
}

// trigger starts a manual run in a pass, settles, and returns the answer and the attempts the
// passes started; an error answer fails the test.
func (h *Harness) trigger(t testing.TB, req TriggerRequest) (TriggerResult, []*attempt.Spec) {
	t.Helper()
	ev, ch := h.Trigger(req)
	started := h.settle(t, ev)
	r := reply(t, ch)
	if r.Err != nil {
		t.Fatalf("trigger %s %s: %v", req.DAGID, req.RunID, r.Err)
	}
	return r.Res, started
}

// command applies an operator command in a pass, settles, and returns its outcome and the
// attempts the passes started.
func (h *Harness) command(t testing.TB, c store.Command) ([]*attempt.Spec, error) {
	t.Helper()
	ev, ch := h.Command(c)
	started := h.settle(t, ev)
	return started, outcome(t, ch)
}
