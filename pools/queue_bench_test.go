package pools

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// benchWorld is benchSnapshot's busy daemon in the steady state of a loop, with _global
// holding all but free slots: no entry needs more than a pool's capacity or is past its
// deadline (the loop has rejected or expired those).
func benchWorld(n, free int) *Snapshot {
	s := benchSnapshot(n)
	for i := range s.Entries {
		e := &s.Entries[i]
		for j := range e.Needs {
			e.Needs[j].Slots = min(e.Needs[j].Slots, s.Pools[e.Needs[j].Pool].Slots)
		}
		if !e.Deadline.IsZero() && e.Deadline.Before(t0) {
			e.Deadline = t0.Add(e.Deadline.Sub(e.Due))
		}
	}
	held := 0
	for _, h := range s.Holders[GlobalPool] {
		held += h.Slots
	}
	for id := int64(1 << 50); held < s.Pools[GlobalPool].Slots-free; id++ {
		s.Holders[GlobalPool] = append(s.Holders[GlobalPool], Holder{Entry: id, Label: "busy try 1", Slots: 1})
		held++
	}
	return s
}

// queueOf builds a queue holding s and runs its first pass, which looks at every entry once
// and files each under a pool it waits on: the state a long-running loop is in.
func queueOf(s *Snapshot) *Queue {
	q := NewQueue()
	for _, p := range s.Pools {
		q.SetPool(p)
	}
	for pool, hs := range s.Holders {
		for _, h := range hs {
			q.AddHolder(pool, h)
		}
	}
	for _, e := range s.Entries {
		q.Put(e)
	}
	q.Pass(t0)
	return q
}

var benchSizes = []int{1_000, 10_000, 100_000}

// BenchmarkAdmitFull is the full walk over the worlds of BenchmarkQueuePass.
func BenchmarkAdmitFull(b *testing.B) {
	for _, world := range []struct {
		name string
		free int
	}{{"global_full", 0}, {"room", 4}} {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/entries=%d", world.name, n), func(b *testing.B) {
				s := benchWorld(n, world.free)
				b.ReportAllocs()
				for b.Loop() {
					Admit(s, t0)
				}
			})
		}
	}
}

// BenchmarkQueuePass measures the incremental pass of a daemon with n waiting entries:
//   - global_full: _global is full, so nothing can be admitted;
//   - room: _global has 4 free slots: a few entries are admitted, then the pass must stop;
//   - release: _global and one named pool are full and a running attempt ends, releasing
//     its slot in both: the pass admits the next entry (the release is undone after each
//     pass, which is not applied, so every pass is the same).
func BenchmarkQueuePass(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("global_full/entries=%d", n), func(b *testing.B) {
			q := queueOf(benchWorld(n, 0))
			b.ReportAllocs()
			for b.Loop() {
				if d := q.Pass(t0); len(d.Admitted) != 0 {
					b.Fatalf("admitted %v with _global full", d.Admitted)
				}
			}
		})
	}
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("room/entries=%d", n), func(b *testing.B) {
			q := queueOf(benchWorld(n, 4))
			b.ReportAllocs()
			admitted := 0
			for b.Loop() {
				admitted = len(q.Pass(t0).Admitted)
			}
			b.ReportMetric(float64(admitted), "admitted/pass")
		})
	}
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("release/entries=%d", n), func(b *testing.B) {
			s := benchWorld(n, 0)
			const pool = "pool01"
			h := Holder{Entry: 1 << 55, Label: "ends try 1", Slots: 1}
			q := queueOf(s)
			for used := heldIn(s.Holders, pool); used < s.Pools[pool].Slots; used++ {
				q.AddHolder(pool, Holder{Entry: 1<<56 + int64(used), Label: "busy try 1", Slots: 1})
			}
			q.RemoveHolder(GlobalPool, s.Holders[GlobalPool][0].Entry)
			q.AddHolder(GlobalPool, h)
			q.AddHolder(pool, h)
			q.Pass(t0)
			b.ReportAllocs()
			admitted := 0
			for b.Loop() {
				q.RemoveHolder(GlobalPool, h.Entry)
				q.RemoveHolder(pool, h.Entry)
				admitted = len(q.Pass(t0).Admitted)
				q.AddHolder(GlobalPool, h)
				q.AddHolder(pool, h)
			}
			b.ReportMetric(float64(admitted), "admitted/pass")
		})
	}
}

// BenchmarkQueueChurn is the loop at work: each step a second passes, one running attempt
// ends, releasing all its claims, the pass admits what fits, the decision is applied and a
// new entry is queued.
// No DAG is paused and entries joined the queue just now: a paused head blocks its strict
// pool for good, and starved entries behind it would close backfill pools for good too, so
// such a world ends with nothing running.
const (
	clockStep   = time.Second
	churnWarmup = 3000 // steps: 50 minutes
)

func BenchmarkQueueChurn(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			s := benchWorld(n, 0)
			for i := range s.Entries {
				s.Entries[i].Queued, s.Entries[i].Block = t0, NotBlocked
			}
			q := queueOf(s)
			rng := rand.New(rand.NewPCG(7, 8))
			type run struct {
				id    int64
				needs []Need
			}
			claims := map[int64][]Need{}
			for pool, hs := range s.Holders {
				for _, h := range hs {
					claims[h.Entry] = append(claims[h.Entry], Need{Pool: pool, Slots: h.Slots})
				}
			}
			var running []run
			for _, id := range slices.Sorted(maps.Keys(claims)) {
				running = append(running, run{id: id, needs: claims[id]})
			}
			byID := map[int64]Entry{}
			for _, e := range s.Entries {
				byID[e.ID] = e
			}
			next := int64(len(s.Entries)) + 1
			now := t0
			admitted := 0
			step := func() {
				if len(running) > 0 { // a small queue may drain
					i := rng.IntN(len(running))
					for _, nd := range running[i].needs {
						q.RemoveHolder(nd.Pool, running[i].id)
					}
					running[i] = running[len(running)-1]
					running = running[:len(running)-1]
				}
				now = now.Add(clockStep)
				d := q.Pass(now)
				for _, id := range d.Admitted {
					running = append(running, run{id: id, needs: byID[id].Needs})
					delete(byID, id)
				}
				admitted += len(d.Admitted)
				q.Apply(d)
				e := s.Entries[rng.IntN(len(s.Entries))]
				e.ID, next = next, next+1
				e.Queued = now
				byID[e.ID] = e
				q.Put(e)
			}
			// Past the first starvation_after, when entries needing several full pools have
			// piled up and starvation promotion starts letting them in.
			for range churnWarmup {
				step()
			}
			admitted = 0
			b.ReportAllocs()
			for b.Loop() {
				step()
			}
			b.ReportMetric(float64(admitted)/float64(b.N), "admitted/pass")
		})
	}
}
