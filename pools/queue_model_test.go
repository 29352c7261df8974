package pools

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/poolflow/poolflow/vocab"
	"pgregory.net/rapid"
)

// qworld drives a Queue and a plain reference of the same world (pools, claims, entries)
// through random operations. Every pass checks that the queue decides exactly what the full
// walk decides over the reference, and over the queue's own snapshot.
//
// Committed admissions run until they end; a running entry may instead be a reschedule
// sensor whose poke found its condition not met (§5.1): it releases its claims except those
// it keeps (include_deferred), and rejoins the queue with the same ID and due time, invisible
// until its next poke, when it is scheduled again by the passing of time alone, as the loop
// does (nothing puts it again then). Entries often need a per-task limit (_task/d/t, the
// max_active_tis_per_dag of every run of one task), so sensors of different runs take turns on
// it.
type qworld struct {
	q       *Queue
	pools   map[string]Pool
	holders map[string]map[int64]Holder
	entries map[int64]Entry
	running map[int64]Entry // committed admissions still holding their claims
	clock   time.Time
	nextID  int64
	names   []string // every pool name entries may need, configured or not
}

func newQworld(t *rapid.T) *qworld {
	w := &qworld{q: NewQueue(), pools: map[string]Pool{}, holders: map[string]map[int64]Holder{},
		entries: map[int64]Entry{}, running: map[int64]Entry{}, clock: base}
	n := rapid.IntRange(1, 5).Draw(t, "named pools")
	for i := range n {
		w.names = append(w.names, fmt.Sprintf("p%d", i))
	}
	w.names = append(w.names, GlobalPool, DAGPoolPrefix+"d/r0", DAGPoolPrefix+"d/r1", TaskPrefix+"d/t", "ghost")
	for _, name := range w.names[:len(w.names)-1] {
		w.setPool(t, name)
	}
	return w
}

var slotChoices = []int{Unlimited, 0, 1, 1, 2, 2, 3, 4, 6}

func (w *qworld) setPool(t *rapid.T, name string) {
	slots := rapid.SampledFrom(slotChoices).Draw(t, "slots")
	var p Pool
	if name[0] == '_' {
		p = Implicit(name, slots)
	} else {
		p = Pool{Name: name, Slots: slots, Ordering: vocab.Backfill}
		switch rapid.IntRange(0, 3).Draw(t, "ordering") {
		case 0:
			p.Ordering = vocab.Strict
		case 1:
		default:
			p.StarvationAfter = time.Duration(rapid.SampledFrom([]int{1, 3, 5, 15}).Draw(t, "starve")) * time.Minute
		}
	}
	w.pools[name] = p
	w.q.SetPool(p)
}

func (w *qworld) ago(t *rapid.T, label string, maxMinutes int) time.Time {
	return w.clock.Add(-time.Duration(rapid.IntRange(0, maxMinutes*60).Draw(t, label)) * time.Second)
}

