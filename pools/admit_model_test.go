package pools

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/poolflow/poolflow/vocab"
	"pgregory.net/rapid"
)

// The model is a small world of pools, waiting entries and running attempts over a simulated
// clock of one-minute steps, shared by two daemons. Each pass builds a Snapshot from it the way
// the executor would, calls Admit, checks the decision against the rules of §4 and applies it.
// Checked after every pass (checkDecision, checkTracks):
//   - every entry is expired, admitted, not_mine-and-fitting or given one reason, exactly once;
//   - what a pass takes fits on top of what is held, pool by pool, and needs no unknown pool;
//   - a strict pool takes nothing past a head that lacks room in it or is blocked;
//   - an earlier entry of a single pool waits only if blocked, held back, or needing more room
//     than a later admitted one (unless that one was starved there);
//   - reasons name real pools, real blockers and true numbers;
//   - no backfill pool is kept for an entry that cannot be admitted for a reason of its own
//     (paused, forbid, node_unavailable), nor for one behind such an entry in a strict pool;
//   - an entry whose only obstacle is room in backfill pools where it has starved, with nothing
//     promoted ahead of it, starts once the attempts holding those pools when it got there end.
// Admission is all-or-nothing by construction of the model: an admitted entry holds every need.
//
// Each daemon also keeps a Queue, told of every change as the scheduler loop would tell it;
// every pass checks that the queue decides exactly what the full walk decides.

const daemons = 2

type mEntry struct {
	Entry
	owner  int   // daemon that may admit it
	run    int   // steps it runs once admitted
	sensor bool  // a reschedule sensor: may come back to wait keeping its Kept claims
	block  Block // its own block; not_mine is derived per pass from owner
}

type mRun struct {
	e   *mEntry
	end int // clock step at which it finishes
	by  int // daemon that admitted it
}

type track struct {
	since, bound int // top starved since; must be taken by a pass at or after bound
}

type model struct {
	// busy narrows the world to contended backfill pools with starvation on, where every
	// entry's only obstacle is room, so the starvation guarantee is exercised often.
	busy    bool
	pools   map[string]Pool
	named   []string
	bfCap   string // a backfill's max_slots cap of the first named pool
	clock   int
	nextID  int64
	waiting []*mEntry // by ID
	running []*mRun   // by ID
	tracks  map[int64]track
	queues  [daemons]*Queue
}

var base = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func (m *model) now() time.Time { return base.Add(time.Duration(m.clock) * time.Minute) }

func newModel(t *rapid.T, busy bool) *model {
	m := &model{busy: busy, pools: map[string]Pool{}, tracks: map[int64]track{}, clock: 100}
	for d := range m.queues {
		m.queues[d] = NewQueue()
	}
	defer func() {
		for _, q := range m.queues {
			for _, p := range m.pools {
				q.SetPool(p)
			}
		}
	}()
	n := rapid.IntRange(1, 4).Draw(t, "named pools")
	for i := range n {
		name := fmt.Sprintf("p%d", i)
		slots := rapid.SampledFrom([]int{Unlimited, 0, 1, 1, 2, 2, 2, 3, 3, 4}).Draw(t, "slots "+name)
		p := Pool{Name: name, Slots: slots, Ordering: vocab.Backfill}
		if busy {
			p.Slots = rapid.IntRange(2, 4).Draw(t, "slots "+name)
			p.StarvationAfter = time.Duration(rapid.IntRange(1, 10).Draw(t, "starve "+name)) * time.Minute
		} else if rapid.Bool().Draw(t, "strict "+name) {
			p.Ordering = vocab.Strict
		} else {
			p.StarvationAfter = time.Duration(rapid.SampledFrom([]int{0, 5, 15}).Draw(t, "starve "+name)) * time.Minute
		}
		m.pools[name] = p
		m.named = append(m.named, name)
	}
	m.pools[GlobalPool] = Implicit(GlobalPool, rapid.SampledFrom([]int{Unlimited, 2, 4, 6}).Draw(t, "max_running"))
	for r := range 2 {
		name := fmt.Sprintf("%sd/r%d", DAGPoolPrefix, r)
		m.pools[name] = Implicit(name, rapid.IntRange(1, 3).Draw(t, "max_active_tasks"))
	}
	m.pools[taskLimit] = Implicit(taskLimit, rapid.IntRange(1, 2).Draw(t, "max_active_tis_per_dag"))
	m.bfCap = BackfillCapPrefix + "1/" + m.named[0]
	m.pools[m.bfCap] = Implicit(m.bfCap, rapid.IntRange(1, 3).Draw(t, "max_slots"))
	return m
}

