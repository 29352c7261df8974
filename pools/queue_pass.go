package pools

import (
	"cmp"
	"slices"
	"time"
)

// A pass walks the same order as Admit and runs the same rules on each entry it visits, but
// visits only entries that can change something: an entry it skips could not have been
// admitted, made a strict head, or kept room for itself. It merges, in walk order, streams
// that each yield such candidates:
//
//   - the active list and each armed watch list (P, s), while P is open for s (no strict head,
//     not closed for a starved entry, room for s) and while no pool that every member needs is
//     closed to all;
//   - for each strict pool, its next head: the first entry after the walk's position that is
//     blocked or needs more than the pool's room (indexed by need, so found without a scan);
//   - in the promotion phase, each finite starvation pool's starved entries until the pool is
//     closed; then the entries that reserved room, which the main walk must visit.
//
// Within a pass a pool's room only shrinks and heads and closings only appear, so a stream
// found closed stays closed: the merge drops it. A list dropped because all its members need a
// pool that was full before the pass is parked on that pool until its claims shrink. An entry
// visited and not admitted is filed under a pool it lacks room in (preferring one that will
// stay full after this pass's admissions), so the next pass looks at it only when that pool
// has room again.

// runState is a pass's working memory, kept between passes.
type runState struct {
	heap, pheap []hitem
	taken       []*qentry
	promoted    []*qentry
}

const (
	srcList uint8 = iota // a keyset: active list, watch list or starved set
	srcHead              // a strict pool's next head
	srcPromoted
)

type hitem struct {
	e    *qentry
	set  *keyset
	pool *qpool
	ver  uint32
	i    int32
	src  uint8
}

// Pass decides one admission pass at now: what Admit(q.Snapshot(), now) decides, without
// reasons. It changes nothing the queue holds (see Queue); apply the decision once committed.
func (q *Queue) Pass(now time.Time) Decision {
	q.pass++
	q.setNow(now)
	r := &q.run
	r.heap, r.pheap, r.taken, r.promoted = r.heap[:0], r.pheap[:0], r.taken[:0], r.promoted[:0]

	var d Decision
	rejGone := false
	q.deadlines.scan(func(e *qentry) bool {
		if !now.After(e.e.Deadline) {
			return false
		}
		e.gone = q.pass
		rejGone = rejGone || e.rej != kNone
		d.Expired = append(d.Expired, e.e.ID)
		for _, k := range e.kept {
			if k.pool.conf {
				q.st(k.pool).kept -= k.slots
			}
		}
		return true
	})
	slices.Sort(d.Expired)

	for _, l := range q.armed {
		if x := l.after(nil); x != nil {
			r.heap = pushItem(r.heap, hitem{e: x, set: l, src: srcList})
		}
	}
	for _, p := range q.strict {
		q.nextHead(p, nil)
	}
	q.walk(true) // force starts and kept-claims sensors
	q.promote()
	if len(r.promoted) > 0 {
		r.heap = pushItem(r.heap, hitem{e: r.promoted[0], src: srcPromoted})
	}
	q.walk(false)

	for _, e := range r.taken {
		if e.notMine {
			d.NotMine = append(d.NotMine, e.e.ID)
		} else {
			d.Admitted = append(d.Admitted, e.e.ID)
		}
	}
	d.Rejected = q.rejections(rejGone)
	return d
}