func (w *qworld) drawEntry(t *rapid.T, id int64) Entry {
	e := Entry{ID: id, Label: fmt.Sprintf("e%d try 1", id)}
	e.Priority = rapid.IntRange(0, 2).Draw(t, "priority")
	e.Backfill = rapid.IntRange(0, 3).Draw(t, "backfill?") == 0
	e.Due = w.ago(t, "due", 40)
	if rapid.IntRange(0, 4).Draw(t, "queued?") > 0 {
		e.Queued = w.ago(t, "queued", 30)
	}
	if rapid.IntRange(0, 3).Draw(t, "deadline?") == 0 {
		e.Deadline = queuedAt(&e).Add(time.Duration(rapid.IntRange(0, 40*60).Draw(t, "timeout")) * time.Second)
	}
	if rapid.IntRange(0, 5).Draw(t, "not before?") == 0 {
		e.NotBefore = w.clock.Add(time.Duration(rapid.IntRange(-120, 600).Draw(t, "poke in")) * time.Second)
	}
	if rapid.IntRange(0, 3).Draw(t, "task?") == 0 {
		// A task instance as the loop queues it: its named pools, then one slot of each of
		// its limits, among them the per-task one every run of the task shares.
		for _, p := range rapid.SliceOfNDistinct(rapid.SampledFrom(w.names[:len(w.names)-5]), 0, 2,
			func(s string) string { return s }).Draw(t, "named") {
			e.Needs = append(e.Needs, Need{Pool: p, Slots: rapid.IntRange(1, 2).Draw(t, "need")})
		}
		run := fmt.Sprintf("%sd/r%d", DAGPoolPrefix, rapid.IntRange(0, 1).Draw(t, "run"))
		e.Needs = append(e.Needs, Need{Pool: GlobalPool, Slots: 1}, Need{Pool: run, Slots: 1},
			Need{Pool: TaskPrefix + "d/t", Slots: 1})
	} else {
		picked := rapid.SliceOfNDistinct(rapid.SampledFrom(w.names), 1, 4, func(s string) string { return s }).Draw(t, "needs")
		for _, p := range picked {
			e.Needs = append(e.Needs, Need{Pool: p, Slots: rapid.SampledFrom([]int{0, 1, 1, 1, 1, 2, 3}).Draw(t, "need")})
		}
	}
	if rapid.IntRange(0, 5).Draw(t, "kept?") == 0 {
		p := rapid.SampledFrom(w.names).Draw(t, "kept pool")
		if !slices.ContainsFunc(e.Needs, func(n Need) bool { return n.Pool == p }) {
			e.Kept = []Need{{Pool: p, Slots: rapid.IntRange(1, 2).Draw(t, "kept slots")}}
			if rapid.Bool().Draw(t, "kept held?") {
				w.addHolder(p, Holder{Entry: id, Label: e.Label, Slots: e.Kept[0].Slots})
			}
		}
	}
	e.Force = rapid.IntRange(0, 14).Draw(t, "force?") == 0
	e.Block = rapid.SampledFrom([]Block{NotBlocked, NotBlocked, NotBlocked, NotBlocked, BlockNotMine,
		BlockPaused, BlockForbid, BlockNodeAway}).Draw(t, "block")
	return e
}

func (w *qworld) addHolder(pool string, h Holder) {
	if w.holders[pool] == nil {
		w.holders[pool] = map[int64]Holder{}
	}
	w.holders[pool][h.Entry] = h
	w.q.AddHolder(pool, h)
}

func (w *qworld) removeHolder(pool string, id int64) {
	delete(w.holders[pool], id)
	if len(w.holders[pool]) == 0 {
		delete(w.holders, pool)
	}
	w.q.RemoveHolder(pool, id)
}

func (w *qworld) snapshot() *Snapshot {
	s := &Snapshot{Pools: maps.Clone(w.pools), Holders: map[string][]Holder{}}
	for name, hs := range w.holders {
		s.Holders[name] = slices.SortedFunc(maps.Values(hs), func(a, b Holder) int { return cmp.Compare(a.Entry, b.Entry) })
	}
	for _, id := range slices.Sorted(maps.Keys(w.entries)) {
		s.Entries = append(s.Entries, w.entries[id])
	}
	return s
}

func (w *qworld) pick(t *rapid.T, label string) (int64, bool) {
	if len(w.entries) == 0 {
		return 0, false
	}
	ids := slices.Sorted(maps.Keys(w.entries))
	return rapid.SampledFrom(ids).Draw(t, label), true
}

