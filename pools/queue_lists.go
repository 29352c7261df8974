package pools

import (
	"time"

	"github.com/tidwall/btree"
)

// class is the strict head class of entries needing slots of p (-1: blocked entries).
func (p *qpool) class(slots int32) *keyset {
	for _, c := range p.heads {
		if c.slots == slots {
			return c
		}
	}
	c := newKeyset(p, slots)
	p.heads = append(p.heads, c)
	return c
}

// blockedClass is p's head class of blocked entries, or nil when it has none.
func (p *qpool) blockedClass() *keyset {
	for _, c := range p.heads {
		if c.slots == -1 {
			return c
		}
	}
	return nil
}

// file puts the entry in decide stream l: the active list or a watch list.
func (q *Queue) file(e *qentry, l *keyset) {
	if e.list == l {
		return
	}
	q.unfile(e)
	e.list = l
	l.add(e)
	l.count(e, 1)
	q.unpark(l) // the newcomer may not need the pool it was parked on
	q.arm(l)
}

func (q *Queue) unfile(e *qentry) {
	l := e.list
	if l == nil {
		return
	}
	e.list = nil
	l.remove(e)
	l.count(e, -1)
	q.arm(l)
	if p := l.pool; p != nil && l.len() == 0 {
		q.unpark(l)
		delete(p.lists, l.slots)
	}
}

// watch is p's watch list of entries needing slots of it.
func (p *qpool) watch(slots int32) *keyset {
	if l, ok := p.lists[slots]; ok {
		return l
	}
	l := newKeyset(p, slots)
	l.cnt = map[*qpool]int32{}
	p.lists[slots] = l
	return l
}

// park takes decide stream l out of the armed lists while pool p, which all its members need,
// is full before any pass takes anything: until p's claims shrink or l gets a new member. So
// the waiters of a pool with room cost nothing while _global (or another pool they all need)
// stays full.
func (q *Queue) park(l *keyset, p *qpool) {
	l.parked = p
	p.parked[l] = struct{}{}
	q.arm(l)
}

func (q *Queue) unpark(l *keyset) {
	if p := l.parked; p != nil {
		l.parked = nil
		delete(p.parked, l)
		q.arm(l)
	}
}

// arm keeps q.armed the decide streams a pass must look at: the active list when not empty,
// and the watch lists whose pool has room for them before the pass takes any.
func (q *Queue) arm(l *keyset) {
	want := l.len() > 0 && l.parked == nil
	if p := l.pool; want && p != nil {
		want = p.cap == Unlimited || p.cap-p.held >= int(l.slots)
	}
	switch {
	case want && l.armed < 0:
		l.armed = len(q.armed)
		q.armed = append(q.armed, l)
	case !want && l.armed >= 0:
		last := q.armed[len(q.armed)-1]
		q.armed[l.armed], last.armed = last, l.armed
		q.armed = q.armed[:len(q.armed)-1]
		l.armed = -1
	}
}

func (q *Queue) rearm(p *qpool) {
	for _, l := range p.lists {
		q.arm(l)
	}
	if !p.full() {
		for l := range p.parked {
			q.unpark(l)
		}
	}
}

// full says p has no slot left before a pass takes any.
func (p *qpool) full() bool { return p.conf && p.cap != Unlimited && p.cap-p.held < 1 }

// keyset is a set of entries in walk order. Watch lists, the active list and starved sets
// also count their members' needs by pool (cnt), so a pass can tell at once that every member
// needs a pool that is closed.
type keyset struct {
	tr     *btree.BTreeG[kitem]
	pool   *qpool
	slots  int32
	parked *qpool           // the full pool it is parked on, or nil
	cnt    map[*qpool]int32 // members needing the pool with at least one slot
	armed  int              // index in Queue.armed, or -1
}

// kitem is a member with its walk key inline, so the tree compares keys without chasing
// pointers to entries all over the heap.
type kitem struct {
	k walkKey
	e *qentry
}

func kitemLess(a, b kitem) bool { return keyLess(&a.k, &b.k) }

func newKeyset(p *qpool, slots int32) *keyset {
	return &keyset{tr: btree.NewBTreeGOptions(kitemLess, btree.Options{NoLocks: true}), pool: p, slots: slots, armed: -1}
}

func (s *keyset) add(e *qentry)    { s.tr.Set(kitem{e.key, e}) }
func (s *keyset) remove(e *qentry) { s.tr.Delete(kitem{e.key, e}) }
func (s *keyset) len() int         { return s.tr.Len() }

func (s *keyset) count(e *qentry, d int32) {
	if s.cnt == nil {
		return
	}
	for i := range e.needs {
		if n := &e.needs[i]; n.slots > 0 {
			if c := s.cnt[n.pool] + d; c == 0 {
				delete(s.cnt, n.pool)
			} else {
				s.cnt[n.pool] = c
			}
		}
	}
}

// after is the first member after e in walk order (the first member when e is nil).
func (s *keyset) after(e *qentry) *qentry {
	if e == nil {
		x, _ := s.tr.Min()
		return x.e
	}
	it := s.tr.Iter()
	defer it.Release()
	if !it.Seek(kitem{e.key, e}) {
		return nil
	}
	if it.Item().e == e && !it.Next() {
		return nil
	}
	return it.Item().e
}

// timeset is a set of entries by one of their times, then ID.
type timeset struct {
	tr *btree.BTreeG[titem]
	at func(*qentry) tkey
}

type titem struct {
	t  tkey
	id int64
	e  *qentry
}

func titemLess(a, b titem) bool { return a.t.less(b.t) || a.t == b.t && a.id < b.id }

// tkey is a time as Unix seconds and nanoseconds: it orders as the wall clock, which is how
// the queue compares its entries' times (Put drops monotonic clock readings).
type tkey struct {
	sec  int64
	nsec int32
}

func tkeyOf(t time.Time) tkey { return tkey{t.Unix(), int32(t.Nanosecond())} }

func (a tkey) less(b tkey) bool { return a.sec < b.sec || a.sec == b.sec && a.nsec < b.nsec }

func newTimeset(at func(*qentry) tkey) *timeset {
	return &timeset{tr: btree.NewBTreeGOptions(titemLess, btree.Options{NoLocks: true}), at: at}
}

func byQueued(e *qentry) tkey    { return e.tq }
func byDeadline(e *qentry) tkey  { return e.td }
func byNotBefore(e *qentry) tkey { return e.tn }

func (s *timeset) item(e *qentry) titem { return titem{s.at(e), e.e.ID, e} }
func (s *timeset) add(e *qentry)        { s.tr.Set(s.item(e)) }
func (s *timeset) remove(e *qentry)     { s.tr.Delete(s.item(e)) }

// first and last are the earliest and latest members, or nil.
func (s *timeset) first() *qentry { x, _ := s.tr.Min(); return x.e }
func (s *timeset) last() *qentry  { x, _ := s.tr.Max(); return x.e }

// scan yields members from the earliest while yield says go on.
func (s *timeset) scan(yield func(*qentry) bool) {
	s.tr.Scan(func(x titem) bool { return yield(x.e) })
}
