package pools

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/poolflow/poolflow/vocab"
)

// kind is an obstacle kind inside a pass. Room obstacles are declared in the precedence of
// §4.5, so the smaller one wins.
type kind uint8

const (
	kNone kind = iota
	kPaused
	kForbid
	kNodeAway
	kUnknown
	kOver
	kBehind
	kStarved
	kFull
	kGlobal
	kDAG
	kTask
	kBackfill
)

var kindNames = [...]vocab.ReasonCode{
	kPaused: vocab.ReasonPaused, kForbid: vocab.ReasonForbid, kNodeAway: vocab.ReasonNodeAway,
	kUnknown: vocab.ReasonUnknownPool, kOver: vocab.ReasonOverCapacity, kBehind: vocab.ReasonBehind,
	kStarved: vocab.ReasonStarvedHead, kFull: vocab.ReasonPoolFull, kGlobal: vocab.ReasonGlobalLimit,
	kDAG: vocab.ReasonDAGLimit, kTask: vocab.ReasonTaskLimit, kBackfill: vocab.ReasonBackfillLimit,
}

func limitKind(name string) kind {
	switch LimitKind(name) {
	case vocab.ReasonGlobalLimit:
		return kGlobal
	case vocab.ReasonDAGLimit:
		return kDAG
	case vocab.ReasonTaskLimit:
		return kTask
	case vocab.ReasonBackfillLimit:
		return kBackfill
	}
	return kFull
}

// Entry progress within a pass.
const (
	stWaiting uint8 = iota
	stAdmitted
	stNotMine // not_mine and fits: room taken for its own daemon
)

const none int32 = -1

type poolState struct {
	name     string
	cap      int // Unlimited = never full
	strict   bool
	implicit bool
	limit    kind          // the kind of a wait for room here
	starve   time.Duration // named backfill pools only; 0 = no promotion
	used     int           // held plus taken in this pass
	kept     int           // held as kept claims of waiting sensors
	reserved int           // kept for promoted entries not admitted yet
	closedBy int32         // promoted position lacking room: nobody else gets in
	head     int32         // strict pools: the blocking head's position
	// blocked is, in a strict pool, the first position of an entry that cannot be admitted
	// for a reason of its own (paused, forbid, node_unavailable): nobody after it is starved.
	blocked int32
	// reservers are the positions that reserved room here, in order; rpos skips those admitted.
	reservers []int32
	rpos      int
	held      []Holder
	holders   []Holder // for pool_full reasons, built once on demand
	sorted    bool
}

type need struct {
	pool  int32 // -1: unknown pool
	slots int32
}

// slot is one entry at its walk position. It holds no pointers, so the arrays of a large pass
// cost the garbage collector nothing to scan.
type slot struct {
	waited   time.Duration // since its queue time
	idx      int32         // in Snapshot.Entries
	off, end int32         // its needs: walk.needs[off:end]
	need     int32         // the need its obstacle is about, or none
	behind   int32         // position holding it back (behind, starved_head)
	block    kind          // kPaused, kForbid, kNodeAway or kNone
	ob       kind
	status   uint8
	notMine  bool
	kept     bool // holds kept claims: never blocks, never promoted
	rejected bool // unknown pool or over capacity
}

type walk struct {
	entries []Entry
	pools   []poolState
	index   map[string]int32
	*scratch
	expired []int64
	extras  bool // holders of taken entries added to pools
}