// taskLimit is the max_active_tis_per_dag of the model's sensor task: every run's instance of
// it needs a slot, so sensors of different runs take turns on it between their pokes.
const taskLimit = TaskPrefix + "d/s"

// holders derives occupancy from running attempts and kept claims, as the store does from claim rows.
func (m *model) holders() map[string][]Holder {
	hs := map[string][]Holder{}
	add := func(e *mEntry, ns []Need) {
		for _, n := range ns {
			hs[n.Pool] = append(hs[n.Pool], Holder{Entry: e.ID, Label: e.Label, Slots: n.Slots})
		}
	}
	for _, r := range m.running {
		add(r.e, r.e.Needs)
		add(r.e, r.e.Kept)
	}
	for _, e := range m.waiting {
		add(e, e.Kept)
	}
	return hs
}

func heldIn(hs map[string][]Holder, pool string) int {
	sum := 0
	for _, h := range hs[pool] {
		sum += h.Slots
	}
	return sum
}

func (m *model) enqueue(t *rapid.T) {
	m.nextID++
	e := &mEntry{Entry: Entry{ID: m.nextID, Label: fmt.Sprintf("e%d try 1", m.nextID)}}
	e.Priority = rapid.IntRange(0, 2).Draw(t, "priority")
	// Due is the run's time, often older than the task's joining the queue (§4.4).
	e.Due = m.now().Add(-time.Duration(rapid.IntRange(0, 20).Draw(t, "age")) * time.Minute)
	e.Queued = m.now()
	if rapid.IntRange(0, 9).Draw(t, "deadline?") < 3 {
		e.Deadline = e.Queued.Add(time.Duration(rapid.IntRange(5, 40).Draw(t, "timeout")) * time.Minute)
	}
	picked := rapid.SliceOfNDistinct(rapid.SampledFrom(m.named), 1, 3, func(s string) string { return s }).Draw(t, "pools")
	for _, p := range picked {
		e.Needs = append(e.Needs, Need{Pool: p, Slots: rapid.SampledFrom([]int{1, 1, 1, 2, 3}).Draw(t, "slots")})
	}
	if rapid.IntRange(0, 2).Draw(t, "backfill?") == 0 {
		// A backfill's entry (§11): walked after fresh ones of its priority, and where its
		// backfill caps a pool it needs (max_slots), debited in the implicit cap pool too.
		e.Backfill = true
		for _, n := range e.Needs {
			if n.Pool == m.named[0] {
				e.Needs = append(e.Needs, Need{Pool: m.bfCap, Slots: min(n.Slots, m.pools[m.bfCap].Slots)})
				break
			}
		}
	}
	e.owner = rapid.IntRange(0, daemons-1).Draw(t, "owner")
	e.run = rapid.IntRange(1, 8).Draw(t, "run time")
	if m.busy {
		for i := range e.Needs {
			e.Needs[i].Slots = min(e.Needs[i].Slots, m.pools[e.Needs[i].Pool].Slots)
		}
		m.waiting = append(m.waiting, e)
		m.put(e)
		return
	}
	if rapid.IntRange(0, 19).Draw(t, "ghost?") == 0 {
		e.Needs = append(e.Needs, Need{Pool: "ghost", Slots: 1})
	}
	if limitless := rapid.IntRange(0, 3).Draw(t, "limitless?") == 0; !limitless {
		e.Needs = append(e.Needs, Need{Pool: GlobalPool, Slots: 1})
		if r := rapid.IntRange(-1, 1).Draw(t, "run"); r >= 0 {
			e.Needs = append(e.Needs, Need{Pool: fmt.Sprintf("%sd/r%d", DAGPoolPrefix, r), Slots: 1})
		}
	}
	e.Force = rapid.IntRange(0, 19).Draw(t, "force?") == 0
	if rapid.IntRange(0, 9).Draw(t, "blocked?") == 0 {
		e.block = rapid.SampledFrom([]Block{BlockPaused, BlockForbid, BlockNodeAway}).Draw(t, "block")
	}
	e.sensor = rapid.IntRange(0, 5).Draw(t, "sensor?") == 0
	if e.sensor && rapid.Bool().Draw(t, "task limit?") {
		e.Needs = append(e.Needs, Need{Pool: taskLimit, Slots: 1})
	}
	if e.sensor && rapid.Bool().Draw(t, "kept?") {
		// Start as a sensor between pokes that already keeps an include_deferred claim.
		hs := m.holders()
		for _, p := range m.named {
			if slices.ContainsFunc(e.Needs, func(n Need) bool { return n.Pool == p }) {
				continue
			}
			if c := m.pools[p].Slots; c == Unlimited || heldIn(hs, p)+1 <= c {
				e.Kept = []Need{{Pool: p, Slots: 1}}
				break
			}
		}
	}
	m.waiting = append(m.waiting, e)
	m.put(e)
}

