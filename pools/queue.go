package pools

import (
	"cmp"
	"slices"
	"time"
)

// Queue makes Admit's decisions incrementally. The scheduler loop keeps one between passes,
// tells it what changed (entries put or removed, pools set or removed, claims added or
// released) and calls Pass, whose cost follows what changed and what it admits rather than the
// number of waiting entries.
//
// Pass(now) decides exactly what Admit(q.Snapshot(), now) decides: the same Admitted, Expired,
// NotMine and Rejected. It gives no reasons: those are computed on read, by Admit over a
// snapshot (§4.5).
//
// Contract: Pass never changes what the queue holds. The caller applies a decision after its
// transaction commits, with Apply or with Remove and AddHolder; when the transaction fails it
// applies nothing and the queue still matches the store. Pass only reorganises the indexes it
// keeps (which entries it watches under which pool), so a pass repeated with the same time
// decides the same. A Queue is not safe for concurrent use.
//
// How it stays cheap: an entry that could not be admitted is filed under one pool it lacks
// room in, and a pass looks at it again only when that pool has room at the start of a pass;
// a pool's waiters are left alone as soon as some pool all of them need is closed, and parked
// while that pool stays full (when _global is full, nothing of this daemon is looked at); a
// strict pool's head is found from its waiters indexed by need, and starved entries and
// deadlines from indexes by time.
type Queue struct {
	entries map[int64]*qentry
	pools   map[string]*qpool
	active  *keyset   // entries not filed under a pool yet: looked at by the next pass
	armed   []*keyset // watch lists whose pool had room when its holders last changed
	strict  []*qpool  // configured strict pools
	starve  []*qpool  // configured finite pools with starvation promotion

	deadlines *timeset             // visible entries with a deadline
	hidden    *timeset             // entries whose NotBefore is after now
	shown     *timeset             // visible entries with a NotBefore, for a clock that goes back
	rejected  map[*qentry]struct{} // visible entries that can never be admitted as pools stand
	rejList   []Rejection          // the unblocked ones by ID, while not rejDirty
	rejDirty  bool
	holding   map[*qpool]struct{} // pools with claims

	now  time.Time // of the last pass: visibility and starvation are kept for it
	pass uint64
	sync uint64 // SyncHolders stamp
	run  runState
}

// NewQueue returns an empty queue.
func NewQueue() *Queue {
	q := &Queue{entries: map[int64]*qentry{}, pools: map[string]*qpool{}, rejected: map[*qentry]struct{}{},
		holding: map[*qpool]struct{}{}}
	q.active = newKeyset(nil, 0)
	q.active.cnt = map[*qpool]int32{}
	q.deadlines = newTimeset(byDeadline)
	q.hidden = newTimeset(byNotBefore)
	q.shown = newTimeset(byNotBefore)
	return q
}

// Len is the number of entries in the queue, visible or not.
func (q *Queue) Len() int { return len(q.entries) }

// Entry returns the entry with this ID as it was put; its slices are the queue's, read only.
func (q *Queue) Entry(id int64) (Entry, bool) {
	e, ok := q.entries[id]
	if !ok {
		return Entry{}, false
	}
	return e.e, true
}

// Put adds a waiting entry, or replaces the entry with the same ID (its needs, block, force
// flag, kept claims, deadline, queue time, not-before time, order). Its slices are copied and
// its times kept without monotonic clock readings, as the store keeps them.
func (q *Queue) Put(e Entry) {
	if old, ok := q.entries[e.ID]; ok {
		q.drop(old)
	}
	e.Needs, e.Kept = slices.Clone(e.Needs), slices.Clone(e.Kept)
	e.Due, e.Queued, e.Deadline, e.NotBefore = e.Due.Round(0), e.Queued.Round(0), e.Deadline.Round(0), e.NotBefore.Round(0)
	x := newQentry(q, e)
	q.entries[e.ID] = x
	q.place(x)
}

// Remove takes the entry out of the queue: admitted, expired, rejected or cancelled.
func (q *Queue) Remove(id int64) {
	if e, ok := q.entries[id]; ok {
		q.drop(e)
		delete(q.entries, id)
	}
}

func (q *Queue) drop(e *qentry) {
	q.unplace(e)
	for i := range e.needs {
		p := e.needs[i].pool
		p.leave(e, i)
		q.gc(p)
	}
	for _, k := range e.kept {
		k.pool.keptRefs--
		q.gc(k.pool)
	}
}

// SetPool adds or changes a pool: its capacity, ordering and starvation_after. Setting a pool
// as it is costs nothing; a change re-files every entry needing the pool.
func (q *Queue) SetPool(p Pool) {
	x := q.pool(p.Name)
	if x.conf && x.cfg == p {
		return
	}
	q.reconfigure(x, func() { x.configure(p) })
}

// RemovePool removes a pool: entries needing it now need an unknown pool. Its claims stay
// until they are released.
func (q *Queue) RemovePool(name string) {
	x, ok := q.pools[name]
	if !ok || !x.conf {
		return
	}
	q.reconfigure(x, func() { x.conf, x.cfg = false, Pool{} })
	q.gc(x)
}

