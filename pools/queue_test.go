package pools

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/poolflow/poolflow/vocab"
)

func queueFrom(s *Snapshot) *Queue {
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
	return q
}

// TestQueueSpecExample is §4.4's example through a queue: the first pass admits a and c;
// applied, and a's claims released, the next pass admits b.
func TestQueueSpecExample(t *testing.T) {
	t.Parallel()
	q := NewQueue()
	q.SetPool(Implicit(GlobalPool, 2))
	q.SetPool(named("db", 1))
	q.Put(entry(1, "run.a", ns("db:1", "_global:1")))
	q.Put(entry(2, "run.b", ns("db:1", "_global:1")))
	q.Put(entry(3, "run.c", ns("_global:1")))
	d := q.Pass(t0)
	if !slices.Equal(d.Admitted, []int64{1, 3}) {
		t.Fatalf("first pass admitted %v, want [1 3]", d.Admitted)
	}
	q.Apply(d)
	if q.Len() != 1 {
		t.Fatalf("%d entries after applying, want 1", q.Len())
	}
	q.RemoveHolder("db", 1)
	q.RemoveHolder(GlobalPool, 1)
	if d := q.Pass(t0.Add(time.Second)); !slices.Equal(d.Admitted, []int64{2}) {
		t.Fatalf("second pass admitted %v, want [2]", d.Admitted)
	}
}

// TestQueueTable runs the full walk's table through a queue: same admissions, expiries,
// not_mine room and rejections.
func TestQueueTable(t *testing.T) {
	t.Parallel()
	x, y := hold(900, "x", 1), hold(901, "y", 1)
	worlds := []*Snapshot{
		{Pools: poolMap(strict("db", 2), named("wh", 1)), Holders: map[string][]Holder{"db": {x}},
			Entries: []Entry{entry(1, "a", ns("db:2")), entry(2, "b", ns("db:1")), entry(3, "c", ns("wh:1"))}},
		{Pools: poolMap(named("wh", 3), named("db", 1)), Holders: map[string][]Holder{"db": {x}},
			Entries: []Entry{entry(1, "s", ns("wh:2", "db:1"), dueAgo(20*time.Minute)), entry(2, "a", ns("wh:1"), prio(10)),
				entry(3, "b", ns("wh:1"), prio(5))}},
		{Pools: poolMap(strict("db", 1), named("wh", 2)), Holders: map[string][]Holder{"db": {x}, "wh": {y}},
			Entries: []Entry{entry(1, "a", ns("db:1", "wh:1"), prio(10)), entry(2, "b", ns("wh:1"), prio(5))}},
		{Pools: poolMap(strict("db", 1), named("wh", 1), named("q", 1)),
			Holders: map[string][]Holder{"db": {hold(5, "k", 1)}, "q": {x}},
			Entries: []Entry{entry(1, "a", ns("db:1", "wh:1"), prio(10)), entry(2, "b", ns("wh:1")),
				entry(5, "k", ns("q:1"), keeps("db:1"))}},
		{Pools: poolMap(strict("db", 2)), Holders: map[string][]Holder{"db": {x}},
			Entries: []Entry{entry(1, "a", ns("db:1"), prio(10)), entry(2, "f", ns("db:2"), force())}},
		{Pools: poolMap(named("db", 1)),
			Entries: []Entry{entry(1, "n", ns("db:1"), blocked(BlockNotMine), prio(10)), entry(2, "a", ns("db:1"))}},
		{Pools: poolMap(named("db", 1)),
			Entries: []Entry{entry(1, "a", ns("db:1"), deadline(t0.Add(-time.Second)), prio(10)),
				entry(2, "b", ns("db:1"), deadline(t0)), entry(3, "c", ns("nope:1")), entry(4, "d", ns("db:2")),
				entry(5, "s", ns("db:1"), prio(20), notBefore(t0.Add(time.Second)))}},
		{Pools: poolMap(named("wh", 2)), Holders: map[string][]Holder{"wh": {x}},
			Entries: []Entry{entry(1, "s", ns("wh:2"), dueAgo(3*time.Hour), queuedAgo(time.Minute)),
				entry(2, "a", ns("wh:1"), prio(10))}},
		{Pools: poolMap(strict("db", 5)),
			Entries: []Entry{entry(1, "a", ns("db:1"), blocked(BlockPaused)), entry(2, "b", ns("db:1"))}},
		{Pools: poolMap(strict("db", 1), named("wh", 1)), Holders: map[string][]Holder{"db": {x}},
			Entries: []Entry{entry(1, "p", ns("db:1", "wh:1"), blocked(BlockPaused), queuedAgo(time.Hour), prio(10)),
				entry(2, "b", ns("wh:1"))}},
		{Pools: poolMap(strict("db", 1), named("wh", 1)),
			Entries: []Entry{entry(1, "p", ns("db:1"), blocked(BlockPaused), prio(10)),
				entry(2, "s", ns("db:1", "wh:1"), queuedAgo(time.Hour), prio(5)), entry(3, "b", ns("wh:1"))}},
		{Pools: poolMap(strict("db", 1), strict("q", 1), named("wh", 1)), Holders: map[string][]Holder{"q": {x}},
			Entries: []Entry{entry(1, "n", ns("db:1"), blocked(BlockNodeAway), prio(10)),
				entry(2, "h", ns("db:1", "q:1", "wh:1"), prio(5)), entry(3, "b", ns("wh:1"))}},
		{Pools: poolMap(strict("db", 1), named("wh", 1)),
			Entries: []Entry{entry(1, "p", ns("db:1"), blocked(BlockPaused), prio(10)),
				entry(2, "s", ns("db:1", "wh:1"), queuedAgo(time.Hour), prio(5)),
				entry(3, "t", ns("wh:1"), queuedAgo(time.Hour), prio(1))}},
		{Pools: poolMap(strict("db", 1), named("wh", 1)), Holders: map[string][]Holder{"db": {x}},
			Entries: []Entry{entry(1, "f", ns("db:1"), blocked(BlockForbid), deadline(t0.Add(-time.Second)), prio(10)),
				entry(2, "s", ns("db:1", "wh:1"), queuedAgo(time.Hour), prio(5)), entry(3, "b", ns("wh:1"))}},
	}
	for i, s := range worlds {
		want := Admit(s, t0)
		if got := queueFrom(s).Pass(t0); !sameDecision(got, want) {
			t.Errorf("world %d: queue decided %+v, full walk %+v", i, got, want)
		}
	}
}

