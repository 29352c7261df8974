package server

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The waiting line of every pool as of one moment, for the pools page at real size (issue 21:
// 10,000 waiting entries in < 50 ms, and pages that do not grow with the line). Why an entry
// waits depends on every entry walked before it (§4.5), so a page deep in a long line, the DAG
// filter and the reason filter each needed a walk of the queue up to where they read — at
// 100,000 entries, seconds a request. Instead the server keeps one snapshot: every waiting
// entry's place in each pool's line and its reason (explain's walk over the whole queue once),
// indexed by DAG, by reason and by both, so any page of any filter is a few binary searches
// and a read of its 50 entries by ID (their state now: one admitted since shows as admitted).
//
// The snapshot is current while no queue entry was put or changed (store.QueueSeq), the pools
// and the paused DAGs are as they were, and it is younger than lineMaxAge (reasons move with time alone: starvation, a sensor's
// poke time, an owner's lapsed heartbeat). A stale one of a short line is built again before
// the page (exact, as the walk on read always was); one of a long line (lineSyncEntries) is
// built again in the background, at most once per lineRebuildGap × its build time, and the
// page shows the last one with its age — as a user of a busy queue expects of a list that is a
// few seconds old, and without the reader paying a whole walk per page.

const (
	lineMaxAge      = 10 * time.Second
	lineSyncEntries = 2000 // Config.LineSyncEntries's default
	lineRebuildGap  = 4    // a long line's rebuilds use at most a fifth of a core
)

// lineSnapshot is every pool's waiting line as of At.
type lineSnapshot struct {
	key     lineKey
	at      time.Time // the server's clock when it was read
	took    time.Duration
	entries int
	why     *explain.Explanation
	pools   map[string]*poolLine
}

// lineKey is what a snapshot's reasons were computed from, but for time and owners: the queue's
// change stamp, and a hash of the pools admission sees and of the paused DAGs.
type lineKey struct {
	seq int64
	sig uint64
}

// lineKeyNow reads the key of the store as it is now.
func (s *Server) lineKeyNow(ctx context.Context) (lineKey, error) {
	st := s.cfg.Store
	seq, err := st.QueueSeq(ctx)
	if err != nil {
		return lineKey{}, err
	}
	ps, err := st.ListPools(ctx)
	if err != nil {
		return lineKey{}, err
	}
	flags, err := st.ListDAGStates(ctx)
	if err != nil {
		return lineKey{}, err
	}
	h := fnv.New64a()
	for _, p := range ps {
		fmt.Fprintf(h, "%q %d %d %s %d\n", p.Name, p.Slots, p.TargetSlots, p.Ordering, p.StarvationAfter)
	}
	paused := make([]string, 0, len(flags))
	for id, f := range flags {
		if f.Paused {
			paused = append(paused, id)
		}
	}
	slices.Sort(paused)
	fmt.Fprintf(h, "%q", paused)
	return lineKey{seq: seq, sig: h.Sum64()}, nil
}

// poolLine is one pool's line: ids in the walk's order (ids[i] is place i+1), and the places
// (0-based, ascending) of the entries of each DAG, of each reason and of each pair.
type poolLine struct {
	ids      []int64
	byDAG    map[string][]int32
	byReason map[vocab.ReasonCode][]int32
	byBoth   map[dagReason][]int32
}

type dagReason struct {
	dag  string
	code vocab.ReasonCode
}

// lineCache holds the server's snapshot and its rebuild in the background.
type lineCache struct {
	mu       sync.Mutex
	snap     *lineSnapshot
	building bool
	next     time.Time // wall clock: no background rebuild before
	wg       sync.WaitGroup
	ctx      context.Context // the background builds'; cancelled by Close
	stop     context.CancelFunc
	built    func() // tests: called after each background build
}

// waitingLine returns the snapshot a page reads and whether it is current (else the page says
// how old it is).
func (s *Server) waitingLine(ctx context.Context) (*lineSnapshot, bool, error) {
	key, err := s.lineKeyNow(ctx)
	if err != nil {
		return nil, false, err
	}
	now := s.now()
	c := &s.line
	c.mu.Lock()
	snap := c.snap
	if snap != nil && snap.key == key && !now.Before(snap.at) && now.Sub(snap.at) < lineMaxAge {
		c.mu.Unlock()
		return snap, true, nil
	}
	sync := s.cfg.LineSyncEntries
	if sync <= 0 {
		sync = lineSyncEntries
	}
	if snap != nil && snap.entries >= sync {
		if !c.building && !time.Now().Before(c.next) {
			c.building = true
			c.wg.Add(1)
			go s.rebuildLine()
		}
		c.mu.Unlock()
		return snap, false, nil
	}
	c.mu.Unlock()
	fresh, err := s.buildLine(ctx)
	if err != nil {
		return nil, false, err
	}
	s.keepLine(fresh)
	return fresh, true, nil
}

// rebuildLine builds the snapshot in the background (waitingLine started it).
func (s *Server) rebuildLine() {
	c := &s.line
	defer c.wg.Done()
	if c.built != nil {
		defer c.built()
	}
	fresh, err := s.buildLine(c.ctx)
	c.mu.Lock()
	c.building = false
	if err == nil {
		c.next = time.Now().Add(lineRebuildGap * fresh.took)
	}
	c.mu.Unlock()
	if err != nil {
		if c.ctx.Err() == nil {
			s.log.Warn("pools page: cannot read the waiting lines", "err", err)
		}
		return
	}
	s.keepLine(fresh)
}

// keepLine keeps fresh unless a newer snapshot is kept already.
func (s *Server) keepLine(fresh *lineSnapshot) {
	c := &s.line
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap == nil || fresh.key.seq > c.snap.key.seq || (fresh.key.seq == c.snap.key.seq && !fresh.at.Before(c.snap.at)) {
		c.snap = fresh
	}
}

// closeLine stops a background build and waits for it.
func (c *lineCache) closeLine() {
	if c.stop != nil {
		c.stop()
	}
	c.wg.Wait()
}

// buildLine reads every waiting entry, walks them once for their reasons and files them by
// pool in the walk's order (pools.Compare: force starts, sensors keeping claims, priority,
// fresh runs before a backfill's, due time, queue ID).
func (s *Server) buildLine(ctx context.Context) (*lineSnapshot, error) {
	start := time.Now()
	st := s.cfg.Store
	key, err := s.lineKeyNow(ctx) // first: a change after it makes the snapshot stale
	if err != nil {
		return nil, err
	}
	now := s.now()
	claims, err := st.ListClaims(ctx)
	if err != nil {
		return nil, err
	}
	entries, err := st.ListEntries(ctx, vocab.EntryWaiting)
	if err != nil {
		return nil, err
	}
	why, err := explain.ReasonsAmong(ctx, st, now, entries)
	if err != nil {
		return nil, err
	}
	keeps := map[int64]bool{}
	for _, c := range claims {
		keeps[c.Entry] = true
	}
	walk := make([]pools.Entry, len(entries))
	order := make([]int, len(entries))
	for i, e := range entries {
		walk[i], order[i] = walkEntry(e, keeps[e.ID]), i
	}
	slices.SortFunc(order, func(a, b int) int { return pools.Compare(&walk[a], &walk[b]) })
	snap := &lineSnapshot{key: key, at: now, entries: len(entries), why: why, pools: map[string]*poolLine{}}
	for _, i := range order {
		e := &entries[i]
		why.Fill(e)
		for _, n := range e.Needs {
			l := snap.pools[n.Pool]
			if l == nil {
				l = &poolLine{byDAG: map[string][]int32{}, byReason: map[vocab.ReasonCode][]int32{}, byBoth: map[dagReason][]int32{}}
				snap.pools[n.Pool] = l
			}
			if k := len(l.ids); k > 0 && l.ids[k-1] == e.ID {
				continue // a pool named twice
			}
			place := int32(len(l.ids))
			l.ids = append(l.ids, e.ID)
			l.byDAG[e.DAGID] = append(l.byDAG[e.DAGID], place)
			l.byReason[e.ReasonCode] = append(l.byReason[e.ReasonCode], place)
			k := dagReason{e.DAGID, e.ReasonCode}
			l.byBoth[k] = append(l.byBoth[k], place)
		}
	}
	snap.took = time.Since(start)
	return snap, nil
}

// page returns the places (0-based, in line order) of the entries of the line that the filters
// keep — DAG ids containing dag (any case; "" keeps all) waiting for reason ("" any) — from
// offset, at most limit of them, and how many they keep.
func (l *poolLine) page(dag string, reason vocab.ReasonCode, offset, limit int) ([]int32, int) {
	if l == nil {
		return nil, 0
	}
	var lists [][]int32
	switch {
	case dag == "" && reason == "":
		out := make([]int32, 0, max(0, min(limit, len(l.ids)-offset)))
		for p := offset; p < min(offset+limit, len(l.ids)); p++ {
			out = append(out, int32(p))
		}
		return out, len(l.ids)
	case dag == "":
		lists = [][]int32{l.byReason[reason]}
	default:
		dag = strings.ToLower(dag)
		for d := range l.byDAG {
			if !strings.Contains(strings.ToLower(d), dag) {
				continue
			}
			if reason == "" {
				lists = append(lists, l.byDAG[d])
			} else if ps := l.byBoth[dagReason{d, reason}]; len(ps) > 0 {
				lists = append(lists, ps)
			}
		}
	}
	return pick(lists, offset, limit)
}

// pick returns the elements offset to offset+limit-1 of the merge of lists (disjoint, each
// ascending) and how many there are in all, without merging what comes before offset: the
// place of the element at offset is found by binary search over places, counting in each list.
func pick(lists [][]int32, offset, limit int) ([]int32, int) {
	total, top := 0, int32(0)
	for _, ps := range lists {
		total += len(ps)
		if len(ps) > 0 {
			top = max(top, ps[len(ps)-1])
		}
	}
	if offset >= total || limit <= 0 {
		return nil, total
	}
	below := func(v int32) int { // elements < v
		n := 0
		for _, ps := range lists {
			n += sort.Search(len(ps), func(i int) bool { return ps[i] >= v })
		}
		return n
	}
	// The element at offset is the greatest v with below(v) <= offset.
	v := int32(sort.Search(int(top)+1, func(v int) bool { return below(int32(v)+1) > offset }))
	at := make([]int, len(lists))
	for i, ps := range lists {
		at[i] = sort.Search(len(ps), func(j int) bool { return ps[j] >= v })
	}
	out := make([]int32, 0, min(limit, total-offset))
	for len(out) < limit {
		best := -1
		for i, ps := range lists {
			if at[i] < len(ps) && (best < 0 || ps[at[i]] < lists[best][at[best]]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		out = append(out, lists[best][at[best]])
		at[best]++
	}
	return out, total
}

// entriesOf reads the entries at places of the line, as they are now, by ID.
func (s *Server) entriesOf(ctx context.Context, ids []int64) (map[int64]store.Entry, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	es, err := s.cfg.Store.EntriesByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]store.Entry, len(es))
	for _, e := range es {
		out[e.ID] = e
	}
	return out, nil
}
