package ui

import (
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// timelineWindow is how far back the pool timeline looks.
const timelineWindow = time.Hour

type waitingRow struct {
	server.EntryJSON
	Position int
	Slots    int // slots it needs in this pool
	Href     string
}

type poolCard struct {
	server.BoardPoolJSON
	Bar      template.HTML
	Timeline template.HTML
	Waiting  []waitingRow // the page shown of its waiting entries
	Pager    waitingPager
	Peak     int
	FullFor  time.Duration // how long it was full within the window
	Percent  int
	State    string // free | busy | full | over
	Strict   bool   // its ordering is strict
	// CanEdit: the viewer may change and delete it (a stored pool, the pools permission on its
	// teams); ReadOnly says why a pool of poolflow.yaml cannot be changed here.
	CanEdit   bool
	ReadOnly  string
	Size      int    // the slots the change form starts from: the capacity asked for
	TeamsText string // its teams for the change form
}

type poolsData struct {
	Filter  poolsQuery
	Reasons []string // the reason codes of the waiting entries, for the filter
	Pools   []poolCard
	// Team filters the pools to those a team's DAGs may use (?team=); Teams are the teams the
	// pools name, for the filter's links.
	Team    string
	Teams   []string
	Waiting int
	Held    int
	From    time.Time
	// CanCreate: the viewer may create pools (admin, §15).
	CanCreate bool
	// Limits are the cards of _global and of each DAG's run limits (pools_limits.go).
	Limits limitsData
	// LineAt is when the waiting lists' places and reasons were read; LineCurrent says nothing
	// was written since (server.PoolsBoardPage): else the page says how old they are.
	LineAt      time.Time
	LineCurrent bool
}

func (u *UI) poolsPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := poolsQueryOf(r)
	board, err := u.api.PoolsPage(ctx, server.PoolsQuery{DAG: q.DAG, Reason: vocab.ReasonCode(q.Reason), Team: q.Team,
		Pool: q.Pool, Offset: q.Offset, Limit: waitingPage})
	if err != nil {
		u.fail(w, r, err)
		return
	}
	now := u.api.Now()
	from := now.Add(-timelineWindow)
	holdings, err := u.api.Store().PoolHoldings(ctx, from)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	byPool := map[string][]int{}
	for i, h := range holdings {
		byPool[h.Pool] = append(byPool[h.Pool], i)
	}
	who := u.principal(r)
	data := poolsData{From: from, Filter: q, Team: q.Team, Teams: board.Teams, CanCreate: who.CanAny(vocab.PermPools),
		LineAt: board.LineAt, LineCurrent: board.LineCurrent}
	for _, p := range board.Pools {
		c := poolCard{BoardPoolJSON: p.BoardPoolJSON, Bar: occupancyBar(p.BoardPoolJSON), Strict: p.Ordering == vocab.Strict,
			ReadOnly: fileReadOnly(p.Name, p.Source), Size: p.Capacity, TeamsText: strings.Join(p.Teams, ", ")}
		c.CanEdit = c.ReadOnly == "" && who.CanPool(vocab.PermPools, p.Teams)
		if p.DrainingTo != nil {
			c.Size = *p.DrainingTo
		}
		hs := make([]store.Holding, 0, len(byPool[p.Name]))
		for _, i := range byPool[p.Name] {
			hs = append(hs, holdings[i])
		}
		steps := timeline(hs, from, now)
		for i, st := range steps {
			c.Peak = max(c.Peak, st.Used)
			end := now
			if i+1 < len(steps) {
				end = steps[i+1].At
			}
			if p.Capacity > 0 && st.Used >= p.Capacity {
				c.FullFor += end.Sub(st.At)
			}
		}
		c.Timeline = timelineSVG(p.Name, p.Capacity, steps, from, now)
		c.Waiting, c.Pager = waitingRows(q, p)
		switch {
		case p.Capacity < 0:
			c.State = "free"
		case p.Occupancy > p.Capacity:
			c.State = "over"
		case p.Occupancy == p.Capacity:
			c.State = "full"
		case p.Occupancy > 0:
			c.State = "busy"
		default:
			c.State = "free"
		}
		if p.Capacity > 0 {
			c.Percent = min(100*p.Occupancy/p.Capacity, 100)
		}
		data.Waiting += p.All
		data.Held += p.Occupancy
		data.Pools = append(data.Pools, c)
	}
	data.Reasons = reasonOptions(q.Reason)
	if data.Limits, err = u.limits(ctx, q.Team); err != nil {
		u.fail(w, r, err)
		return
	}
	u.render(w, r, http.StatusOK, "pools", "Resource pools", "pools", data)
}