// view is the entry as daemon d sees it: another daemon's entries are not_mine.
func (e *mEntry) view(d int) Entry {
	x := e.Entry
	x.Block = e.block
	if x.Block == NotBlocked && e.owner != d {
		x.Block = BlockNotMine
	}
	return x
}

// put tells every daemon's queue of a new or changed waiting entry.
func (m *model) put(e *mEntry) {
	for d, q := range m.queues {
		q.Put(e.view(d))
	}
}

// snapshot is what daemon d's pass sees: another daemon's entries are not_mine.
func (m *model) snapshot(d int) *Snapshot {
	s := &Snapshot{Pools: m.pools, Holders: m.holders()}
	for _, e := range m.waiting {
		s.Entries = append(s.Entries, e.view(d))
	}
	return s
}

func (m *model) removeWaiting(id int64) *mEntry {
	i := slices.IndexFunc(m.waiting, func(e *mEntry) bool { return e.ID == id })
	e := m.waiting[i]
	m.waiting = slices.Delete(m.waiting, i, i+1)
	delete(m.tracks, id)
	for _, q := range m.queues {
		q.Remove(id)
	}
	return e
}

func (m *model) pass(t *rapid.T) {
	d := rapid.IntRange(0, daemons-1).Draw(t, "daemon")
	s := m.snapshot(d)
	now := m.now()
	m.updateTracks(s, now)
	dec := Admit(s, now)
	checkDecision(t, s, now, dec)
	m.checkTracks(t, dec, now)
	q := m.queues[d]
	q.SyncHolders(m.holders()) // the loop re-reads every claim in its transaction
	if got := q.Pass(now); !sameDecision(got, dec) {
		t.Fatalf("daemon %d: queue pass differs from the full walk:\n got admitted %v expired %v not_mine %v rejected %v\nwant admitted %v expired %v not_mine %v rejected %v",
			d, got.Admitted, got.Expired, got.NotMine, got.Rejected, dec.Admitted, dec.Expired, dec.NotMine, dec.Rejected)
	}

	for _, id := range dec.Expired {
		m.removeWaiting(id)
	}
	for _, r := range dec.Rejected {
		m.removeWaiting(r.Entry)
	}
	for _, id := range dec.Admitted {
		e := m.removeWaiting(id)
		m.running = append(m.running, &mRun{e: e, end: m.clock + e.run, by: d})
	}
	slices.SortFunc(m.running, func(a, b *mRun) int { return int(a.e.ID - b.e.ID) })
}

