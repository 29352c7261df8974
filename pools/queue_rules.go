package pools

// The rules a pass applies to each entry it visits: the same as walk.decide, walk.promote
// and walk.reserve, on a Queue's entries, plus finding strict heads and filing waiting
// entries under the pools they wait on.

// nextHead finds strict pool p's next head after e (from the start when nil): the first
// entry needing p that is blocked or needs more than p's room, which the walk makes the head
// when it gets there unless an admission into p comes first (and calls nextHead again).
func (q *Queue) nextHead(p *qpool, after *qentry) {
	p = q.st(p)
	if p.head != nil {
		return
	}
	p.hver++
	free := p.cap - p.used
	var best *qentry
	for _, c := range p.heads {
		if c.slots >= 0 && (p.cap == Unlimited || int(c.slots) <= free) {
			continue
		}
		for x := c.after(after); x != nil; x = c.after(x) {
			if x.gone != q.pass {
				if best == nil || keyLess(&x.key, &best.key) {
					best = x
				}
				break
			}
		}
	}
	if best != nil {
		q.run.heap = pushItem(q.run.heap, hitem{e: best, pool: p, ver: p.hver, src: srcHead})
	}
}

// promote runs the promotion phase over starved entries in walk order, as walk.promote does,
// pool by pool until the pool is closed for a starved entry.
func (q *Queue) promote() {
	r := &q.run
	for _, p := range q.starve {
		if x := p.starved.after(nil); x != nil {
			r.pheap = pushItem(r.pheap, hitem{e: x, set: p.starved, src: srcList})
		}
	}
	for len(r.pheap) > 0 {
		it := r.pheap[0]
		r.pheap = popItem(r.pheap)
		s := it.set
		// Each holds for every later member too, so the rest of the set is skipped.
		if q.st(s.pool).closedBy != nil || q.deadFor(s, it.e, q.stopsPromotion) != nil || q.allBehindOwnBlock(s, it.e) {
			continue
		}
		if e := it.e; e.pseen != q.pass {
			e.pseen = q.pass
			if e.gone != q.pass {
				q.promoteOne(e)
			}
		}
		if x := s.after(it.e); x != nil {
			r.pheap = pushItem(r.pheap, hitem{e: x, set: s, src: srcList})
		}
	}
}

// stopsPromotion says a starved entry needing at least a slot of p is not promoted at all.
func (q *Queue) stopsPromotion(p *qpool) bool {
	p = q.st(p)
	return p.strict && p.head != nil || p.cap != Unlimited && p.cap-p.used-p.reserved < 1 && (p.implicit || p.kept > 0)
}

// ownBlockBefore says strict pool p has, before e in walk order, an entry that cannot be
// admitted for a reason of its own (its head class of blocked entries, less those expired in
// this pass), as walk.behindOwnBlock.
func (q *Queue) ownBlockBefore(p *qpool, e *qentry) bool {
	if !p.strict {
		return false
	}
	c := p.blockedClass()
	if c == nil {
		return false
	}
	x := c.after(nil)
	for x != nil && x.gone == q.pass {
		x = c.after(x)
	}
	return x != nil && keyLess(&x.key, &e.key)
}

// behindOwnBlock says a strict pool e needs has an entry blocked for a reason of its own
// before e: e is neither promoted nor starved as a head.
func (q *Queue) behindOwnBlock(e *qentry) bool {
	for i := range e.needs {
		if q.ownBlockBefore(e.needs[i].pool, e) {
			return true
		}
	}
	return false
}

// allBehindOwnBlock says every member of s from x on is behind an entry blocked for a reason
// of its own, in a strict pool all of them need (as deadFor).
func (q *Queue) allBehindOwnBlock(s *keyset, x *qentry) bool {
	size := int32(s.len())
	for i := range x.needs {
		if n := &x.needs[i]; n.slots > 0 && n.pool.strict && s.cnt[n.pool] == size && q.ownBlockBefore(n.pool, x) {
			return true
		}
	}
	return false
}

