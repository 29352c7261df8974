package pools

import "time"

// Admit decides one admission pass (§4.3–§4.5). It is pure: the same snapshot and time give
// the same decision, and it reads nothing else.
//
// Entries whose NotBefore is after now are invisible: not walked, expired or explained. The
// pass first expires every entry whose Deadline is set and before now. It then walks the
// remaining entries once in Compare order: force starts, then sensors holding kept claims,
// then everything else. An entry is admitted when every pool it needs exists and has room
// (capacity minus held minus taken in this pass, minus what is kept for starved entries) and
// nothing holds it back; admission takes all its needs at once in the pass's tally.
//
//   - Strict pool: an entry that lacks room in it, or is paused, forbid or node_unavailable,
//     becomes its head and every later entry needing the pool waits behind it. Waiting on a
//     limit or on another pool does not make an entry a head.
//   - Backfill pool: later entries that fit go ahead; blocked entries are passed over.
//   - Starvation: before the main walk, each entry that has waited longer than a backfill
//     pool's starvation_after (counted from its queue time, Queued) is promoted there, in walk
//     order: its slots are kept for it (taken from the room every other entry sees) when they
//     are free, and when they are not, the pool is closed to everybody else, so freed slots
//     accumulate for it.
//     This gives the starved entry the pool ahead of every non-starved entry without reordering
//     the walk, so strict pools keep their own order. A strict head counts as starved in every
//     backfill pool it needs (starvation_after 0 turns promotion off) from its place in the
//     walk on. A promoted entry keeps what it reserved for the rest of the pass even if
//     another pool holds it back. Entries waiting on a limit, or on room held by a sensor's
//     kept claims, are not promoted (a wait on a limit never blocks others; a wait on a kept
//     claim never blocks other pools, §5.1). An entry that cannot be admitted for a reason of
//     its own (paused, forbid, node_unavailable) is never promoted and, as a strict head,
//     blocks its strict pool but is not starved anywhere; nor is an entry behind it in a
//     strict pool, which cannot be admitted before it is (§4.4: a paused DAG cannot freeze a
//     backfill pool).
//   - Kept-claims sensors never block and are never promoted; force starts may block.
//   - not_mine entries that fit take their room and are listed in Decision.NotMine; those that
//     do not fit act like any waiting entry. They get no Reason: their own daemon gives it.
//   - Entries needing an unknown pool, or more slots than a pool's capacity, get reasons
//     unknown_pool / over_capacity, are listed in Decision.Rejected for the caller to reject,
//     and neither block nor keep room.
//
// Every other entry gets, through Decision.Reason, the first obstacle of: its Block,
// unknown_pool, over_capacity, behind, starved_head, pool_full, global_limit, dag_limit,
// task_limit (ties go to the earlier Need).
// Claims listed in an entry's Kept must also be in Snapshot.Holders: occupancy comes from
// holders only.
//
// The pass is linear in the number of needs plus the sort. A Queue makes the same decisions
// incrementally; Admit is its reference and the source of reasons shown on read (§4.5).
func Admit(s *Snapshot, now time.Time) Decision {
	w := newWalk(s, now)
	defer w.release()
	w.walk()
	return w.decision()
}

// walk phases run over positions in walk order (indexes into walk.pos), so each phase reads
// its state front to back instead of hopping around the snapshot.
func (w *walk) walk() {
	rest := int32(len(w.pos))
	for k := range w.pos {
		if w.keys[k].group() == groupRest {
			rest = int32(k)
			break
		}
		w.decide(int32(k))
	}
	for k := rest; k < int32(len(w.pos)); k++ {
		w.promote(k)
	}
	for k := rest; k < int32(len(w.pos)); k++ {
		w.decide(k)
	}
}

