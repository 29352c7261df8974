package server

import (
	"context"
	"slices"
	"time"

	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The pools board a page at a time (the UI's pools page, issue 21): GET /pools lists every
// waiting entry with its reason, which at 10,000 waiting entries reads and walks the whole
// queue; a page reads one page of each pool's line from the store, in admission order, and
// walks only the part of the queue that decides why those entries wait (store.WalkBound).

// PoolsQuery selects the page of each pool's line the pools page shows.
type PoolsQuery struct {
	// DAG keeps the entries whose DAG id contains it; Reason those waiting for that reason.
	DAG    string
	Reason vocab.ReasonCode
	// Team keeps the pools a team's DAGs may use: its own and those open to every team (§15).
	Team string
	// Pool is the pool whose line is paged from Offset; the others show their first page.
	Pool   string
	Offset int
	Limit  int // entries per page
}

// PoolPage is one pool of the page: the board's pool with Waiting holding the page shown.
type PoolPage struct {
	BoardPoolJSON
	// Positions are the places of Waiting's entries in the pool's whole line (1-based).
	Positions []int
	// Offset is where the page starts among the entries the filters keep, Matching how many
	// they keep, All how many wait in all.
	Offset, Matching, All int
}

// PoolsBoardPage is the pools page's board: the pools shown, and the teams every pool names
// (the team filter's choices).
type PoolsBoardPage struct {
	Pools []PoolPage
	Teams []string
}

// PoolsPage is the pools board with one page of each pool's waiting line. A reason filter needs
// every entry's reason: it walks the whole line of each pool it shows.
func (s *Server) PoolsPage(ctx context.Context, q PoolsQuery) (PoolsBoardPage, error) {
	var board PoolsBoardPage
	st, now := s.cfg.Store, s.now()
	all, err := st.ListPools(ctx)
	if err != nil {
		return board, err
	}
	var ps []store.Pool
	for _, p := range all {
		for _, t := range p.Teams {
			if !slices.Contains(board.Teams, t) {
				board.Teams = append(board.Teams, t)
			}
		}
		if q.Team == "" || len(p.Teams) == 0 || slices.Contains(p.Teams, q.Team) {
			ps = append(ps, p)
		}
	}
	slices.Sort(board.Teams)
	claims, err := st.ListClaims(ctx)
	if err != nil {
		return board, err
	}
	var counts map[string]store.WaitingCount // what waits in all, when a filter narrows the pages
	if q.DAG != "" || q.Reason != "" {
		if counts, err = st.WaitingCounts(ctx); err != nil {
			return board, err
		}
	}
	holding, err := st.ClaimEntries(ctx)
	if err != nil {
		return board, err
	}
	recent, err := st.RecentEntries(ctx, recentPerPool)
	if err != nil {
		return board, err
	}
	keeps := map[int64]bool{} // entries with claims: a waiting one is a sensor keeping its claims
	byPool := map[string][]store.Claim{}
	for _, c := range claims {
		keeps[c.Entry] = true
		byPool[c.Pool] = append(byPool[c.Pool], c)
	}
	q.Limit = max(q.Limit, 1)

	out := make([]PoolPage, 0, len(ps))
	var last *store.Entry // the page entry walked last: the walk goes that far
	later := func(e *store.Entry) {
		if last == nil {
			last = e
			return
		}
		a, b := walkEntry(*e, keeps[e.ID]), walkEntry(*last, keeps[last.ID])
		if pools.Compare(&a, &b) > 0 {
			last = e
		}
	}
	for _, p := range ps {
		v := PoolPage{BoardPoolJSON: BoardPoolJSON{Name: p.Name, Teams: append([]string{}, p.Teams...),
			Description: strOrNil(p.Description), Capacity: p.Slots, Ordering: p.Ordering, MaxQueued: p.MaxQueued,
			Source: p.Source, Holders: []HolderJSON{}, Waiting: []EntryJSON{}, Recent: []EntryJSON{}}}
		if p.TargetSlots != store.NoTarget {
			t := p.TargetSlots
			v.DrainingTo = &t
		}
		for _, c := range byPool[p.Name] {
			v.Occupancy += c.Slots
		}
		v.OpenSlots = openSlots(p, v.Occupancy)
		for _, e := range recent[p.Name] {
			v.Recent = append(v.Recent, entryView(e))
		}
		out = append(out, v)
	}

	// The pages, and how far the walk must go to explain them.
	pages := make([]store.WaitingPage, len(out))
	for i := range out {
		v := &out[i]
		wq := store.WaitingQuery{Pool: v.Name, DAG: q.DAG, Limit: q.Limit}
		if q.Pool == v.Name {
			wq.Offset = max(q.Offset, 0)
		}
		if q.Reason != "" { // every entry the DAG filter keeps, paged once reasons are known
			wq.Offset, wq.Limit = 0, 1<<30
		}
		pg, err := st.WaitingPage(ctx, wq)
		if err != nil {
			return board, err
		}
		if q.Reason == "" && len(pg.Entries) == 0 && pg.Total > 0 { // past the end: the last page
			wq.Offset = (pg.Total - 1) / q.Limit * q.Limit
			if pg, err = st.WaitingPage(ctx, wq); err != nil {
				return board, err
			}
		}
		pages[i], v.Offset, v.Matching, v.All = pg, wq.Offset, pg.Total, pg.Total
		if counts != nil {
			v.All = counts[v.Name].Entries
		}
		for j := range pg.Entries {
			later(&pg.Entries[j])
		}
	}
	bound := store.WalkBound{Starved: map[string]time.Time{}}
	if last != nil {
		bound.Through = last.ID
	}
	for i, p := range ps {
		if p.Ordering != vocab.Strict && p.StarvationAfter > 0 && out[i].All > 0 {
			// An entry queued before this has waited longer than starvation_after (rounded up
			// to the store's microseconds, so the store's comparison is the walk's).
			bound.Starved[p.Name] = now.Add(-p.StarvationAfter).Add(time.Microsecond - 1).Truncate(time.Microsecond)
		}
	}
	var among []store.Entry
	if last != nil {
		if among, err = st.WaitingThrough(ctx, bound); err != nil {
			return board, err
		}
	}
	why, err := explain.ReasonsAmong(ctx, st, now, among)
	if err != nil {
		return board, err
	}
	live := map[int64]store.Entry{}
	for _, e := range holding {
		live[e.ID] = e
	}
	for i := range out {
		v := &out[i]
		for _, c := range byPool[v.Name] {
			e := live[c.Entry]
			v.Holders = append(v.Holders, HolderJSON{QueueID: c.Entry, Label: c.Label, Slots: c.Slots, Daemon: c.Daemon,
				LeaseUntil: c.LeaseUntil.UTC(), DAGID: e.DAGID, DAGRunID: e.RunID, TaskID: e.TaskID, TryNumber: e.TryNumber,
				AdmittedAt: ts(e.AdmittedAt)})
		}
		pg := pages[i]
		for j, e := range pg.Entries {
			why.Fill(&e)
			if q.Reason != "" && e.ReasonCode != q.Reason {
				continue
			}
			v.Waiting = append(v.Waiting, entryView(e))
			v.Positions = append(v.Positions, pg.Positions[j])
		}
		if q.Reason != "" { // page the entries the reason filter kept
			v.Matching = len(v.Waiting)
			off := 0
			if q.Pool == v.Name {
				off = min(max(q.Offset, 0), max(v.Matching-1, 0)/q.Limit*q.Limit)
			}
			hi := min(off+q.Limit, v.Matching)
			v.Waiting, v.Positions, v.Offset = slices.Clip(v.Waiting[off:hi]), slices.Clip(v.Positions[off:hi]), off
		}
	}
	board.Pools = out
	return board, nil
}
