package executor

import (
	"context"
	"slices"
	"testing"

	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/executor/decide"
)

// harness steps a daemon over the bundle by hand, on a fake clock at t0.
func (b *bundle) harness(t testing.TB, mod func(*Config)) (*Harness, *FakeClock) {
	t.Helper()
	clock := NewFakeClock(t0)
	b.clock = clock
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
