package pools

import (
	"cmp"
	"iter"
	"slices"
	"sync"
)

// explain is the full walk's wait reasons, kept compact: one pointer-free record per waiting
// entry and one per pool, turned into Reason values only when asked. A 100k-entry pass thus
// allocates a few megabytes the collector need not scan instead of a map of Reasons.
type explain struct {
	entries []Entry // the snapshot's, read only: labels and unknown pool names come from it
	pools   []poolInfo
	waits   []wait // in walk order
	once    sync.Once
	byID    []int32 // indexes into waits sorted by entry ID, built on the first lookup
}

type poolInfo struct {
	name            string
	cap, used, free int      // at the end of the pass
	holders         []Holder // pools named by a pool_full reason: held plus taken, by entry
}

type wait struct {
	id     int64
	idx    int32 // snapshot index
	need   int32 // index into its Entry.Needs, or -1
	pool   int32 // pool index, or -1 for an unknown pool or no need
	behind int32 // snapshot index of the entry holding it back, or -1
	slots  int32
	ob     kind
}

// Reason is why entry id waits after the full walk (Admit), and whether it waits at all: false
// for admitted, expired, invisible and not_mine entries, for IDs not in the snapshot, and for
// every entry of a Queue's pass, which decides without explaining. It reads the snapshot the
// decision was made from, which must not change meanwhile.
func (d Decision) Reason(id int64) (Reason, bool) {
	x := d.why
	if x == nil {
		return Reason{}, false
	}
	x.once.Do(func() {
		x.byID = make([]int32, len(x.waits))
		for i := range x.byID {
			x.byID[i] = int32(i)
		}
		slices.SortFunc(x.byID, func(a, b int32) int { return cmp.Compare(x.waits[a].id, x.waits[b].id) })
	})
	i, ok := slices.BinarySearchFunc(x.byID, id, func(w int32, id int64) int { return cmp.Compare(x.waits[w].id, id) })
	if !ok {
		return Reason{}, false
	}
	return x.reason(&x.waits[x.byID[i]]), true
}

// Reasons yields every waiting entry of the full walk with its reason, in walk order: every
// entry neither admitted nor expired, except not_mine entries, whose own daemon reports why
// they wait.
func (d Decision) Reasons() iter.Seq2[int64, Reason] {
	return func(yield func(int64, Reason) bool) {
		if d.why == nil {
			return
		}
		for i := range d.why.waits {
			w := &d.why.waits[i]
			if !yield(w.id, d.why.reason(w)) {
				return
			}
		}
	}
}

// Waiting is the number of entries Reasons yields.
func (d Decision) Waiting() int {
	if d.why == nil {
		return 0
	}
	return len(d.why.waits)
}

func (x *explain) reason(w *wait) Reason {
	r := Reason{Kind: kindNames[w.ob]}
	if w.need < 0 {
		return r
	}
	r.Need = int(w.slots)
	if w.pool < 0 {
		r.Pool = x.entries[w.idx].Needs[w.need].Pool
		return r
	}
	p := &x.pools[w.pool]
	r.Pool, r.Capacity = p.name, p.cap
	switch w.ob {
	case kBehind, kStarved:
		if w.behind >= 0 {
			e := &x.entries[w.behind]
			r.Behind, r.BehindLabel = e.ID, e.Label
		}
	case kFull, kGlobal, kDAG, kTask, kBackfill:
		r.Used, r.Free = p.used, p.free
		if w.ob == kFull {
			r.Holders = p.holders
		}
	}
	return r
}

func (w *walk) decision() Decision {
	x := &explain{entries: w.entries, pools: make([]poolInfo, len(w.pools))}
	for i := range w.pools {
		p := &w.pools[i]
		x.pools[i] = poolInfo{name: p.name, cap: p.cap, used: p.used, free: max(0, p.cap-p.used-p.reserved)}
	}
	d := Decision{Expired: w.expired, why: x}
	waiting := 0
	for k := range w.pos {
		if sl := &w.pos[k]; sl.status == stWaiting && !sl.notMine {
			waiting++
		}
	}
	x.waits = make([]wait, 0, waiting)
	var full []bool // pools some pool_full reason names
	for k := range w.pos {
		sl := &w.pos[k]
		if sl.status != stWaiting || sl.notMine {
			continue
		}
		wt := wait{id: w.keys[k].id, idx: sl.idx, need: -1, pool: -1, behind: -1, ob: sl.ob}
		if sl.need != none {
			n := w.needs[sl.need]
			wt.need, wt.pool, wt.slots = sl.need-sl.off, n.pool, n.slots
		}
		if sl.behind != none && (sl.ob == kBehind || sl.ob == kStarved) {
			wt.behind = w.pos[sl.behind].idx
		}
		if wt.ob == kFull && wt.pool >= 0 {
			if full == nil {
				full = make([]bool, len(w.pools))
			}
			full[wt.pool] = true
		}
		if wt.ob == kUnknown || wt.ob == kOver {
			d.Rejected = append(d.Rejected, Rejection{Entry: wt.id, Reason: x.reason(&wt)})
		}
		x.waits = append(x.waits, wt)
	}
	slices.SortFunc(d.Rejected, func(a, b Rejection) int { return cmp.Compare(a.Entry, b.Entry) })
	if full != nil {
		w.holders(x, full)
	}
	for _, k := range w.taken {
		if w.pos[k].status == stAdmitted {
			d.Admitted = append(d.Admitted, w.keys[k].id)
		} else {
			d.NotMine = append(d.NotMine, w.keys[k].id)
		}
	}
	return d
}

// holders lists who holds each pool a pool_full reason names after this pass: the snapshot's
// holders plus the entries taken in it, sorted by entry. The slice is shared by every reason
// naming the pool.
func (w *walk) holders(x *explain, full []bool) {
	for pi, f := range full {
		if f {
			x.pools[pi].holders = slices.Clone(w.pools[pi].held) // never sort the caller's slice
		}
	}
	for _, k := range w.taken {
		sl := &w.pos[k]
		e := &w.entries[sl.idx]
		for j := sl.off; j < sl.end; j++ {
			if pi := w.needs[j].pool; full[pi] {
				x.pools[pi].holders = append(x.pools[pi].holders, Holder{Entry: e.ID, Label: e.Label, Slots: e.Needs[j-sl.off].Slots})
			}
		}
	}
	for pi, f := range full {
		if f {
			slices.SortStableFunc(x.pools[pi].holders, func(a, b Holder) int { return cmp.Compare(a.Entry, b.Entry) })
		}
	}
}
