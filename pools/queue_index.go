package pools

import (
	"strings"
	"time"

	"github.com/poolflow/poolflow/vocab"
)

// qentry is one entry of a Queue with its place in the indexes.
type qentry struct {
	e       Entry
	key     walkKey
	needs   []qneed // parallel to e.Needs
	kept    []qkept // parallel to e.Kept
	queued  time.Time
	tq      tkey // queued, Deadline and NotBefore as sort keys
	td, tn  tkey
	block   kind // kPaused, kForbid, kNodeAway or kNone
	notMine bool
	hasKept bool // holds kept claims: never blocks, never promoted
	visible bool // NotBefore is not after the queue's now
	placed  bool // in the indexes of a visible entry
	rej     kind // kUnknown or kOver when it can never be admitted as the pools stand
	rejNeed int32
	list    *keyset // the decide stream it is filed in: the active list or a watch list

	// Per pass, valid when their stamp is the pass's.
	seen, pseen, gone uint64 // decided, promoted, expired
	rstamp            uint64
	resv              []bool // parallel to needs: slots reserved for it as starved
}

type qkept struct {
	pool  *qpool
	slots int
}

// member is need i of entry e, in its pool's members.
type member struct {
	e *qentry
	i int32
}

// leave takes need i of e out of p's members.
func (p *qpool) leave(e *qentry, i int) {
	at := e.needs[i].member
	last := p.members[len(p.members)-1]
	p.members[at] = last
	last.e.needs[last.i].member = at
	p.members = p.members[:len(p.members)-1]
}

type qneed struct {
	member int32 // its index in pool.members
	pool   *qpool
	slots  int32
	head   *keyset // the strict head class it is in, or nil
	starve uint8   // in the pool's pending (1) or starved (2) sets
}

// qpool is one pool name: configured, or only named by entries or claims.
type qpool struct {
	name     string
	conf     bool
	cfg      Pool
	cap      int
	strict   bool
	implicit bool
	limit    kind
	// starveAfter is the promotion threshold of a named backfill pool; 0 = none.
	starveAfter time.Duration

	holders  map[int64]claim
	held     int                  // sum of holders' slots
	keptSum  int                  // kept claims of visible entries
	keptRefs int                  // entries whose Kept names it
	members  []member             // entries needing it, visible or not
	lists    map[int32]*keyset    // watch lists, by slots
	parked   map[*keyset]struct{} // lists of other pools all of whose members need this full pool
	heads    []*keyset            // strict: head classes, by slots (-1: blocked entries)
	starved  *keyset              // finite starvation pools: starved entries by walk order,
	pending  *timeset             // those not starved yet, by queue time,
	starvedQ *timeset             // and the starved ones by queue time, for a clock that goes back

	// Pass state, valid when stamp is the pass's.
	stamp          uint64
	used, reserved int
	kept           int
	closedBy, head *qentry
	hver           uint32
}

func (q *Queue) pool(name string) *qpool {
	p, ok := q.pools[name]
	if !ok {
		p = &qpool{name: name, holders: map[int64]claim{},
			lists: map[int32]*keyset{}, parked: map[*keyset]struct{}{}}
		q.pools[name] = p
	}
	return p
}

// configure derives what the walk uses from the pool, as newWalk does.
func (p *qpool) configure(c Pool) {
	p.conf, p.cfg = true, c
	p.implicit = c.Implicit || strings.HasPrefix(p.name, "_")
	p.cap, p.limit, p.strict, p.starveAfter = c.Slots, kFull, false, 0
	if p.cap < Unlimited {
		p.cap = 0
	}
	switch {
	case p.implicit:
		p.limit = limitKind(p.name)
	case c.Ordering == vocab.Strict:
		p.strict = true
	case c.StarvationAfter > 0:
		p.starveAfter = c.StarvationAfter
	}
}

// gc forgets a pool name nothing refers to any more.
func (q *Queue) gc(p *qpool) {
	if !p.conf && len(p.members) == 0 && p.keptRefs == 0 && len(p.holders) == 0 {
		delete(q.pools, p.name)
	}
}

