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
// (a reason code) narrow every list.

const waitingPage = 50

type poolsQuery struct {
	DAG    string
	Reason string
	Pool   string // the pool whose list is paged
	Offset int
}

func poolsQueryOf(r *http.Request) poolsQuery {
	q := r.URL.Query()
	p := poolsQuery{DAG: strings.TrimSpace(q.Get("dag")), Reason: q.Get("reason"), Pool: q.Get("pool")}
	p.Offset, _ = strconv.Atoi(q.Get("offset"))
	p.Offset = max(p.Offset, 0)
	return p
}

// Filtered reports whether a filter narrows the lists.
func (q poolsQuery) Filtered() bool { return q.DAG != "" || q.Reason != "" }

func (q poolsQuery) path(pool string, offset int) string {
	v := url.Values{}
	if q.DAG != "" {
		v.Set("dag", q.DAG)
	}
	if q.Reason != "" {
		v.Set("reason", q.Reason)
	}
	if offset > 0 {
		v.Set("pool", pool)
		v.Set("offset", strconv.Itoa(offset))
	}
	p := "/ui/pools"
	if len(v) > 0 {
		p += "?" + v.Encode()
	}
	return p + "#pool-" + url.PathEscape(pool)
}

// waitingPager is one pool's page of its waiting list.
type waitingPager struct {
	Total      int // entries the filters keep
	All        int // entries waiting in all
	From, To   int
	Prev, Next string
}

// pageWaiting filters and pages a pool's waiting entries; it also gathers the reason codes seen.
func pageWaiting(q poolsQuery, p server.BoardPoolJSON, codes map[vocab.ReasonCode]bool) ([]waitingRow, waitingPager) {
	var kept []waitingRow
	dag := strings.ToLower(q.DAG)
	for i, e := range p.Waiting {
		if e.Reason != nil && e.Reason.Code != "" {
			codes[e.Reason.Code] = true
		}
		if dag != "" && !strings.Contains(strings.ToLower(e.DAGID), dag) {
			continue
		}
		if q.Reason != "" && (e.Reason == nil || string(e.Reason.Code) != q.Reason) {
			continue
		}
		kept = append(kept, waitingRow{EntryJSON: e, Position: i + 1, Slots: e.Requirements[p.Name],
			Href: taskPath(e.DAGID, e.DAGRunID, e.TaskID)})
	}
	pg := waitingPager{Total: len(kept), All: len(p.Waiting)}
	off := 0
	if q.Pool == p.Name {
		off = min(q.Offset, max(len(kept)-1, 0)/waitingPage*waitingPage)
	}
	lo, hi := off, min(off+waitingPage, len(kept))
	if lo < hi {
		pg.From, pg.To = lo+1, hi
	}
	if lo > 0 {
		pg.Prev = q.path(p.Name, max(lo-waitingPage, 0))
	}
	if hi < len(kept) {
		pg.Next = q.path(p.Name, hi)
	}
	return slices.Clip(kept[lo:hi]), pg
}

// reasonOptions lists the reason codes seen, sorted, for the filter's choices.
func reasonOptions(codes map[vocab.ReasonCode]bool, chosen string) []string {
	var out []string
	for c := range codes {
		out = append(out, string(c))
	}
	if chosen != "" && !codes[vocab.ReasonCode(chosen)] {
		out = append(out, chosen)
	}
	slices.Sort(out)
	return out
}
