package ui

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/vocab"
)

// The pools page's waiting lists are paged and filtered: 10,000 waiting entries used to be a
// 12 MB page. Each pool shows waitingPage entries in admission order (positions stay those of
// the whole queue); ?pool=&offset= pages one pool's list, ?dag= (part of a DAG id) and ?reason=
// (a reason code) narrow every list, and ?team= shows the pools a team's DAGs may use. Every
// link of the page (paging, the team chips) keeps the other filters.

const waitingPage = 50

type poolsQuery struct {
	DAG    string
	Reason string
	Team   string
	Pool   string // the pool whose list is paged
	Offset int
}

func poolsQueryOf(r *http.Request) poolsQuery {
	q := r.URL.Query()
	p := poolsQuery{DAG: strings.TrimSpace(q.Get("dag")), Reason: q.Get("reason"), Team: strings.TrimSpace(q.Get("team")),
		Pool: q.Get("pool")}
	p.Offset, _ = strconv.Atoi(q.Get("offset"))
	p.Offset = max(p.Offset, 0)
	return p
}

// Filtered reports whether a filter narrows the lists.
func (q poolsQuery) Filtered() bool { return q.DAG != "" || q.Reason != "" }

// path is the page with q's filters, pool's list from offset (0: every list's first page).
func (q poolsQuery) path(pool string, offset int) string {
	v := url.Values{}
	if q.DAG != "" {
		v.Set("dag", q.DAG)
	}
	if q.Reason != "" {
		v.Set("reason", q.Reason)
	}
	if q.Team != "" {
		v.Set("team", q.Team)
	}
	if offset > 0 {
		v.Set("pool", pool)
		v.Set("offset", strconv.Itoa(offset))
	}
	p := "/ui/pools"
	if len(v) > 0 {
		p += "?" + v.Encode()
	}
	if pool == "" {
		return p
	}
	return p + "#pool-" + url.PathEscape(pool)
}

// ClearPath is the page without the DAG and reason filters (the team's pools stay).
func (q poolsQuery) ClearPath() string { return poolsQuery{Team: q.Team}.path("", 0) }

// TeamPath is the page with q's other filters and team's pools ("" = every pool).
func (q poolsQuery) TeamPath(team string) string {
	q.Team = team
	return q.path("", 0)
}

// waitingPager is one pool's page of its waiting list.
type waitingPager struct {
	Total      int // entries the filters keep
	All        int // entries waiting in all
	From, To   int
	Prev, Next string
}

// waitingRows are the page of a pool's line the store read (server.PoolsPage), as rows and links.
func waitingRows(q poolsQuery, p server.PoolPage) ([]waitingRow, waitingPager) {
	rows := make([]waitingRow, len(p.Waiting))
	for i, e := range p.Waiting {
		rows[i] = waitingRow{EntryJSON: e, Position: p.Positions[i], Slots: e.Requirements[p.Name],
			Href: taskPath(e.DAGID, e.DAGRunID, e.TaskID)}
	}
	pg := waitingPager{Total: p.Matching, All: p.All}
	lo, hi := p.Offset, p.Offset+len(rows)
	if lo < hi {
		pg.From, pg.To = lo+1, hi
	}
	if lo > 0 {
		pg.Prev = q.path(p.Name, max(lo-waitingPage, 0))
	}
	if hi < p.Matching {
		pg.Next = q.path(p.Name, hi)
	}
	return rows, pg
}

// waitReasons are the reasons a waiting entry may have (§4.5), the reason filter's choices.
var waitReasons = []vocab.ReasonCode{vocab.ReasonPoolFull, vocab.ReasonBehind, vocab.ReasonStarvedHead,
	vocab.ReasonGlobalLimit, vocab.ReasonDAGLimit, vocab.ReasonTaskLimit, vocab.ReasonBackfillLimit, vocab.ReasonForbid,
	vocab.ReasonPaused, vocab.ReasonNodeAway, vocab.ReasonDraining, vocab.ReasonUnknownPool, vocab.ReasonOverCapacity}

// reasonOptions lists the reason codes for the filter's choices (and an unknown chosen one).
func reasonOptions(chosen string) []string {
	out := vocab.Strings(waitReasons)
	if chosen != "" && !slices.Contains(out, chosen) {
		out = append(out, chosen)
	}
	return out
}