// pass checks the queue against the full walk, then may apply the decision as a committed
// transaction would (or drop it, as a failed one).
func (w *qworld) pass(t *rapid.T) {
	got := w.q.Pass(w.clock)
	checkSameDecision(t, "reference", got, Admit(w.snapshot(), w.clock))
	checkSameDecision(t, "queue snapshot", got, Admit(w.q.Snapshot(), w.clock))
	if again := w.q.Pass(w.clock); !sameDecision(again, got) {
		t.Fatalf("a second pass at the same time decided %+v, first %+v", again, got)
	}
	// Until NextWake, time alone changes nothing; at it, something may change.
	later := w.clock.Add(48 * time.Hour)
	if wake := w.q.NextWake(w.clock); !wake.IsZero() {
		if !wake.After(w.clock) {
			t.Fatalf("next wake %v is not after now %v", wake, w.clock)
		}
		later = wake.Add(-time.Nanosecond)
	}
	if d := Admit(w.snapshot(), later); !sameDecision(d, got) {
		t.Fatalf("at %v, before the next wake, the full walk decides %+v, at %v %+v", later, d, w.clock, got)
	}
	if !rapid.Bool().Draw(t, "commit?") {
		return
	}
	for _, id := range got.Admitted {
		e := w.entries[id]
		for _, n := range e.Needs {
			if w.holders[n.Pool] == nil {
				w.holders[n.Pool] = map[int64]Holder{}
			}
			w.holders[n.Pool][id] = Holder{Entry: id, Label: e.Label, Slots: n.Slots}
		}
		delete(w.entries, id)
		w.running[id] = e
	}
	for _, id := range got.Expired {
		delete(w.entries, id)
	}
	w.q.Apply(got)
}

func (w *qworld) pickRunning(t *rapid.T) (int64, bool) {
	if len(w.running) == 0 {
		return 0, false
	}
	return rapid.SampledFrom(slices.Sorted(maps.Keys(w.running))).Draw(t, "running"), true
}

// release drops every claim of entry id except those in the pools kept names.
func (w *qworld) release(id int64, kept []Need) {
	for _, name := range slices.Sorted(maps.Keys(w.holders)) {
		if _, ok := w.holders[name][id]; ok && !slices.ContainsFunc(kept, func(n Need) bool { return n.Pool == name }) {
			w.removeHolder(name, id)
		}
	}
}

// reschedule is a running sensor's poke that found its condition not met (§5.1): it keeps its
// claims in some named pools (include_deferred), releases the rest, and waits again with the
// same ID, due time and priority, invisible until its next poke; its queue time is that poke.
// The loop puts the entry and syncs the claims in either order, as a pass or a refresh does.
func (w *qworld) reschedule(t *rapid.T) {
	id, ok := w.pickRunning(t)
	if !ok {
		t.Skip("nothing running")
	}
	e := w.running[id]
	delete(w.running, id)
	var needs, kept []Need
	for _, n := range slices.Concat(e.Needs, e.Kept) {
		if n.Pool[0] != '_' && n.Slots > 0 && rapid.IntRange(0, 3).Draw(t, "include_deferred?") == 0 {
			kept = append(kept, n)
		} else {
			needs = append(needs, n)
		}
	}
	if len(needs) == 0 {
		needs, kept = kept[:1], kept[1:]
	}
	e.Needs, e.Kept = needs, kept
	e.NotBefore = w.clock.Add(time.Duration(rapid.IntRange(1, 120).Draw(t, "poke interval")) * time.Second)
	e.Queued = e.NotBefore
	e.Force = false
	if rapid.Bool().Draw(t, "put first?") {
		w.entries[id] = e
		w.q.Put(e)
		w.release(id, kept)
	} else {
		w.release(id, kept)
		w.entries[id] = e
		w.q.Put(e)
	}
}

func checkSameDecision(t *rapid.T, what string, got, want Decision) {
	if !sameDecision(got, want) {
		t.Fatalf("queue pass differs from the full walk over the %s:\n got admitted %v expired %v not_mine %v rejected %+v\nwant admitted %v expired %v not_mine %v rejected %+v",
			what, got.Admitted, got.Expired, got.NotMine, got.Rejected, want.Admitted, want.Expired, want.NotMine, want.Rejected)
	}
}

