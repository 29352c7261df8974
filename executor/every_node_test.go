package executor

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/executor/decide"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
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

// TestNodeRunRepairStaysWithItsDaemon (make chaos, seed 851747490, found it): a clear of an
// every_node run that ended on a daemon now away is not applied by another daemon — that one
// reopened the run as its own and ran the task on the wrong host. The command waits for the run's
// daemon, which applies it when it is back; the run stays bound to it.
func TestNodeRunRepairStaysWithItsDaemon(t *testing.T) {
	t.Parallel()
	b := setup(t, "", map[string]string{"sweep.yaml": `schedule: '@every 1h'
every_node: true
bash: 'true'
`})
	clock := NewFakeClock(t0)
	b.clock = clock
	const one, two = "host-a:/state/one", "host-b:/state/two"
	n1, n2 := b.nodeHarness(t, one, clock), b.nodeHarness(t, two, clock)
	n1.mustPass(t)
	n2.mustPass(t)
	plans := advance(t, clock, t0.Add(time.Hour), n1, n2)
	n1.mustPass(t, n1.End(startOf(t, plans[0], "sweep"), true, ""))
	n2.mustPass(t, n2.End(startOf(t, plans[1], "sweep"), true, ""))
	var ran store.Run
	for _, r := range b.runs(t, "sweep") {
		if r.Owner == one {
			ran = r
		}
	}
	if ran.State != vocab.RunSuccess {
		t.Fatalf("daemon one's run: %+v", ran)
	}

	// Daemon one goes away (its lease runs out while daemon two passes); a clear of its run is
	// queued in the store, as the API or the CLI queue a command for a run nobody alive holds.
	advance(t, clock, t0.Add(time.Hour+2*time.Minute), n2)
	c := store.Command{Kind: vocab.CommandClear, Run: ran.PK, Who: "cli:test@host", Params: `{"task_ids":["sweep"]}`}
	if err := b.st.WithTx(context.Background(), func(tx store.Tx) error { return tx.InsertCommand(&c, clock.Now()) }); err != nil {
		t.Fatal(err)
	}
	if p := n2.mustPass(t); len(p.Starts) != 0 {
		t.Fatalf("daemon two started %v: it applied the clear of daemon one's every_node run", started(p))
	}
	pending := func() bool {
		var has bool
		if err := b.st.WithTx(context.Background(), func(tx store.Tx) (err error) {
			has, err = tx.HasPendingCommand(ran.PK, vocab.CommandClear)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return has
	}
	if got := b.mustRun(t, "sweep", ran.RunID); got.Owner != one || got.State != vocab.RunSuccess || !pending() {
		t.Fatalf("with its daemon away the run is %s owned by %s (clear pending: %v), want success, one's, pending",
			got.State, got.Owner, pending())
	}

	// Daemon one is back: it applies the clear and runs the task itself.
	if p := n1.mustPass(t); !slices.Equal(started(p), []string{"sweep"}) {
		t.Fatalf("daemon one, back, starts %v", started(p))
	}
	if got := b.mustRun(t, "sweep", ran.RunID); got.Owner != one || got.State != vocab.RunRunning || pending() {
		t.Fatalf("after daemon one's pass the run is %s owned by %s (clear pending: %v)", got.State, got.Owner, pending())
	}
}

// TestDagsTestLeavesOthersRepairs (make chaos, seed 851747490, found it): a dags test process
// applied the clear of an ended run whose daemon was away, took the reopened run as its own and
// exited, leaving it queued for good under a dead test owner. A dags test process runs its own
// run only: the clear waits for a daemon, which applies it and runs the run.
func TestDagsTestLeavesOthersRepairs(t *testing.T) {
	t.Parallel()
	b := setup(t, "", map[string]string{"m.yaml": "bash: 'true'\n", "t.yaml": "bash: 'sleep 1'\n"})
	clock := NewFakeClock(t0)
	b.clock = clock
	n1 := b.nodeHarness(t, "host-a:/state/one", clock)
	trig, reply := n1.Trigger(TriggerRequest{DAGID: "m", RunID: "r"})
	p := n1.mustPass(t, trig)
	if r := <-reply; r.Err != nil {
		t.Fatal(r.Err)
	}
	n1.mustPass(t, n1.End(startOf(t, p, "m"), true, ""))
	ran := b.mustRun(t, "m", "r")
	if ran.State != vocab.RunSuccess {
		t.Fatalf("run r: %s", ran.State)
	}

	st, err := b.st.Reopen(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tester, err := NewHarness(context.Background(), Config{Store: st, Settings: b.cfg, DAGsDir: b.dagsDir,
		StateDir: b.stateDir, DaemonID: "test:host-a:7", Clock: clock, Test: &TestRun{DAGID: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tester.Stop() })
	advance(t, clock, t0.Add(2*time.Minute), tester) // daemon one's lease runs out
	c := store.Command{Kind: vocab.CommandClear, Run: ran.PK, Who: "cli:test@host", Params: `{"task_ids":["m"]}`}
	if err := b.st.WithTx(context.Background(), func(tx store.Tx) error { return tx.InsertCommand(&c, clock.Now()) }); err != nil {
		t.Fatal(err)
	}
	tester.mustPass(t)
	if got := b.mustRun(t, "m", "r"); got.State != vocab.RunSuccess || got.Owner != ran.Owner {
		t.Fatalf("after the dags test process's pass run r is %s owned by %s: it applied another run's clear", got.State, got.Owner)
	}
	n2 := b.nodeHarness(t, "host-b:/state/two", clock)
	if p := n2.mustPass(t); !slices.Equal(started(p), []string{"m"}) {
		t.Fatalf("a daemon starts %v, want the cleared m", started(p))
	}
	if got := b.mustRun(t, "m", "r"); got.Owner != "host-b:/state/two" {
		t.Fatalf("the cleared run is owned by %s", got.Owner)
	}
}
