package pools

import (
	"cmp"
	"math/bits"
	"slices"
)

// Walk groups, in the order a pass walks them (§4.4, §5.1).
const (
	groupForce uint8 = iota // force starts: before everything, by queue ID
	groupKept               // sensors holding include_deferred claims: before all other entries
	groupRest
)

func group(e *Entry) uint8 {
	switch {
	case e.Force:
		return groupForce
	case len(e.Kept) > 0:
		return groupKept
	}
	return groupRest
}

// Compare orders two entries as an admission pass walks them: force starts first by queue ID,
// then entries holding kept claims, then every other entry; within the last two groups by
// priority (higher first), then fresh entries before a backfill's (§11), then due time
// (earlier first), then queue ID. Starvation promotion does
// not change this order; it keeps room for the starved entry instead (see Admit).
func Compare(a, b *Entry) int {
	ga, gb := group(a), group(b)
	if ga != gb {
		return cmp.Compare(ga, gb)
	}
	if ga != groupForce {
		if a.Priority != b.Priority {
			return cmp.Compare(b.Priority, a.Priority)
		}
		if a.Backfill != b.Backfill {
			if a.Backfill {
				return 1
			}
			return -1
		}
		if c := a.Due.Compare(b.Due); c != 0 {
			return c
		}
	}
	return cmp.Compare(a.ID, b.ID)
}

// walkKey is Compare's order packed into integers, so sorting 100k entries compares a few
// words instead of calling Compare. Priorities are clamped to ±2^60, far beyond real values;
// due times are exact (Unix seconds and nanoseconds), so the key does not depend on the time of
// the pass and a Queue can keep it between passes.
type walkKey struct {
	rank  uint64 // group, then priority (higher first), then backfill (fresh first)
	sec   int64  // due time (earlier first): Unix seconds,
	nsec  int32  // and nanoseconds
	idx   int32  // snapshot index: breaks ties between equal IDs in a malformed snapshot
	id    int64
	flags uint8 // its block kind, flagNotMine, flagKept: carried along so the walk need not reread the entry
}

const (
	flagBlock   = 0x3 // the kind of paused, forbid or node_unavailable
	flagNotMine = 0x4
	flagKept    = 0x8
)

const prioLimit = 1 << 60

func newWalkKey(e *Entry, idx int32, flags uint8) walkKey {
	k := walkKey{id: e.ID, idx: idx, flags: flags}
	g := group(e)
	k.rank = uint64(g) << 62
	if g != groupForce {
		p := min(max(e.Priority, -prioLimit), prioLimit-1)
		k.rank |= uint64(prioLimit-1-p) << 1 // in [0, 2^62): higher priority first
		if e.Backfill {
			k.rank |= 1 // after every fresh entry of the same priority
		}
		k.sec, k.nsec = e.Due.Unix(), int32(e.Due.Nanosecond())
	}
	return k
}

func (k walkKey) group() uint8 { return uint8(k.rank >> 62) }

func compareWalkKeys(a, b walkKey) int {
	switch {
	case a.rank != b.rank:
		return cmp.Compare(a.rank, b.rank)
	case a.sec != b.sec:
		return cmp.Compare(a.sec, b.sec)
	case a.nsec != b.nsec:
		return cmp.Compare(a.nsec, b.nsec)
	case a.id != b.id:
		return cmp.Compare(a.id, b.id)
	}
	return cmp.Compare(a.idx, b.idx)
}

func keyLess(a, b *walkKey) bool {
	switch {
	case a.rank != b.rank:
		return a.rank < b.rank
	case a.sec != b.sec:
		return a.sec < b.sec
	case a.nsec != b.nsec:
		return a.nsec < b.nsec
	case a.id != b.id:
		return a.id < b.id
	}
	return a.idx < b.idx
}

// sortWalkKeys sorts keys into walk order. It is a quicksort with the comparison inlined,
// about twice as fast as slices.SortFunc's indirect calls on a pass's 10k keys; a subslice
// that recurses too deep falls back to slices.SortFunc, so the worst case stays O(n log n).
// Keys are unique (idx breaks every tie), so there are no runs of equal keys to degrade it.
func sortWalkKeys(a []walkKey) {
	quickSortKeys(a, 2*bits.Len(uint(len(a))))
}

func quickSortKeys(a []walkKey, depth int) {
	for len(a) > 12 {
		if depth == 0 {
			slices.SortFunc(a, compareWalkKeys)
			return
		}
		depth--
		m, l := len(a)/2, len(a)-1
		if keyLess(&a[m], &a[0]) {
			a[m], a[0] = a[0], a[m]
		}
		if keyLess(&a[l], &a[0]) {
			a[l], a[0] = a[0], a[l]
		}
		if keyLess(&a[l], &a[m]) {
			a[l], a[m] = a[m], a[l]
		}
		pivot := a[m]
		i, j := 0, l
		for i <= j {
			for keyLess(&a[i], &pivot) {
				i++
			}
			for keyLess(&pivot, &a[j]) {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		// Recurse into the smaller side, loop on the larger: stack depth stays O(log n).
		if j+1 < len(a)-i {
			quickSortKeys(a[:j+1], depth)
			a = a[i:]
		} else {
			quickSortKeys(a[i:], depth)
			a = a[:j+1]
		}
	}
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && keyLess(&a[j], &a[j-1]); j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}