// scratch holds a pass's working arrays. They hold no pointers, so keeping them between
// passes keeps no snapshot alive, and reusing them spares the collector megabytes per pass.
type scratch struct {
	keys   []walkKey       // walk order
	pos    []slot          // parallel to keys
	needs  []need          // in walk order
	resv   []bool          // parallel to needs: its slots are reserved for its starved entry
	raw    []need          // in snapshot order
	rawOff []int32         // by snapshot index: its needs are raw[rawOff[i]:rawOff[i+1]]
	age    []time.Duration // by snapshot index: time since its queue time
	taken  []int32         // admitted and not_mine positions, in walk order
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func (w *walk) release() {
	sc := w.scratch
	w.scratch = nil
	scratchPool.Put(sc)
}

func newWalk(s *Snapshot, now time.Time) *walk {
	w := &walk{entries: s.Entries, index: make(map[string]int32, len(s.Pools))}
	w.scratch = scratchPool.Get().(*scratch)
	w.pools = make([]poolState, 0, len(s.Pools))
	for name, p := range s.Pools {
		implicit := p.Implicit || strings.HasPrefix(name, "_")
		ps := poolState{name: name, cap: p.Slots, implicit: implicit, limit: kFull, closedBy: none, head: none, blocked: none}
		if ps.cap < Unlimited {
			ps.cap = 0 // invalid: Resolve never makes one; admit nothing rather than everything
		}
		switch {
		case implicit:
			ps.limit = limitKind(name)
		case p.Ordering == vocab.Strict:
			ps.strict = true
		case p.StarvationAfter > 0:
			ps.starve = p.StarvationAfter
		}
		w.index[name] = int32(len(w.pools))
		w.pools = append(w.pools, ps)
	}
	for name, hs := range s.Holders {
		if i, ok := w.index[name]; ok {
			p := &w.pools[i]
			p.held = hs
			for _, h := range hs {
				p.used += h.Slots
			}
		}
	}

	// First in snapshot order, reading each entry once front to back.
	w.rawOff = resize(w.rawOff, len(s.Entries)+1)
	w.age = resize(w.age, len(s.Entries))
	w.raw, w.keys, w.taken = w.raw[:0], w.keys[:0], w.taken[:0]
	for i := range s.Entries {
		e := &s.Entries[i]
		w.rawOff[i] = int32(len(w.raw))
		if e.NotBefore.After(now) {
			continue
		}
		if !e.Deadline.IsZero() && now.After(e.Deadline) {
			w.expired = append(w.expired, e.ID)
			continue
		}
		for _, n := range e.Needs {
			pi, ok := w.index[n.Pool]
			if !ok {
				pi = none
			}
			w.raw = append(w.raw, need{pool: pi, slots: int32(min(max(n.Slots, 0), 1<<31-1))})
		}
		var flags uint8
		switch e.Block {
		case BlockPaused:
			flags = uint8(kPaused)
		case BlockForbid:
			flags = uint8(kForbid)
		case BlockNodeAway:
			flags = uint8(kNodeAway)
		case BlockNotMine:
			flags = flagNotMine
		}
		if len(e.Kept) > 0 {
			flags |= flagKept
			for _, c := range e.Kept {
				if pi, ok := w.index[c.Pool]; ok {
					w.pools[pi].kept += c.Slots
				}
			}
		}
		w.age[i] = now.Sub(queuedAt(e))
		w.keys = append(w.keys, newWalkKey(e, int32(i), flags))
	}
	w.rawOff[len(s.Entries)] = int32(len(w.raw))
	sortWalkKeys(w.keys)
	slices.Sort(w.expired)

	// Then lay the entries out in walk order, so every phase reads them front to back.
	w.pos = resize(w.pos, len(w.keys))
	w.needs = w.needs[:0]
	for k, key := range w.keys {
		sl := &w.pos[k]
		*sl = slot{idx: key.idx, need: none, behind: none, waited: w.age[key.idx],
			block: kind(key.flags & flagBlock), notMine: key.flags&flagNotMine != 0,
			kept: key.flags&flagKept != 0, off: int32(len(w.needs))}
		for j := w.rawOff[key.idx]; j < w.rawOff[key.idx+1]; j++ {
			w.needs = append(w.needs, w.raw[j])
		}
		sl.end = int32(len(w.needs))
		w.classify(sl)
		if sl.block != kNone && !sl.kept && !sl.rejected {
			for g := sl.off; g < sl.end; g++ {
				if p := &w.pools[w.needs[g].pool]; p.strict && p.blocked == none {
					p.blocked = int32(k)
				}
			}
		}
	}
	w.resv = resize(w.resv, len(w.needs))
	clear(w.resv)
	return w
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// classify records whether the entry can never be admitted as its pools stand: an unknown
// pool first, then a need above a finite capacity.
func (w *walk) classify(sl *slot) {
	for j := sl.off; j < sl.end; j++ {
		if w.needs[j].pool == none {
			sl.rejected, sl.ob, sl.need = true, kUnknown, j
			return
		}
	}
	for j := sl.off; j < sl.end; j++ {
		n := w.needs[j]
		if p := &w.pools[n.pool]; p.cap != Unlimited && int(n.slots) > p.cap {
			sl.rejected, sl.ob, sl.need = true, kOver, j
			return
		}
	}
}

// queuedAt is when the entry joined the queue: its Queued time, or its due time when unset.
func queuedAt(e *Entry) time.Time {
	if e.Queued.IsZero() {
		return e.Due
	}
	return e.Queued
}