// TestQueuePassChangesNothing: a pass leaves what the queue holds alone, and a second pass at
// the same time decides the same; a decision that is not applied leaves the queue as the
// store, whose transaction failed, still is.
func TestQueuePassChangesNothing(t *testing.T) {
	t.Parallel()
	s := benchWorld(500, 10)
	q := queueFrom(s)
	before := q.Snapshot()
	d1 := q.Pass(t0)
	d2 := q.Pass(t0)
	if !sameDecision(d1, d2) || len(d1.Admitted) == 0 {
		t.Fatalf("passes decided %v then %v", d1.Admitted, d2.Admitted)
	}
	if after := q.Snapshot(); !reflect.DeepEqual(before, after) {
		t.Fatalf("a pass changed the queue's snapshot")
	}
	if d := Admit(before, t0); !sameDecision(d, d1) {
		t.Fatalf("full walk admitted %v, queue %v", d.Admitted, d1.Admitted)
	}
}

// TestQueueApply: admitted entries leave the queue and hold their pools, expired entries
// leave it, rejected and not_mine entries stay.
func TestQueueApply(t *testing.T) {
	t.Parallel()
	q := queueFrom(&Snapshot{Pools: poolMap(named("db", 2), Implicit(GlobalPool, 4)), Entries: []Entry{
		entry(1, "a", ns("db:1", "_global:1")),
		entry(2, "b", ns("db:1"), deadline(t0.Add(-time.Minute))),
		entry(3, "c", ns("nope:1")),
		entry(4, "n", ns("db:1"), blocked(BlockNotMine)),
	}})
	d := q.Pass(t0)
	if !slices.Equal(d.Admitted, []int64{1}) || !slices.Equal(d.Expired, []int64{2}) ||
		!slices.Equal(d.NotMine, []int64{4}) || len(d.Rejected) != 1 || d.Rejected[0].Entry != 3 {
		t.Fatalf("decided %+v", d)
	}
	q.Apply(d)
	s := q.Snapshot()
	var ids []int64
	for _, e := range s.Entries {
		ids = append(ids, e.ID)
	}
	if !slices.Equal(ids, []int64{3, 4}) {
		t.Errorf("entries %v after applying, want [3 4]", ids)
	}
	want := map[string][]Holder{"db": {{Entry: 1, Label: "a try 1", Slots: 1}}, GlobalPool: {{Entry: 1, Label: "a try 1", Slots: 1}}}
	if !reflect.DeepEqual(s.Holders, want) {
		t.Errorf("holders %v, want %v", s.Holders, want)
	}
}