func (q *Queue) promoteOne(e *qentry) {
	if q.behindOwnBlock(e) {
		return
	}
	waited := q.now.Sub(e.queued)
	starved := false
	for i := range e.needs {
		n := &e.needs[i]
		p := q.st(n.pool)
		if p.strict && p.head != nil {
			return
		}
		if p.cap != Unlimited && p.cap-p.used-p.reserved < int(n.slots) && (p.implicit || p.kept > 0) {
			return
		}
		starved = starved || (p.starveAfter > 0 && waited > p.starveAfter)
	}
	if !starved {
		return
	}
	reserved := false
	for i := range e.needs {
		if p := e.needs[i].pool; p.starveAfter > 0 && waited > p.starveAfter {
			reserved = q.reserve(e, i) || reserved
		}
	}
	if reserved {
		q.run.promoted = append(q.run.promoted, e)
	}
}

// reserve keeps need g's slots for e, or closes the pool for it when they are not free (as
// walk.reserve). It reports whether it reserved.
func (q *Queue) reserve(e *qentry, g int) bool {
	n := &e.needs[g]
	p := q.st(n.pool)
	if e.hasResv(q, g) || p.closedBy != nil || p.cap == Unlimited {
		return false
	}
	if p.cap-p.used-p.reserved >= int(n.slots) {
		p.reserved += int(n.slots)
		if e.rstamp != q.pass {
			e.rstamp = q.pass
			if len(e.resv) < len(e.needs) {
				e.resv = make([]bool, len(e.needs))
			}
			clear(e.resv)
		}
		e.resv[g] = true
		return true
	}
	p.closedBy = e
	return false
}

func (e *qentry) hasResv(q *Queue, g int) bool { return e.rstamp == q.pass && e.resv[g] }

// decide admits e or lets it wait, exactly as walk.decide, then files a waiting entry under a
// pool it lacks room in.
func (q *Queue) decide(e *qentry) {
	if e.block != kNone {
		if !e.hasKept && e.rej == kNone {
			for i := range e.needs {
				if p := q.st(e.needs[i].pool); p.strict && p.head == nil {
					p.head = e
				}
			}
		}
		return
	}
	if e.rej != kNone {
		return
	}
	best := kNone
	lacksLimit, lacksKept := false, false
	var watch *qpool
	var watchSlots int32
	deficit := 0
	for g := range e.needs {
		n := &e.needs[g]
		p := q.st(n.pool)
		slots := int(n.slots)
		ob := kNone
		switch {
		case p.strict && p.head != nil:
			ob = kBehind
		case e.hasResv(q, g) || p.cap == Unlimited:
			continue
		case p.closedBy != nil && p.closedBy != e:
			ob = kStarved
		case p.cap-p.used-p.reserved >= slots:
			continue
		case p.reserved > 0 && p.cap-p.used >= slots:
			ob = kStarved
		default:
			ob = p.limit
			lacksLimit = lacksLimit || p.implicit
			lacksKept = lacksKept || (!p.implicit && p.kept > 0)
		}
		if best == kNone || ob < best {
			best = ob
		}
		// File it where it waits longest: a pool still full once this pass's admissions hold
		// their slots, the fuller the better, then the smaller (it frees less often).
		short := 0
		if p.cap != Unlimited {
			short = slots - (p.cap - p.used)
		}
		if watch == nil || short > deficit || short == deficit && short > 0 && p.cap < watch.cap {
			watch, watchSlots, deficit = p, n.slots, short
		}
	}

	if best == kNone {
		for g := range e.needs {
			n := &e.needs[g]
			p := q.st(n.pool)
			p.used += int(n.slots)
			if e.hasResv(q, g) {
				p.reserved -= int(n.slots)
				e.resv[g] = false
			}
		}
		q.run.taken = append(q.run.taken, e)
		for g := range e.needs {
			if p := e.needs[g].pool; p.strict {
				q.nextHead(p, e)
			}
		}
		return
	}
	q.file(e, watch.watch(watchSlots))
	if e.hasKept {
		return
	}
	head := false
	for g := range e.needs {
		n := &e.needs[g]
		if p := q.st(n.pool); p.strict && p.head == nil && p.cap != Unlimited && p.cap-p.used < int(n.slots) {
			p.head = e
			head = true
		}
	}
	if head && !lacksLimit && !lacksKept && !q.behindOwnBlock(e) {
		for g := range e.needs {
			if e.needs[g].pool.starveAfter > 0 {
				q.reserve(e, g)
			}
		}
	}
}