// NextWake is the earliest time after now at which the passing of time alone can change a
// decision, as the queue stands after Pass(now): the next queue deadline to pass, not-before
// time to come, or starvation threshold to cross. Zero when none. The loop sleeps until then
// unless something else happens first (§4.4).
func (q *Queue) NextWake(now time.Time) time.Time {
	var next time.Time
	soonest := func(t time.Time) {
		if t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	it := q.deadlines.tr.Iter()
	if it.Seek(titem{t: tkeyOf(now)}) {
		soonest(it.Item().e.e.Deadline.Add(time.Nanosecond)) // expires once now is past it
	}
	it.Release()
	if e := q.hidden.first(); e != nil {
		soonest(e.e.NotBefore)
	}
	for _, p := range q.starve {
		if e := p.pending.first(); e != nil {
			soonest(e.queued.Add(p.starveAfter + time.Nanosecond)) // starved once waited > after
		}
	}
	return next
}

// rejections lists the unblocked rejected entries by ID, unless expired in this pass. The
// sorted list is kept until the set changes, so entries a caller lets wait on an unknown pool
// cost nothing per pass; it is shared between decisions, so read only.
func (q *Queue) rejections(someExpired bool) []Rejection {
	if q.rejDirty {
		q.rejDirty = false
		q.rejList = q.rejList[:0:0]
		for e := range q.rejected {
			if e.e.Block == NotBlocked {
				q.rejList = append(q.rejList, e.rejection())
			}
		}
		slices.SortFunc(q.rejList, func(a, b Rejection) int { return cmp.Compare(a.Entry, b.Entry) })
	}
	if len(q.rejList) == 0 {
		return nil
	}
	if !someExpired {
		return q.rejList[:len(q.rejList):len(q.rejList)]
	}
	var out []Rejection
	for _, r := range q.rejList {
		if q.entries[r.Entry].gone != q.pass {
			out = append(out, r)
		}
	}
	return out
}

// setNow brings visibility and starvation up to now, in either direction.
func (q *Queue) setNow(now time.Time) {
	q.now = now
	for {
		e := q.hidden.first()
		if e == nil || e.e.NotBefore.After(now) {
			break
		}
		q.hidden.remove(e)
		e.visible = true
		q.place(e)
	}
	for {
		e := q.shown.last()
		if e == nil || !e.e.NotBefore.After(now) {
			break
		}
		q.unplace(e)
		e.visible = false
		q.place(e)
	}
	for _, p := range q.starve {
		for {
			e := p.pending.first()
			if e == nil || !q.starvedAt(e, p) {
				break
			}
			p.pending.remove(e)
			p.starved.add(e)
			p.starved.count(e, 1)
			p.starvedQ.add(e)
			e.need(p).starve = 2
		}
		for {
			e := p.starvedQ.last()
			if e == nil || q.starvedAt(e, p) {
				break
			}
			p.starvedQ.remove(e)
			p.starved.remove(e)
			p.starved.count(e, -1)
			p.pending.add(e)
			e.need(p).starve = 1
		}
	}
}

func (e *qentry) need(p *qpool) *qneed {
	for i := range e.needs {
		if e.needs[i].pool == p {
			return &e.needs[i]
		}
	}
	return nil
}

// st is p's pass state, reset on first use in a pass: used starts at what is held.
func (q *Queue) st(p *qpool) *qpool {
	if p.stamp != q.pass {
		p.stamp = q.pass
		p.used, p.reserved, p.kept = p.held, 0, p.keptSum
		p.closedBy, p.head = nil, nil
		p.hver++
	}
	return p
}

// walk runs the merge of decide streams: over force starts and kept-claims sensors only when
// first, else to the end.
func (q *Queue) walk(first bool) {
	r := &q.run
	for len(r.heap) > 0 {
		it := r.heap[0]
		if first && it.e.key.group() == groupRest {
			return
		}
		r.heap = popItem(r.heap)
		switch it.src {
		case srcList:
			l := it.set
			if l.pool != nil && q.closed(l.pool, l.slots) {
				continue
			}
			if p := q.deadFor(l, it.e, q.closedToAll); p != nil {
				if p.full() {
					q.park(l, p)
				}
				continue
			}
			q.visit(it.e)
			if x := l.after(it.e); x != nil {
				r.heap = pushItem(r.heap, hitem{e: x, set: l, src: srcList})
			}
		case srcHead:
			if p := q.st(it.pool); p.head == nil && it.ver == p.hver {
				q.visit(it.e)
			}
		case srcPromoted:
			q.visit(it.e)
			if i := it.i + 1; int(i) < len(r.promoted) {
				r.heap = pushItem(r.heap, hitem{e: r.promoted[i], i: i, src: srcPromoted})
			}
		}
	}
}

func (q *Queue) visit(e *qentry) {
	if e.seen == q.pass {
		return
	}
	e.seen = q.pass
	if e.gone != q.pass {
		q.decide(e)
	}
}

// closed says no entry needing slots of p can get them from here on in this pass, except one
// that reserved them (and is visited as promoted).
func (q *Queue) closed(p *qpool, slots int32) bool {
	p = q.st(p)
	return p.strict && p.head != nil || p.cap != Unlimited && (p.closedBy != nil || p.cap-p.used-p.reserved < int(slots))
}

func (q *Queue) closedToAll(p *qpool) bool { return q.closed(p, 1) }

// deadFor finds a pool for which shut holds that every member of s needs, with at least one
// slot, or nil. Any member's needs include such a pool, so x's are enough to look at.
func (q *Queue) deadFor(s *keyset, x *qentry, shut func(*qpool) bool) *qpool {
	size := int32(s.len())
	for i := range x.needs {
		if n := &x.needs[i]; n.slots > 0 && s.cnt[n.pool] == size && shut(n.pool) {
			return n.pool
		}
	}
	return nil
}

// pushItem and popItem keep a binary min-heap of stream heads in walk order.
func pushItem(h []hitem, it hitem) []hitem {
	h = append(h, it)
	i := len(h) - 1
	for i > 0 {
		up := (i - 1) / 2
		if !keyLess(&h[i].e.key, &h[up].e.key) {
			break
		}
		h[i], h[up] = h[up], h[i]
		i = up
	}
	return h
}

func popItem(h []hitem) []hitem {
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	i := 0
	for {
		l, small := 2*i+1, i
		if l < len(h) && keyLess(&h[l].e.key, &h[small].e.key) {
			small = l
		}
		if r := l + 1; r < len(h) && keyLess(&h[r].e.key, &h[small].e.key) {
			small = r
		}
		if small == i {
			return h
		}
		h[i], h[small] = h[small], h[i]
		i = small
	}
}