func (q *Queue) reconfigure(x *qpool, change func()) {
	members := make([]*qentry, 0, len(x.members))
	for _, m := range x.members {
		members = append(members, m.e)
	}
	slices.SortFunc(members, func(a, b *qentry) int { return cmp.Compare(a.e.ID, b.e.ID) })
	members = slices.Compact(members) // an entry listing the pool twice is one member
	for _, e := range members {
		q.unplace(e)
	}
	q.strict = slices.DeleteFunc(q.strict, func(p *qpool) bool { return p == x })
	q.starve = slices.DeleteFunc(q.starve, func(p *qpool) bool { return p == x })
	change()
	x.stamp = 0 // its pass state is stale
	if x.conf && x.strict {
		q.strict = append(q.strict, x)
	}
	if x.conf && x.starveAfter > 0 && x.cap != Unlimited {
		q.starve = append(q.starve, x)
		x.starved = newKeyset(x, 0)
		x.starved.cnt = map[*qpool]int32{}
		x.pending = newTimeset(byQueued)
		x.starvedQ = newTimeset(byQueued)
	} else {
		x.starved, x.pending, x.starvedQ = nil, nil, nil
	}
	for _, e := range members {
		q.place(e)
	}
}

// AddHolder records a claim: entry h.Entry holds h.Slots of pool. A claim of the same entry
// in the same pool is replaced.
func (q *Queue) AddHolder(pool string, h Holder) {
	p := q.pool(pool)
	if old, ok := p.holders[h.Entry]; ok {
		p.held -= old.Slots
	}
	p.holders[h.Entry] = claim{Holder: h, sync: q.sync}
	p.held += h.Slots
	q.holding[p] = struct{}{}
	q.rearm(p)
}

// RemoveHolder releases entry's claim in pool.
func (q *Queue) RemoveHolder(pool string, entry int64) {
	p, ok := q.pools[pool]
	if !ok {
		return
	}
	if old, ok := p.holders[entry]; ok {
		delete(p.holders, entry)
		p.held -= old.Slots
		if len(p.holders) == 0 {
			delete(q.holding, p)
		}
		q.rearm(p)
		q.gc(p)
	}
}

// SyncHolders makes the claims exactly hs, by pool, touching only what differs: for a loop
// that re-reads every claim in its transaction (other daemons' claims change between passes).
// It costs the number of claims, not of waiting entries.
func (q *Queue) SyncHolders(hs map[string][]Holder) {
	q.sync++
	for name, list := range hs {
		for _, h := range list {
			p := q.pools[name]
			if p != nil {
				if old, ok := p.holders[h.Entry]; ok && old.Holder == h {
					old.sync = q.sync
					p.holders[h.Entry] = old
					continue
				}
			}
			q.AddHolder(name, h)
		}
	}
	var gone []claimRef
	for p := range q.holding {
		for id, c := range p.holders {
			if c.sync != q.sync {
				gone = append(gone, claimRef{p.name, id})
			}
		}
	}
	for _, c := range gone {
		q.RemoveHolder(c.pool, c.entry)
	}
}

type claim struct {
	Holder
	sync uint64 // SyncHolders stamp that last saw it
}

type claimRef struct {
	pool  string
	entry int64
}

// Waiting is how many entries of the queue need the pool, visible or not: the waiting entries
// that count against its backlog (max_queued, §4.6).
func (q *Queue) Waiting(pool string) int {
	if p, ok := q.pools[pool]; ok {
		return len(p.members)
	}
	return 0
}

// Apply applies a committed decision of this queue's Pass: admitted entries leave the queue
// and hold every pool they needed; expired entries leave it. Rejected entries stay until the
// caller removes them; not_mine entries stay for their own daemon.
func (q *Queue) Apply(d Decision) {
	for _, id := range d.Admitted {
		e, ok := q.entries[id]
		if !ok {
			continue
		}
		for _, n := range e.e.Needs {
			q.AddHolder(n.Pool, Holder{Entry: id, Label: e.e.Label, Slots: n.Slots})
		}
		q.Remove(id)
	}
	for _, id := range d.Expired {
		q.Remove(id)
	}
}

// Snapshot is what the queue holds, for Admit: to explain (reasons on read) or to check a
// pass. Entries are by ID and holders by entry; Needs and Kept slices are shared, read only.
func (q *Queue) Snapshot() *Snapshot {
	s := &Snapshot{Pools: map[string]Pool{}, Holders: map[string][]Holder{}, Entries: make([]Entry, 0, len(q.entries))}
	for name, p := range q.pools {
		if p.conf {
			s.Pools[name] = p.cfg
		}
		if len(p.holders) > 0 {
			hs := make([]Holder, 0, len(p.holders))
			for _, c := range p.holders {
				hs = append(hs, c.Holder)
			}
			slices.SortFunc(hs, func(a, b Holder) int { return cmp.Compare(a.Entry, b.Entry) })
			s.Holders[name] = hs
		}
	}
	for _, e := range q.entries {
		s.Entries = append(s.Entries, e.e)
	}
	slices.SortFunc(s.Entries, func(a, b Entry) int { return cmp.Compare(a.ID, b.ID) })
	return s
}