func newQentry(q *Queue, e Entry) *qentry {
	x := &qentry{e: e, queued: queuedAt(&e), needs: make([]qneed, len(e.Needs))}
	x.tq, x.td, x.tn = tkeyOf(x.queued), tkeyOf(e.Deadline), tkeyOf(e.NotBefore)
	switch e.Block {
	case BlockPaused:
		x.block = kPaused
	case BlockForbid:
		x.block = kForbid
	case BlockNodeAway:
		x.block = kNodeAway
	case BlockNotMine:
		x.notMine = true
	}
	for i, n := range e.Needs {
		p := q.pool(n.Pool)
		x.needs[i] = qneed{pool: p, slots: int32(min(max(n.Slots, 0), 1<<31-1)), member: int32(len(p.members))}
		p.members = append(p.members, member{x, int32(i)})
	}
	if len(e.Kept) > 0 {
		x.hasKept = true
		x.kept = make([]qkept, len(e.Kept))
		for i, c := range e.Kept {
			p := q.pool(c.Pool)
			p.keptRefs++
			x.kept[i] = qkept{pool: p, slots: c.Slots}
		}
	}
	x.key = newWalkKey(&e, 0, 0)
	x.visible = !e.NotBefore.After(q.now)
	return x
}

// place files an entry in the indexes its state calls for; unplace takes it out of them.
func (q *Queue) place(e *qentry) {
	if !e.visible {
		q.hidden.add(e)
		return
	}
	e.placed = true
	if !e.e.NotBefore.IsZero() {
		q.shown.add(e)
	}
	if !e.e.Deadline.IsZero() {
		q.deadlines.add(e)
	}
	for _, k := range e.kept {
		k.pool.keptSum += k.slots
	}
	e.rejNeed = -1
	e.rej = classify(e)
	if e.rej != kNone {
		q.rejected[e] = struct{}{}
		q.rejDirty = true
		return
	}
	if e.block == kNone {
		q.file(e, q.active)
	}
	rest := e.key.group() == groupRest
	for i := range e.needs {
		n := &e.needs[i]
		p := n.pool
		if p.strict && !e.hasKept {
			cls := n.slots
			if e.block != kNone {
				cls = -1
			}
			n.head = p.class(cls)
			n.head.add(e)
		}
		if p.starved != nil && rest && e.block == kNone {
			if q.starvedAt(e, p) {
				n.starve = 2
				p.starved.add(e)
				p.starved.count(e, 1)
				p.starvedQ.add(e)
			} else {
				n.starve = 1
				p.pending.add(e)
			}
		}
	}
}

func (q *Queue) unplace(e *qentry) {
	if !e.placed {
		if !e.visible {
			q.hidden.remove(e)
		}
		return
	}
	e.placed = false
	if !e.e.NotBefore.IsZero() {
		q.shown.remove(e)
	}
	if !e.e.Deadline.IsZero() {
		q.deadlines.remove(e)
	}
	for _, k := range e.kept {
		k.pool.keptSum -= k.slots
	}
	if e.rej != kNone {
		delete(q.rejected, e)
		q.rejDirty = true
		e.rej = kNone
		return
	}
	q.unfile(e)
	for i := range e.needs {
		n := &e.needs[i]
		if n.head != nil {
			n.head.remove(e)
			n.head = nil
		}
		switch n.starve {
		case 1:
			n.pool.pending.remove(e)
		case 2:
			n.pool.starved.remove(e)
			n.pool.starved.count(e, -1)
			n.pool.starvedQ.remove(e)
		}
		n.starve = 0
	}
}

// classify says whether the entry can never be admitted as its pools stand: an unknown pool
// first, then a need above a finite capacity (as walk.classify).
func classify(e *qentry) kind {
	for i := range e.needs {
		if !e.needs[i].pool.conf {
			e.rejNeed = int32(i)
			return kUnknown
		}
	}
	for i := range e.needs {
		if n := &e.needs[i]; n.pool.cap != Unlimited && int(n.slots) > n.pool.cap {
			e.rejNeed = int32(i)
			return kOver
		}
	}
	return kNone
}

// rejection is what Decision.Rejected says of a rejected entry, as walk.reason does.
func (e *qentry) rejection() Rejection {
	n := &e.needs[e.rejNeed]
	r := Reason{Kind: kindNames[e.rej], Pool: n.pool.name, Need: int(n.slots)}
	if e.rej == kOver {
		r.Capacity = n.pool.cap
	}
	return Rejection{Entry: e.e.ID, Reason: r}
}

func (q *Queue) starvedAt(e *qentry, p *qpool) bool {
	return q.now.Sub(e.queued) > p.starveAfter
}
