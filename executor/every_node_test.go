package executor

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/executor/decide"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/vocab"
)

// nodeHarness is a daemon over the bundle's store with a handle of its own (as a daemon has: it
// tells another's commits from its own by the handle), on a shared clock.
func (b *bundle) nodeHarness(t *testing.T, id string, clock *FakeClock) *Harness {
	t.Helper()
	st, err := b.st.Reopen(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h, err := NewHarness(context.Background(), Config{Store: st, Settings: b.cfg, DAGsDir: b.dagsDir,
		StateDir: b.stateDir, DaemonID: id, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Stop() })
	return h
}

// advance moves the clock to at in steps of 10 s, each daemon passing at every step (so renewing
// its lease), and returns each daemon's last plan.
func advance(t *testing.T, clock *FakeClock, at time.Time, hs ...*Harness) []*decide.Plan {
	t.Helper()
	plans := make([]*decide.Plan, len(hs))
	for now := clock.Now(); now.Before(at); {
		now = now.Add(10 * time.Second)
		if now.After(at) {
			now = at
		}
		clock.Set(now)
		for i, h := range hs {
			plans[i] = h.mustPass(t)
		}
	}
	return plans
}

// nodeRuns are a plan's daemon's every_node runs in memory, by run id.
func nodeRuns(h *Harness, dagID string) map[string]vocab.RunState {
	out := map[string]vocab.RunState{}
	for _, r := range h.State().Runs {
		if r.DAGID == dagID && r.RunType == vocab.RunNode && r.Owner == h.l.cfg.DaemonID {
			out[r.RunID] = r.State
		}
	}
	return out
}

// TestEveryNodeFiresOnEachDaemon (issue 25): an every_node job fires on every daemon, each fire
// a node run bound to the daemon that fired it, named for it; max_active_runs counts each
// daemon's runs alone, while the pool the job needs is shared: the second daemon's fire waits
// for the slot the first one's holds.
func TestEveryNodeFiresOnEachDaemon(t *testing.T) {
	t.Parallel()
	b := setup(t, "pools:\n  db: 1\n", map[string]string{"sweep.yaml": `schedule: '@every 1m'
every_node: true
max_active_runs: 1
bash: 'true'
pool_requirements: {db: 1}
`})
	clock := NewFakeClock(t0)
	b.clock = clock
	n1, n2 := b.nodeHarness(t, "host-a:/state/one", clock), b.nodeHarness(t, "host-b:/state/two", clock)
	for _, h := range []*Harness{n1, n2} {
		if p := h.mustPass(t); len(p.Starts) != 0 {
			t.Fatalf("a daemon's first pass fired: %v", started(p))
		}
	}
	if w := n1.Wake(); w.IsZero() || w.After(t0.Add(time.Minute)) {
		t.Fatalf("next wake-up %v, after the fire at t0+1m", w)
	}

	plans := advance(t, clock, t0.Add(time.Minute), n1, n2)
	p1, p2 := plans[0], plans[1]
	if got := started(p1); !slices.Equal(got, []string{"sweep"}) {
		t.Fatalf("daemon one starts %v at the fire", got)
	}
	if len(p2.Starts) != 0 {
		t.Fatalf("daemon two started %v while the pool's one slot is held", started(p2))
	}
	r1, r2 := nodeRuns(n1, "sweep"), nodeRuns(n2, "sweep")
	if len(r1) != 1 || len(r2) != 1 {
		t.Fatalf("node runs: one %v, two %v", r1, r2)
	}
	for id := range r1 {
		if !strings.HasPrefix(id, "node__") || !strings.Contains(id, "__host-a-") {
			t.Errorf("daemon one's run id %q does not name its host", id)
		}
	}
	for id, st := range r2 {
		if !strings.Contains(id, "__host-b-") {
			t.Errorf("daemon two's run id %q does not name its host", id)
		}
		if st != vocab.RunRunning {
			t.Errorf("daemon two's run is %s: daemon one's running run counted toward its max_active_runs", st)
		}
	}
	for _, le := range n2.State().Entries {
		if le.Run.Owner != "host-b:/state/two" || le.State != vocab.EntryWaiting {
			continue
		}
		why, ok := pools.Admit(n2.State().Queue().Snapshot(), clock.Now()).Reason(le.ID)
		if !ok || why.Kind != vocab.ReasonPoolFull || why.Pool != "db" {
			t.Errorf("daemon two's fire waits because %+v, want the pool db (shared, not node_unavailable)", why)
		}
	}

	// The next fire on daemon one waits for its own previous run (max_active_runs 1 per daemon);
	// daemon two's earlier run does not count toward it.
	p1b := advance(t, clock, t0.Add(2*time.Minute), n1, n2)[0]
	if len(p1b.Starts) != 0 {
		t.Fatalf("daemon one started %v while its previous run runs", started(p1b))
	}
	queued := 0
	for _, st := range nodeRuns(n1, "sweep") {
		if st == vocab.RunQueued {
			queued++
		}
	}
	if queued != 1 {
		t.Fatalf("daemon one's runs %v, want one queued behind its running one", nodeRuns(n1, "sweep"))
	}

	// Daemon one's attempt ends: its slot goes to the oldest waiting fire, daemon two's.
	n1.mustPass(t, n1.End(startOf(t, p1, "sweep"), true, ""))
	if p := n2.mustPass(t); !slices.Equal(started(p), []string{"sweep"}) {
		t.Fatalf("daemon two starts %v once the slot is free", started(p))
	}
}