// finish ends a running attempt; a reschedule sensor whose condition is not met comes back to
// wait for its next poke (up_for_reschedule), keeping its kept claims and releasing the rest,
// with the same queue ID and due time: it rejoins the queue at its poke time and is invisible
// until then, when the passing of time alone makes it scheduled again (the loop does not put
// it again).
func (m *model) finish(t *rapid.T, i int) {
	r := m.running[i]
	m.running = slices.Delete(m.running, i, i+1)
	if r.e.sensor && rapid.Bool().Draw(t, "repoke") {
		r.e.NotBefore = m.now().Add(time.Duration(rapid.IntRange(0, 3).Draw(t, "poke in")) * time.Minute)
		r.e.Queued = r.e.NotBefore
		m.waiting = append(m.waiting, r.e)
		slices.SortFunc(m.waiting, func(a, b *mEntry) int { return int(a.ID - b.ID) })
		m.put(r.e)
	}
}

func (m *model) tick(t *rapid.T) {
	m.clock += rapid.IntRange(1, 5).Draw(t, "minutes")
	for i := 0; i < len(m.running); {
		if m.running[i].end <= m.clock {
			m.finish(t, i)
			continue
		}
		i++
	}
}

// crash drops every claim of one daemon: its attempts go back to the queue with their queue ID,
// due time and try number, and its sensors lose their kept claims (§4.8).
func (m *model) crash(t *rapid.T) {
	d := rapid.IntRange(0, daemons-1).Draw(t, "crashed daemon")
	kept := m.running[:0]
	for _, r := range m.running {
		if r.by == d {
			r.e.Kept, r.e.Queued, r.e.NotBefore = nil, m.now(), time.Time{}
			m.waiting = append(m.waiting, r.e)
			m.put(r.e)
			continue
		}
		kept = append(kept, r)
	}
	m.running = kept
	for _, e := range m.waiting {
		if e.owner == d && e.Kept != nil {
			e.Kept = nil
			m.put(e)
		}
	}
	slices.SortFunc(m.waiting, func(a, b *mEntry) int { return int(a.ID - b.ID) })
}

func (m *model) resize(t *rapid.T) {
	name := rapid.SampledFrom(m.named).Draw(t, "resized")
	p := m.pools[name]
	p.Slots = rapid.SampledFrom([]int{Unlimited, 0, 1, 2, 3, 4}).Draw(t, "new slots")
	if m.busy {
		p.Slots = max(p.Slots, 3)
	}
	m.pools[name] = p
	for _, q := range m.queues {
		q.SetPool(p)
	}
	clear(m.tracks)
}

// TestAdmitModel drives random worlds: strict, backfill and unlimited pools, limits, blocks,
// force starts, kept-claims sensors and two daemons.
func TestAdmitModel(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) { runModel(t, newModel(t, false)) })
}

// TestAdmitModelStarvation drives contended backfill pools only, where the starvation bound
// is checked most.
func TestAdmitModelStarvation(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) { runModel(t, newModel(t, true)) })
}

