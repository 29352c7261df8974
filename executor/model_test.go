package executor

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/executor/decide"
	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/storetest"
	"github.com/poolflow/poolflow/vocab"
	"pgregory.net/rapid"
)

// modelDAGs are the DAGs the model runs: pools that more than one task needs at once, a
// strict pool, a retry, a per-task limit shared by every run of the task, a chain that a
// failure cuts.
var modelDAGs = map[string]string{
	"m1.yaml": `dag_id: m1
tasks:
  - {id: a, bash: 'true', pool_requirements: {db: 1}}
  - {id: b, bash: 'true', depends_on: [a], pool_requirements: {db: 1, wh: 2}}
  - {id: c, bash: 'true', max_active_tis_per_dag: 1}
`,
	"m2.yaml": `dag_id: m2
default_args: {retries: 1, retry_delay: 10s}
tasks:
  - {id: x, bash: 'true', pool_requirements: {wh: 1}}
  - {id: y, bash: 'true', depends_on: [x], pool_requirements: {st: 1}}
  - {id: z, bash: 'true', depends_on: [x], trigger_rule: all_done}
`,
}

const modelConfig = `max_running: 3
pools:
  db: 1
  wh: {slots: 2}
  st: {slots: 1, ordering: strict}
  default: 3
`

// modelWorld steps a daemon through random operations with the Harness and checks, after every
// pass, what must hold whatever the operations: memory is what the store holds (apply wrote
// exactly what decide changed), no pool holds more than its capacity, an admitted entry holds
// every pool it needs (never part of them), and no attempt starts twice while it runs.
type modelWorld struct {
	t       *testing.T
	b       *bundle
	h       *Harness
	clock   *FakeClock
	other   store.Store // another process's handle: its commits are outside changes
	running map[int64]*attempt.Spec
	runs    int
}

func newModelWorld(t *testing.T, rt *rapid.T, n int) *modelWorld {
	dir := t.TempDir()
	b := &bundle{dir: dir, dagsDir: filepath.Join(dir, "dags"), stateDir: filepath.Join(dir, "state"),
		notices: make(chan Notice, 16)}
	for _, d := range []string{b.dagsDir, b.stateDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			rt.Fatal(err)
		}
	}
	for name, body := range modelDAGs {
		if err := os.WriteFile(filepath.Join(b.dagsDir, name), []byte(body), 0o644); err != nil {
			rt.Fatal(err)
		}
	}
	cfg, err := config.Parse("poolflow.yaml", []byte(modelConfig))
	if err != nil {
		rt.Fatal(err)
	}
	b.cfg = cfg
	b.st = storetest.Open(t, filepath.Join(b.stateDir, fmt.Sprintf("m%d.db", n)), store.Options{Synchronous: "off"})
	other, err := b.st.Reopen(context.Background())
	if err != nil {
		rt.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	clock := NewFakeClock(t0)
	b.clock = clock
	h, err := NewHarness(context.Background(), Config{Store: b.st, Settings: cfg, DAGsDir: b.dagsDir, StateDir: b.stateDir,
		DaemonID: "model", Clock: clock})
	if err != nil {
		rt.Fatal(err)
	}
	t.Cleanup(func() { h.Stop() })
	return &modelWorld{t: t, b: b, h: h, clock: clock, other: other, running: map[int64]*attempt.Spec{}}
}

// pass runs one pass with events and checks the invariants.
func (w *modelWorld) pass(rt *rapid.T, events ...any) *decide.Plan {
	p, err := w.h.Passes(events...)
	if err != nil {
		rt.Fatalf("pass: %v", err)
	}
	for _, s := range p.Starts {
		if prev, ok := w.running[s.Entry]; ok {
			rt.Fatalf("entry %d (%s try %d) started again while it runs (try %d)", s.Entry, s.Task.ID, s.Try, prev.Try)
		}
		w.running[s.Entry] = s
	}
	w.check(rt)
	return p
}