func (w *qworld) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"put": func(t *rapid.T) {
			for range rapid.IntRange(1, 6).Draw(t, "entries") {
				w.nextID++
				e := w.drawEntry(t, w.nextID)
				w.entries[e.ID] = e
				w.q.Put(e)
			}
		},
		"update": func(t *rapid.T) {
			id, ok := w.pick(t, "updated")
			if !ok {
				t.Skip("no entry")
			}
			e := w.entries[id]
			switch rapid.IntRange(0, 6).Draw(t, "what") {
			case 0:
				e.Block = rapid.SampledFrom([]Block{NotBlocked, BlockNotMine, BlockPaused, BlockForbid, BlockNodeAway}).Draw(t, "block")
			case 1:
				e.Force = !e.Force
			case 2:
				e.Priority = rapid.IntRange(0, 2).Draw(t, "priority")
			case 3:
				e.NotBefore = w.clock.Add(time.Duration(rapid.IntRange(-60, 600).Draw(t, "poke in")) * time.Second)
				e.Queued = w.clock // a re-poke rejoins the queue
			case 4:
				e.Kept = nil
			default:
				e = w.drawEntry(t, id)
			}
			w.entries[id] = e
			w.q.Put(e)
		},
		"end": func(t *rapid.T) {
			// A running attempt ends (or a sensor's poke is met): every claim it holds goes.
			id, ok := w.pickRunning(t)
			if !ok {
				t.Skip("nothing running")
			}
			w.release(id, nil)
			delete(w.running, id)
		},
		"reschedule": w.reschedule,
		"remove": func(t *rapid.T) {
			id, ok := w.pick(t, "removed")
			if !ok {
				t.Skip("no entry")
			}
			delete(w.entries, id)
			w.q.Remove(id)
		},
		"set pool": func(t *rapid.T) {
			w.setPool(t, rapid.SampledFrom(w.names).Draw(t, "pool"))
		},
		"remove pool": func(t *rapid.T) {
			name := rapid.SampledFrom(w.names).Draw(t, "pool")
			delete(w.pools, name)
			w.q.RemovePool(name)
		},
		"claim": func(t *rapid.T) {
			name := rapid.SampledFrom(w.names).Draw(t, "pool")
			w.addHolder(name, Holder{Entry: 1000 + rapid.Int64Range(0, 20).Draw(t, "holder"),
				Label: "other try 1", Slots: rapid.IntRange(1, 2).Draw(t, "slots")})
		},
		"release": func(t *rapid.T) {
			var claims []claimRef
			for _, name := range slices.Sorted(maps.Keys(w.holders)) {
				for _, id := range slices.Sorted(maps.Keys(w.holders[name])) {
					claims = append(claims, claimRef{name, id})
				}
			}
			if len(claims) == 0 {
				t.Skip("no claim")
			}
			for range rapid.IntRange(1, 3).Draw(t, "releases") {
				c := claims[rapid.IntRange(0, len(claims)-1).Draw(t, "claim")]
				w.removeHolder(c.pool, c.entry)
			}
		},
		"sync claims": func(t *rapid.T) {
			// Another daemon's claims changed: the loop re-reads them all.
			if name := rapid.SampledFrom(w.names).Draw(t, "pool"); rapid.Bool().Draw(t, "drop?") {
				delete(w.holders, name)
			} else {
				w.holders[name] = map[int64]Holder{2000: {Entry: 2000, Label: "far try 1", Slots: 1}}
			}
			hs := map[string][]Holder{}
			for name, m := range w.holders {
				hs[name] = slices.Collect(maps.Values(m))
			}
			w.q.SyncHolders(hs)
		},
		"tick": func(t *rapid.T) {
			d := rapid.IntRange(0, 600).Draw(t, "seconds")
			if rapid.IntRange(0, 5).Draw(t, "back?") == 0 {
				d = -rapid.IntRange(1, 900).Draw(t, "seconds back") // a wall clock set back
			}
			w.clock = w.clock.Add(time.Duration(d) * time.Second)
		},
		"pass": w.pass,
	}
}

// TestQueueMatchesAdmit checks the incremental pass against the full walk, pass after pass.
func TestQueueMatchesAdmit(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		w := newQworld(t)
		t.Repeat(w.actions())
		w.pass(t)
	})
}