func runModel(t *rapid.T, m *model) {
	t.Repeat(map[string]func(*rapid.T){
		"enqueue": func(t *rapid.T) {
			for range rapid.IntRange(1, 4).Draw(t, "entries") {
				m.enqueue(t)
			}
		},
		"pass": m.pass,
		"tick": m.tick,
		"finish": func(t *rapid.T) {
			if len(m.running) == 0 {
				t.Skip("nothing running")
			}
			m.finish(t, rapid.IntRange(0, len(m.running)-1).Draw(t, "finished"))
		},
		"cancel": func(t *rapid.T) {
			if len(m.waiting) == 0 {
				t.Skip("nothing waiting")
			}
			m.removeWaiting(m.waiting[rapid.IntRange(0, len(m.waiting)-1).Draw(t, "cancelled")].ID)
		},
		"toggle block": func(t *rapid.T) {
			if len(m.waiting) == 0 {
				t.Skip("nothing waiting")
			}
			e := m.waiting[rapid.IntRange(0, len(m.waiting)-1).Draw(t, "toggled")]
			if m.busy {
				t.Skip("no blocks in a busy world")
			}
			e.block = rapid.SampledFrom([]Block{NotBlocked, NotBlocked, BlockPaused, BlockForbid, BlockNodeAway}).Draw(t, "block")
			m.put(e)
		},
		"crash":  m.crash,
		"resize": m.resize,
	})
}

// walkOrder lists the snapshot's visible, unexpired entries in Compare order.
func walkOrder(s *Snapshot, now time.Time) []*Entry {
	var w []*Entry
	for i := range s.Entries {
		e := &s.Entries[i]
		if !e.NotBefore.After(now) && (e.Deadline.IsZero() || !now.After(e.Deadline)) {
			w = append(w, e)
		}
	}
	slices.SortFunc(w, Compare)
	return w
}

func needOf(e *Entry, pool string) (int, bool) {
	for _, n := range e.Needs {
		if n.Pool == pool {
			return n.Slots, true
		}
	}
	return 0, false
}

// rejectedIn says the entry can never be admitted as the pools stand.
func rejectedIn(s *Snapshot, e *Entry) bool {
	for _, n := range e.Needs {
		p, ok := s.Pools[n.Pool]
		if !ok || (p.Slots != Unlimited && n.Slots > p.Slots) {
			return true
		}
	}
	return false
}

func starvedIn(p Pool, e *Entry, now time.Time) bool {
	return !p.Implicit && p.Ordering != vocab.Strict && p.StarvationAfter > 0 && now.Sub(queuedAt(e)) > p.StarvationAfter
}