func (w *modelWorld) check(rt *rapid.T) {
	ctx := context.Background()
	st := w.b.st
	// No pool over its capacity; no admitted entry with part of its claims.
	claims, err := st.ListClaims(ctx)
	if err != nil {
		rt.Fatal(err)
	}
	ps, _ := st.ListPools(ctx)
	capacity := map[string]int{}
	for _, p := range ps {
		capacity[p.Name] = p.Slots
	}
	held := map[string]int{}
	byEntry := map[int64][]string{}
	for _, c := range claims {
		held[c.Pool] += c.Slots
		byEntry[c.Entry] = append(byEntry[c.Entry], c.Pool)
	}
	entries, err := st.ListEntries(ctx, vocab.EntryWaiting, vocab.EntryAdmitted)
	if err != nil {
		rt.Fatal(err)
	}
	for _, e := range entries {
		for _, n := range e.Needs {
			if n.Implicit {
				capacity[n.Pool] = n.Capacity
			}
		}
		if e.State != vocab.EntryAdmitted {
			continue
		}
		var want []string
		for _, n := range e.Needs {
			want = append(want, n.Pool)
		}
		got := byEntry[e.ID]
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			rt.Fatalf("admitted entry %d (%s) holds %v, needs %v", e.ID, e.Label, got, want)
		}
		if w.running[e.ID] == nil {
			rt.Fatalf("admitted entry %d (%s) runs no attempt", e.ID, e.Label)
		}
	}
	for pool, n := range held {
		if c, ok := capacity[pool]; ok && c >= 0 && n > c {
			rt.Fatalf("pool %s holds %d slots, capacity %d", pool, n, c)
		}
	}
	// The pass left nothing the full walk would admit now: its decision was complete.
	flags, _ := st.ListDAGStates(ctx)
	snap := &pools.Snapshot{Pools: map[string]pools.Pool{}, Holders: map[string][]pools.Holder{}}
	for _, p := range ps {
		snap.Pools[p.Name] = explain.Pool(p)
	}
	for pool, c := range capacity {
		if _, named := snap.Pools[pool]; !named {
			snap.Pools[pool] = pools.Implicit(pool, c)
		}
	}
	for _, c := range claims {
		snap.Holders[c.Pool] = append(snap.Holders[c.Pool], pools.Holder{Entry: c.Entry, Label: c.Label, Slots: c.Slots})
	}
	for i := range entries {
		if e := &entries[i]; e.State == vocab.EntryWaiting {
			block := pools.NotBlocked
			if flags[e.DAGID].Paused {
				block = pools.BlockPaused
			}
			snap.Entries = append(snap.Entries, explain.Entry(e, block))
		}
	}
	if dec := pools.Admit(snap, w.clock.Now()); len(dec.Admitted) > 0 {
		rt.Fatalf("entries %v wait although the full walk admits them now", dec.Admitted)
	}
	// Memory is what the store holds: every open run, its task instances, its entries.
	mem := w.h.State()
	open := map[int64]store.Run{}
	for _, id := range []string{"m1", "m2"} {
		runs, _, err := st.ListRuns(ctx, id, 1000, 0)
		if err != nil {
			rt.Fatal(err)
		}
		for _, r := range runs {
			if r.State.Open() {
				open[r.PK] = r
			}
		}
	}
	if got, want := slices.Sorted(maps.Keys(mem.Runs)), slices.Sorted(maps.Keys(open)); !slices.Equal(got, want) {
		rt.Fatalf("memory holds runs %v, the store's open runs are %v", got, want)
	}
	for pk, lr := range mem.Runs {
		if lr.State != open[pk].State {
			rt.Fatalf("run %s: memory %s, store %s", lr.RunID, lr.State, open[pk].State)
		}
		tis, err := st.ListTaskInstances(ctx, pk)
		if err != nil {
			rt.Fatal(err)
		}
		if len(tis) != len(lr.TIs) {
			rt.Fatalf("run %s: %d task instances in memory, %d stored", lr.RunID, len(lr.TIs), len(tis))
		}
		for _, row := range tis {
			m := lr.TIs[row.TaskID].TaskInstance
			if m.State != row.State || m.TryNumber != row.TryNumber || m.Reason != row.Reason ||
				m.ReasonCode != row.ReasonCode || !m.NextAt.Equal(row.NextAt) {
				rt.Fatalf("run %s task %s: memory %+v, store %+v", lr.RunID, row.TaskID, m, row)
			}
		}
	}
	stored := map[int64]store.Entry{}
	for _, e := range entries {
		if _, ok := open[e.Run]; ok {
			stored[e.ID] = e
		}
	}
	if got, want := slices.Sorted(maps.Keys(mem.Entries)), slices.Sorted(maps.Keys(stored)); !slices.Equal(got, want) {
		rt.Fatalf("memory holds entries %v, the store %v", got, want)
	}
	for id, le := range mem.Entries {
		if e := stored[id]; le.State != e.State || le.TryNumber != e.TryNumber || le.TI == nil || le.TI.Entry != le {
			rt.Fatalf("entry %d: memory %s try %d, store %s try %d", id, le.State, le.TryNumber, e.State, e.TryNumber)
		}
	}
}