// TestQueueSyncHolders: syncing adds new claims, changes changed ones and releases the rest.
func TestQueueSyncHolders(t *testing.T) {
	t.Parallel()
	q := NewQueue()
	q.SetPool(named("db", 3))
	q.AddHolder("db", hold(1, "a", 1))
	q.AddHolder("db", hold(2, "b", 1))
	q.AddHolder("wh", hold(3, "c", 1))
	hs := map[string][]Holder{"db": {hold(2, "b", 2), hold(4, "d", 1)}, "q": {hold(5, "e", 1)}}
	q.SyncHolders(hs)
	if got := q.Snapshot().Holders; !reflect.DeepEqual(got, hs) {
		t.Fatalf("holders %v, want %v", got, hs)
	}
	if _, ok := q.pools["wh"]; ok {
		t.Errorf("pool name wh is still kept with nothing referring to it")
	}
	q.Put(entry(9, "z", ns("db:1")))
	if d := q.Pass(t0); len(d.Admitted) != 0 {
		t.Errorf("admitted %v into a full pool", d.Admitted)
	}
	q.SyncHolders(map[string][]Holder{"db": {hold(4, "d", 1)}})
	if d := q.Pass(t0); !slices.Equal(d.Admitted, []int64{9}) {
		t.Errorf("admitted %v once room was released, want [9]", d.Admitted)
	}
}

// TestQueuePools: a pool set as it is changes nothing; removing it makes its entries need an
// unknown pool, adding it back makes them admissible; unused names are forgotten.
func TestQueuePools(t *testing.T) {
	t.Parallel()
	q := NewQueue()
	q.SetPool(named("db", 1))
	q.AddHolder("db", hold(900, "x", 1))
	q.Put(entry(1, "a", ns("db:1")))
	q.Pass(t0)
	list := q.entries[1].list
	q.SetPool(named("db", 1))
	if q.entries[1].list != list {
		t.Errorf("setting a pool unchanged re-filed its entries")
	}
	q.RemovePool("db")
	if d := q.Pass(t0); len(d.Rejected) != 1 || d.Rejected[0].Reason.Kind != vocab.ReasonUnknownPool {
		t.Errorf("after removing db: rejected %+v", d.Rejected)
	}
	q.SetPool(named("db", 2))
	if d := q.Pass(t0); !slices.Equal(d.Admitted, []int64{1}) || d.Rejected != nil {
		t.Errorf("after db came back with 2 slots: %+v", d)
	}
	q.Remove(1)
	q.RemoveHolder("db", 900)
	q.RemovePool("db")
	if len(q.pools) != 0 {
		t.Errorf("pool names kept with nothing referring to them: %v", len(q.pools))
	}
}

// TestQueuePassVisitsLittle pins the cost of a pass down without a clock: in a busy daemon
// with 20,000 waiting entries, a pass looks at a handful of them.
func TestQueuePassVisitsLittle(t *testing.T) {
	t.Parallel()
	const n = 20_000
	visited := func(q *Queue) int {
		c := 0
		for _, e := range q.entries {
			if e.seen == q.pass || e.pseen == q.pass {
				c++
			}
		}
		return c
	}
	for _, tt := range []struct {
		name string
		free int
		max  int
	}{{"_global full", 0, 10}, {"4 slots of room", 4, 100}} {
		q := queueOf(benchWorld(n, tt.free))
		q.Pass(t0)
		d := q.Pass(t0)
		if v := visited(q); v > tt.max {
			t.Errorf("%s: a pass visited %d of %d entries (admitting %d), want at most %d", tt.name, v, n, len(d.Admitted), tt.max)
		}
	}
}