// checkDecision checks one decision against the rules of §4.3–§4.5.
func checkDecision(t *rapid.T, s *Snapshot, now time.Time, d Decision) {
	reasons := reasonMap(d)
	byID := map[int64]*Entry{}
	for i := range s.Entries {
		byID[s.Entries[i].ID] = &s.Entries[i]
	}
	taken := map[int64]bool{}
	for _, id := range d.Admitted {
		taken[id] = true
		if b := byID[id].Block; b != NotBlocked {
			t.Fatalf("admitted %d with block %q", id, b)
		}
	}
	for _, id := range d.NotMine {
		taken[id] = true
		if b := byID[id].Block; b != BlockNotMine {
			t.Fatalf("not_mine lists %d with block %q", id, b)
		}
	}
	expired := map[int64]bool{}
	for _, id := range d.Expired {
		expired[id] = true
	}

	// Every visible entry is decided exactly once; invisible ones not at all.
	for _, e := range s.Entries {
		past := !e.Deadline.IsZero() && now.After(e.Deadline)
		_, hasReason := reasons[e.ID]
		if e.NotBefore.After(now) {
			if expired[e.ID] || taken[e.ID] || hasReason {
				t.Fatalf("entry %d, invisible until %v, was decided at %v", e.ID, e.NotBefore, now)
			}
			continue
		}
		switch {
		case past != expired[e.ID]:
			t.Fatalf("entry %d: deadline %v, now %v, expired %v", e.ID, e.Deadline, now, expired[e.ID])
		case past && (taken[e.ID] || hasReason):
			t.Fatalf("expired entry %d was also admitted or given a reason", e.ID)
		case !past && taken[e.ID] && hasReason:
			t.Fatalf("entry %d admitted and given a reason", e.ID)
		case !past && !taken[e.ID] && hasReason == (e.Block == BlockNotMine):
			t.Fatalf("entry %d (block %q): reason present %v", e.ID, e.Block, hasReason)
		}
		if taken[e.ID] && rejectedIn(s, &e) {
			t.Fatalf("entry %d admitted with an unknown pool or over capacity", e.ID)
		}
	}

	// Capacity: everything taken in the pass fits on top of what is held.
	used := map[string]int{}
	for name, hs := range s.Holders {
		for _, h := range hs {
			used[name] += h.Slots
		}
	}
	after := maps.Clone(used)
	for id := range taken {
		for _, n := range byID[id].Needs {
			after[n.Pool] += n.Slots
		}
	}
	for name, p := range s.Pools {
		if p.Slots != Unlimited && after[name] > used[name] && after[name] > p.Slots {
			t.Fatalf("pool %s: %d held + admitted exceeds capacity %d", name, after[name], p.Slots)
		}
	}

	order := walkOrder(s, now)
	checkFreshFirst(t, order)
	pos := map[int64]int{}
	for i, e := range order {
		pos[e.ID] = i
	}

	// vocab.Strict pools: nothing later is taken past a head that lacks room in the pool or is
	// blocked; kept-claims sensors and rejected entries never become heads.
	for name, p := range s.Pools {
		if p.Ordering != vocab.Strict || p.Implicit {
			continue
		}
		room := used[name]
		var head *Entry
		for _, e := range order {
			need, ok := needOf(e, name)
			if !ok {
				continue
			}
			if taken[e.ID] {
				if head != nil {
					t.Fatalf("strict pool %s: %d admitted past head %d", name, e.ID, head.ID)
				}
				room += need
				continue
			}
			if head != nil {
				if k := reasons[e.ID].Kind; e.Block != BlockNotMine && !(k.IsBlock() || k.Rejects() || k == vocab.ReasonBehind) {
					t.Fatalf("strict pool %s: %d behind head %d has reason %s", name, e.ID, head.ID, k)
				}
				continue
			}
			if len(e.Kept) > 0 || rejectedIn(s, e) {
				continue
			}
			if e.Block.Reason() != "" || (p.Slots != Unlimited && p.Slots-room < need) {
				head = e
			}
		}
	}

	// Order: an earlier entry needing the same single pool as a later admitted one was blocked,
	// held back, or needed more room than the later one (unless the later one was starved there).
	for _, x := range order {
		if !taken[x.ID] || len(x.Needs) != 1 {
			continue
		}
		pool := x.Needs[0].Pool
		for _, y := range order[:pos[x.ID]] {
			if taken[y.ID] || len(y.Needs) != 1 || y.Needs[0].Pool != pool || y.Block == BlockNotMine {
				continue
			}
			r := reasons[y.ID]
			switch {
			case r.Kind.IsBlock() || r.Kind.Rejects() || r.Kind == vocab.ReasonBehind || r.Kind == vocab.ReasonStarvedHead:
			case r.Kind == vocab.ReasonPoolFull || r.Kind.IsLimit():
				if x.Needs[0].Slots >= y.Needs[0].Slots && !starvedIn(s.Pools[pool], x, now) {
					t.Fatalf("%d admitted into %s after %d waits (%s) needing no more", x.ID, pool, y.ID, r)
				}
			default:
				t.Fatalf("%d waits in %s before admitted %d with reason %s", y.ID, pool, x.ID, r.Kind)
			}
		}
	}

	// Starvation (§4.4, turn 3 decision): an entry that cannot be admitted for a reason of its
	// own is never promoted and, as a strict pool's head, still blocks that pool but does not
	// count as starved in its backfill pools; an entry behind it in a strict pool cannot be
	// admitted before it is, so it keeps no room either. No pool is kept for either: a paused
	// DAG cannot freeze a backfill pool.
	for id, r := range reasons {
		if r.Kind != vocab.ReasonStarvedHead {
			continue
		}
		b := byID[r.Behind]
		if b.Block.Reason() != "" {
			t.Fatalf("entry %d waits for pool %s kept for %d, which is %s", id, r.Pool, b.ID, b.Block)
		}
		if f := ownBlockAhead(s, order, b); f != nil {
			t.Fatalf("entry %d waits for pool %s kept for %d, which is behind %d (%s) in a strict pool",
				id, r.Pool, b.ID, f.ID, f.Block)
		}
	}

	// Rejected lists exactly the entries whose reason rejects them, with that reason.
	var rejected []Rejection
	for id, r := range reasons {
		if r.Kind.Rejects() {
			rejected = append(rejected, Rejection{Entry: id, Reason: r})
		}
	}
	slices.SortFunc(rejected, func(a, b Rejection) int { return int(a.Entry - b.Entry) })
	if len(rejected) != len(d.Rejected) || len(rejected) > 0 && !reflect.DeepEqual(rejected, d.Rejected) {
		t.Fatalf("rejected %+v, reasons say %+v", d.Rejected, rejected)
	}

	// Reasons name real pools and real blockers.
	for id, r := range reasons {
		e := byID[id]
		if r.Kind.IsBlock() {
			if e.Block.Reason() != r.Kind {
				t.Fatalf("entry %d: reason %s, block %q", id, r.Kind, e.Block)
			}
			continue
		}
		if e.Block.Reason() != "" {
			t.Fatalf("blocked entry %d has reason %s", id, r.Kind)
		}
		need, ok := needOf(e, r.Pool)
		if !ok || need != r.Need {
			t.Fatalf("entry %d: reason %s names pool %s need %d, not among its needs %v", id, r.Kind, r.Pool, r.Need, e.Needs)
		}
		p, known := s.Pools[r.Pool]
		switch r.Kind {
		case vocab.ReasonUnknownPool:
			if known {
				t.Fatalf("entry %d: pool %s exists", id, r.Pool)
			}
		case vocab.ReasonOverCapacity:
			if p.Slots == Unlimited || r.Need <= p.Slots {
				t.Fatalf("entry %d: %d slots fit capacity %d", id, r.Need, p.Slots)
			}
		case vocab.ReasonBehind, vocab.ReasonStarvedHead:
			b := byID[r.Behind]
			// A starved entry the room was kept for may well be admitted later in the pass.
			if b == nil || (r.Kind == vocab.ReasonBehind && taken[b.ID]) || len(b.Kept) > 0 {
				t.Fatalf("entry %d: %s names %d, which is not a waiting entry that may block", id, r.Kind, r.Behind)
			}
			if _, ok := needOf(b, r.Pool); !ok {
				t.Fatalf("entry %d: %s names %d, which does not need %s", id, r.Kind, r.Behind, r.Pool)
			}
			if (r.Kind == vocab.ReasonBehind) != (p.Ordering == vocab.Strict) {
				t.Fatalf("entry %d: %s in %s pool %s", id, r.Kind, p.Ordering, r.Pool)
			}
		case vocab.ReasonPoolFull, vocab.ReasonGlobalLimit, vocab.ReasonDAGLimit, vocab.ReasonTaskLimit, vocab.ReasonBackfillLimit:
			if r.Need <= r.Free || r.Kind != LimitKind(r.Pool) || r.Used != after[r.Pool] {
				t.Fatalf("entry %d: %s in %s with need %d, free %d, used %d (tally %d)", id, r.Kind, r.Pool,
					r.Need, r.Free, r.Used, after[r.Pool])
			}
		default:
			t.Fatalf("entry %d: unexpected reason %s", id, r.Kind)
		}
	}
}