// TestDecisionModel drives the decision through random triggers, attempt ends (success and
// failure), the clock, pauses written by another process and operator commands, and checks
// after every pass what must always hold (modelWorld).
func TestDecisionModel(t *testing.T) {
	t.Parallel()
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		n++
		w := newModelWorld(t, rt, n)
		w.pass(rt)
		rt.Repeat(map[string]func(*rapid.T){
			"trigger": func(rt *rapid.T) {
				dag := rapid.SampledFrom([]string{"m1", "m2"}).Draw(rt, "dag")
				w.runs++
				trig, reply := w.h.Trigger(TriggerRequest{DAGID: dag, RunID: fmt.Sprintf("r%d", w.runs)})
				w.pass(rt, trig)
				if r := <-reply; r.Err != nil {
					rt.Fatalf("trigger %s: %v", dag, r.Err)
				}
			},
			"end": func(rt *rapid.T) {
				if len(w.running) == 0 {
					rt.Skip("nothing runs")
				}
				id := rapid.SampledFrom(slices.Sorted(maps.Keys(w.running))).Draw(rt, "entry")
				ok := rapid.Bool().Draw(rt, "ok")
				s := w.running[id]
				delete(w.running, id)
				w.pass(rt, w.h.End(s, ok, "exit status 1"))
			},
			"clock": func(rt *rapid.T) {
				w.clock.Advance(time.Duration(rapid.IntRange(1, 30).Draw(rt, "seconds")) * time.Second)
				w.pass(rt)
			},
			"pause": func(rt *rapid.T) {
				dag := rapid.SampledFrom([]string{"m1", "m2"}).Draw(rt, "dag")
				paused := rapid.Bool().Draw(rt, "paused")
				if err := w.other.WithTx(context.Background(), func(tx store.Tx) error {
					return tx.SetPaused(dag, paused, w.clock.Now())
				}); err != nil {
					rt.Fatal(err)
				}
				w.pass(rt)
			},
			"command": func(rt *rapid.T) {
				mem := w.h.State()
				if len(mem.Runs) == 0 {
					rt.Skip("no open run")
				}
				pk := rapid.SampledFrom(slices.Sorted(maps.Keys(mem.Runs))).Draw(rt, "run")
				run := mem.Runs[pk]
				task := rapid.SampledFrom(slices.Sorted(maps.Keys(run.TIs))).Draw(rt, "task")
				kind := rapid.SampledFrom([]vocab.CommandKind{vocab.CommandFail, vocab.CommandCancel,
					vocab.CommandForce}).Draw(rt, "kind")
				cmd, reply := w.h.Command(store.Command{Kind: kind, Run: pk, TaskID: task, Who: "model"})
				w.pass(rt, cmd)
				<-reply // refusals are fine: the command may not apply to the task's state
			},
		})
	})
}
