package ui

import (
	"net/url"
	"strconv"

	"github.com/poolflow/poolflow/store"
)

// The DAG page's choice of runs: which run the graph shows (a picker, defaulting to the newest
// run that has started: a run only queued shows nothing of interest), and which window of runs
// the grid shows (?grid=offset, paged towards older runs).

// graphOf is the DAG page with its graph showing run.
func graphOf(dag, run string) string {
	return dagPage{DAG: dag, Run: run}.path()
}

// dagPage is the DAG page's own query: the run the graph shows and the grid's offset.
type dagPage struct {
	DAG  string
	Run  string
	Grid int
}

func (p dagPage) path() string {
	v := url.Values{}
	if p.Run != "" {
		v.Set("run", p.Run)
	}
	if p.Grid > 0 {
		v.Set("grid", strconv.Itoa(p.Grid))
	}
	if len(v) == 0 {
		return dagPath(p.DAG)
	}
	return dagPath(p.DAG) + "?" + v.Encode()
}

// gridPager is the grid's paging: links to newer and older windows of runs.
type gridPager struct {
	Offset, Total int
	Newer, Older  string
	Newest        string
}

func newGridPager(dag, run string, offset, shown, total int) gridPager {
	g := gridPager{Offset: offset, Total: total}
	if offset > 0 {
		g.Newer = dagPage{DAG: dag, Run: run, Grid: max(offset-gridRuns, 0)}.path() + "#grid-live"
		g.Newest = dagPage{DAG: dag, Run: run}.path() + "#grid-live"
	}
	if offset+shown < total {
		g.Older = dagPage{DAG: dag, Run: run, Grid: offset + gridRuns}.path() + "#grid-live"
	}
	return g
}

// newestStarted picks the graph's default run among runs (newest first): the newest that has
// started, else the newest.
func newestStarted(runs []store.Run) *store.Run {
	for i := range runs {
		if !runs[i].StartDate.IsZero() {
			return &runs[i]
		}
	}
	if len(runs) > 0 {
		return &runs[0]
	}
	return nil
}
