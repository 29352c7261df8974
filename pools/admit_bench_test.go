package pools

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/poolflow/poolflow/vocab"
)

// benchSnapshot is a busy daemon: n waiting entries over 20 named pools (a quarter strict),
// each needing 1–3 of them plus _global and its run's max_active_tasks, with pools half held.
func benchSnapshot(n int) *Snapshot {
	rng := rand.New(rand.NewPCG(uint64(n), 42))
	s := &Snapshot{Pools: map[string]Pool{}, Holders: map[string][]Holder{}}
	var named []string
	for i := range 20 {
		name := fmt.Sprintf("pool%02d", i)
		p := Pool{Name: name, Slots: 1 + rng.IntN(20), Ordering: vocab.Backfill, StarvationAfter: 10 * time.Minute}
		if i%4 == 0 {
			p.Ordering, p.StarvationAfter = vocab.Strict, 0
		}
		s.Pools[name] = p
		named = append(named, name)
	}
	s.Pools[GlobalPool] = Implicit(GlobalPool, 256)
	runs := max(1, n/50)
	for r := range runs {
		name := fmt.Sprintf("%sdag%d/run%d", DAGPoolPrefix, r%40, r)
		s.Pools[name] = Implicit(name, 16)
	}
	holder := int64(1 << 40)
	for _, name := range named {
		for range s.Pools[name].Slots / 2 {
			s.Holders[name] = append(s.Holders[name], Holder{Entry: holder, Label: "held try 1", Slots: 1})
			s.Holders[GlobalPool] = append(s.Holders[GlobalPool], Holder{Entry: holder, Label: "held try 1", Slots: 1})
			holder++
		}
	}
	now := t0
	s.Entries = make([]Entry, n)
	for i := range s.Entries {
		e := &s.Entries[i]
		e.ID = int64(i + 1)
		e.Label = fmt.Sprintf("dag.task%d try 1", i)
		e.Priority = rng.IntN(10)
		e.Due = now.Add(-time.Duration(rng.IntN(3600)) * time.Second)
		if rng.IntN(10) == 0 {
			e.Deadline = e.Due.Add(time.Duration(30+rng.IntN(3600)) * time.Second)
		}
		for _, p := range rng.Perm(len(named))[:1+rng.IntN(3)] {
			e.Needs = append(e.Needs, Need{Pool: named[p], Slots: 1 + rng.IntN(2)})
		}
		r := rng.IntN(runs)
		e.Needs = append(e.Needs, Need{Pool: GlobalPool, Slots: 1},
			Need{Pool: fmt.Sprintf("%sdag%d/run%d", DAGPoolPrefix, r%40, r), Slots: 1})
		if rng.IntN(50) == 0 {
			e.Block = BlockPaused
		}
	}
	return s
}

func BenchmarkAdmit(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			s := benchSnapshot(n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				Admit(s, t0)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/entry")
		})
	}
}

// TestAdmitBenchSnapshot keeps the benchmark's world meaningful: some admitted, most waiting.
func TestAdmitBenchSnapshot(t *testing.T) {
	t.Parallel()
	d := Admit(benchSnapshot(1000), t0)
	if len(d.Admitted) == 0 || d.Waiting() < 500 {
		t.Fatalf("admitted %d, waiting %d", len(d.Admitted), d.Waiting())
	}
}