// decide admits the entry at position k or records why it waits.
func (w *walk) decide(k int32) {
	sl := &w.pos[k]
	if sl.block != kNone {
		sl.ob, sl.need = sl.block, none
		if !sl.kept && !sl.rejected { // kept-claims sensors never block
			for g := sl.off; g < sl.end; g++ {
				if pi := w.needs[g].pool; pi != none {
					if p := &w.pools[pi]; p.strict && p.head == none {
						p.head = k
					}
				}
			}
		}
		return
	}
	if sl.rejected {
		return
	}

	best, bestNeed, behind := kNone, none, none
	lacksLimit, lacksKept := false, false
	for g := sl.off; g < sl.end; g++ {
		n := w.needs[g]
		p := &w.pools[n.pool]
		slots := int(n.slots)
		ob, by := kNone, none
		switch {
		case p.strict && p.head != none:
			ob, by = kBehind, p.head
		case w.resv[g] || p.cap == Unlimited:
			continue
		case p.closedBy != none && p.closedBy != k:
			ob, by = kStarved, p.closedBy
		case p.cap-p.used-p.reserved >= slots:
			continue
		case p.reserved > 0 && p.cap-p.used >= slots:
			ob, by = kStarved, w.firstReserver(p)
		default:
			ob = p.limit
			lacksLimit = lacksLimit || p.implicit
			lacksKept = lacksKept || (!p.implicit && p.kept > 0)
		}
		if best == kNone || ob < best { // ties go to the earlier need
			best, bestNeed, behind = ob, g, by
		}
	}

	if best == kNone {
		for g := sl.off; g < sl.end; g++ {
			n := w.needs[g]
			p := &w.pools[n.pool]
			p.used += int(n.slots)
			if w.resv[g] {
				p.reserved -= int(n.slots)
				w.resv[g] = false
			}
		}
		sl.status = stAdmitted
		if sl.notMine {
			sl.status = stNotMine
		}
		w.taken = append(w.taken, k)
		return
	}
	sl.ob, sl.need, sl.behind = best, bestNeed, behind
	if sl.kept {
		return
	}
	head := false
	for g := sl.off; g < sl.end; g++ {
		n := w.needs[g]
		if p := &w.pools[n.pool]; p.strict && p.head == none && p.cap != Unlimited && p.cap-p.used < int(n.slots) {
			p.head = k
			head = true
		}
	}
	if head && !lacksLimit && !lacksKept && !w.behindOwnBlock(k) {
		for g := sl.off; g < sl.end; g++ {
			if w.pools[w.needs[g].pool].starve > 0 {
				w.reserve(k, g)
			}
		}
	}
}

// behindOwnBlock says a strict pool the entry at position k needs has, before it, an entry
// that cannot be admitted for a reason of its own: k cannot be admitted before that one is, so
// it is neither promoted nor starved as a head (§4.4).
func (w *walk) behindOwnBlock(k int32) bool {
	sl := &w.pos[k]
	for g := sl.off; g < sl.end; g++ {
		if p := &w.pools[w.needs[g].pool]; p.strict && p.blocked != none && p.blocked < k {
			return true
		}
	}
	return false
}

// promote keeps room for the entry at position k in each backfill pool where it has starved.
// It runs in walk order before the main walk, so promoted entries are served, in walk order,
// before every entry that is not promoted.
func (w *walk) promote(k int32) {
	sl := &w.pos[k]
	if sl.block != kNone || sl.rejected || w.behindOwnBlock(k) {
		return
	}
	starved := false
	for g := sl.off; g < sl.end; g++ {
		n := w.needs[g]
		p := &w.pools[n.pool]
		if p.strict && p.head != none {
			return // behind a force start's head: it could not use the room
		}
		if p.cap != Unlimited && p.cap-p.used-p.reserved < int(n.slots) && (p.implicit || p.kept > 0) {
			return
		}
		starved = starved || (p.starve > 0 && sl.waited > p.starve)
	}
	if !starved {
		return
	}
	for g := sl.off; g < sl.end; g++ {
		if p := &w.pools[w.needs[g].pool]; p.starve > 0 && sl.waited > p.starve {
			w.reserve(k, g)
		}
	}
}

// reserve keeps need g's slots for position k, or closes the pool for it when they are not
// free, so the slots freed there accumulate for it.
func (w *walk) reserve(k, g int32) {
	n := w.needs[g]
	p := &w.pools[n.pool]
	if w.resv[g] || p.closedBy != none || p.cap == Unlimited {
		return
	}
	if p.cap-p.used-p.reserved >= int(n.slots) {
		p.reserved += int(n.slots)
		w.resv[g] = true
		p.reservers = append(p.reservers, k)
		return
	}
	p.closedBy = k
}

// firstReserver is the earliest position still holding a reservation in p.
func (w *walk) firstReserver(p *poolState) int32 {
	for p.rpos < len(p.reservers) && w.pos[p.reservers[p.rpos]].status != stWaiting {
		p.rpos++
	}
	if p.rpos < len(p.reservers) {
		return p.reservers[p.rpos]
	}
	return none
}