// ownBlockAhead is an entry ahead of e in the walk, in a strict pool e needs, that cannot be
// admitted for a reason of its own (so e cannot be admitted before that reason goes), or nil.
// Kept-claims sensors and rejected entries never block, so they do not count.
func ownBlockAhead(s *Snapshot, order []*Entry, e *Entry) *Entry {
	for _, f := range order {
		if f == e {
			return nil
		}
		if f.Block.Reason() == "" || len(f.Kept) > 0 || rejectedIn(s, f) {
			continue
		}
		for _, n := range e.Needs {
			if p, ok := s.Pools[n.Pool]; ok && p.Ordering == vocab.Strict && !p.Implicit {
				if _, needs := needOf(f, n.Pool); needs {
					return f
				}
			}
		}
	}
	return nil
}

// updateTracks follows entries whose only obstacle can be room in backfill pools where they
// have starved and where nothing else goes first: force starts, kept-claims sensors and earlier
// starved entries. Such an entry must start once every attempt holding its pools when it got
// there has finished: starvation_after has passed, plus the longest remaining run time.
func (m *model) updateTracks(s *Snapshot, now time.Time) {
	order := walkOrder(s, now)
	ends := map[string]int{} // latest end of a running attempt per pool
	for _, r := range m.running {
		for _, n := range slices.Concat(r.e.Needs, r.e.Kept) {
			ends[n.Pool] = max(ends[n.Pool], r.end)
		}
	}
	// Kept claims of waiting sensors have no end time, expiring ones included: the caller
	// releases those only after this pass.
	kept := map[string]bool{}
	for _, e := range s.Entries {
		for _, k := range e.Kept {
			kept[k.Pool] = true
		}
	}
	for i, e := range order {
		if !m.topStarved(s, order, i, kept, now) {
			delete(m.tracks, e.ID)
			continue
		}
		if _, ok := m.tracks[e.ID]; ok {
			continue
		}
		bound := m.clock
		for _, n := range e.Needs {
			bound = max(bound, ends[n.Pool])
		}
		m.tracks[e.ID] = track{since: m.clock, bound: bound}
	}
	for id := range m.tracks {
		if _, ok := pos(order, id); !ok {
			delete(m.tracks, id)
		}
	}
}

