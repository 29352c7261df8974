package server

import (
	"context"
	"slices"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The pools board a page at a time (the UI's pools page, issue 21): GET /pools lists every
// waiting entry with its reason, which at 10,000 waiting entries reads and walks the whole
// queue; a page takes one page of each pool's line, in admission order and with the filters,
// from the server's snapshot of the waiting lines (waiting_line.go), and reads those entries as
// they are now.

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
	// LineAt is when the places and reasons of the waiting lists were read (waiting_line.go);
	// LineCurrent says nothing was written since (else the page says how old they are).
	LineAt      time.Time
	LineCurrent bool
}

// PoolsPage is the pools board with one page of each pool's waiting line: its places and reasons
// from the snapshot of the lines (current unless LineCurrent is false), its entries' states now.
func (s *Server) PoolsPage(ctx context.Context, q PoolsQuery) (PoolsBoardPage, error) {
	var board PoolsBoardPage
	st := s.cfg.Store
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
	line, current, err := s.waitingLine(ctx)
	if err != nil {
		return board, err
	}
	board.LineAt, board.LineCurrent = line.at, current
	holding, err := st.ClaimEntries(ctx)
	if err != nil {
		return board, err
	}
	recent, err := st.RecentEntries(ctx, recentPerPool)
	if err != nil {
		return board, err
	}
	byPool := map[string][]store.Claim{}
	for _, c := range claims {
		byPool[c.Pool] = append(byPool[c.Pool], c)
	}
	q.Limit = max(q.Limit, 1)

	out := make([]PoolPage, 0, len(ps))
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

	// Each pool's page of the snapshot's line, then its entries as they are now.
	places := make([][]int32, len(out))
	var ids []int64
	for i := range out {
		v := &out[i]
		l := line.pools[v.Name]
		off := 0
		if q.Pool == v.Name {
			off = max(q.Offset, 0)
		}
		pg, total := l.page(q.DAG, q.Reason, off, q.Limit)
		if len(pg) == 0 && total > 0 { // past the end: the last page
			off = (total - 1) / q.Limit * q.Limit
			pg, _ = l.page(q.DAG, q.Reason, off, q.Limit)
		}
		places[i], v.Offset, v.Matching = pg, off, total
		if l != nil {
			v.All = len(l.ids)
			for _, p := range pg {
				ids = append(ids, l.ids[p])
			}
		}
	}
	cur, err := s.entriesOf(ctx, ids)
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
		l := line.pools[v.Name]
		for _, p := range places[i] {
			e, ok := cur[l.ids[p]]
			if !ok {
				continue // deleted since (retention)
			}
			line.why.Fill(&e) // a waiting entry's reason as of the snapshot; another keeps its state's
			v.Waiting = append(v.Waiting, entryView(e))
			v.Positions = append(v.Positions, int(p)+1)
		}
	}
	board.Pools = out
	return board, nil
}