func pos(order []*Entry, id int64) (int, bool) {
	i := slices.IndexFunc(order, func(e *Entry) bool { return e.ID == id })
	return i, i >= 0
}

func (m *model) topStarved(s *Snapshot, order []*Entry, i int, kept map[string]bool, now time.Time) bool {
	e := order[i]
	if (e.Block != NotBlocked && e.Block != BlockNotMine) || e.Force || len(e.Kept) > 0 || rejectedIn(s, e) {
		return false
	}
	for _, n := range e.Needs {
		if p := s.Pools[n.Pool]; !starvedIn(p, e, now) || p.Slots == Unlimited || kept[n.Pool] {
			return false
		}
	}
	for j, f := range order {
		if j == i {
			continue
		}
		for _, n := range e.Needs {
			if _, ok := needOf(f, n.Pool); !ok {
				continue
			}
			if f.Force || len(f.Kept) > 0 {
				return false
			}
			if j < i && (f.Block == NotBlocked || f.Block == BlockNotMine) && starvedIn(s.Pools[n.Pool], f, now) {
				return false
			}
		}
	}
	return true
}

func (m *model) checkTracks(t *rapid.T, d Decision, now time.Time) {
	taken := map[int64]bool{}
	for _, id := range slices.Concat(d.Admitted, d.NotMine) {
		taken[id] = true
	}
	for id, tr := range m.tracks {
		if m.clock >= tr.bound && !taken[id] {
			t.Fatalf("entry %d top starved since step %d, bound %d, still waits at %d: %s",
				id, tr.since, tr.bound, m.clock, reasonMap(d)[id])
		}
	}
}

// checkFreshFirst: among entries of one walk group and priority, every fresh entry is walked
// before every backfill entry (§11), whatever their due times.
func checkFreshFirst(t *rapid.T, order []*Entry) {
	for i := 1; i < len(order); i++ {
		a, b := order[i-1], order[i]
		if group(a) == group(b) && group(a) != groupForce && a.Priority == b.Priority && a.Backfill && !b.Backfill {
			t.Fatalf("backfill entry %d walked before fresh entry %d of the same priority", a.ID, b.ID)
		}
	}
}
