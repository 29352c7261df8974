package ui

import (
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
)

// The DAG page's choice of runs: which run the graph shows (a picker, defaulting to the newest
// run that has started: a run only queued shows nothing of interest), and which window of runs
// the grid shows (?grid=offset, paged towards older runs).

// graphOf is the DAG page with its graph showing run.
func graphOf(dag, run string) string {
	return dagPage{DAG: dag, Run: run}.path()
}

// dagPage is the DAG page's own query: the run the graph shows, the grid's offset, whether big
// graphs are drawn collapsed (Groups: "on", "off", "" = by size) and the groups opened.
type dagPage struct {
	DAG    string
	Run    string
	Grid   int
	Groups string
	Open   []string
}

func dagPageOf(r *http.Request, dag string) dagPage {
	q := r.URL.Query()
	p := dagPage{DAG: dag, Run: q.Get("run"), Groups: q.Get("groups"), Open: q["open"]}
	p.Grid, _ = strconv.Atoi(q.Get("grid"))
	p.Grid = max(p.Grid, 0)
	if p.Groups != "on" && p.Groups != "off" {
		p.Groups = ""
	}
	return p
}

// collapse says whether the graph of a DAG of n tasks is drawn with groups.
func (p dagPage) collapse(n int) bool {
	if p.Groups == "" {
		return n > groupAbove
	}
	return p.Groups == "on"
}

func (p dagPage) opened() map[string]bool {
	m := map[string]bool{}
	for _, o := range p.Open {
		m[o] = true
	}
	return m
}

// opening is the page with one more group open.
func (p dagPage) opening(id string) string {
	q := p
	q.Open = append(slices.Clone(p.Open), id)
	return q.path() + "#graph-live"
}

// grouped is the page with grouping on or off, every group closed.
func (p dagPage) grouped(on bool) string {
	q := p
	q.Open = nil
	q.Groups = "off"
	if on {
		q.Groups = "on"
	}
	return q.path() + "#graph-live"
}

func (p dagPage) path() string {
	v := url.Values{}
	if p.Run != "" {
		v.Set("run", p.Run)
	}
	if p.Grid > 0 {
		v.Set("grid", strconv.Itoa(p.Grid))
	}
	if p.Groups != "" {
		v.Set("groups", p.Groups)
	}
	for _, o := range p.Open {
		v.Add("open", o)
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
	// Of is how many runs the DAG has, as the page says it: "734", or "1,000+" past the
	// bound the page counts to (countBound).
	Of template.HTML
}

func newGridPager(p dagPage, size, shown, total int, f store.RunFilter) gridPager {
	g := gridPager{Offset: p.Grid, Total: total, Of: runTotal(total, f)}
	at := func(off int) string { q := p; q.Grid = off; return q.path() + "#grid-live" }
	if p.Grid > 0 {
		g.Newer, g.Newest = at(max(p.Grid-size, 0)), at(0)
	}
	if p.Grid+shown < total {
		g.Older = at(p.Grid + size)
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

// gridSize is how many runs the grid shows at once: fewer for a big DAG, whose grid reads a
// task instance per task and run (500 tasks × 25 runs was 12,500 rows for one page).
func gridSize(def *dag.DAG) int {
	if def != nil && len(def.Tasks) > bigGrid {
		return gridRunsBig
	}
	return gridRuns
}

const (
	bigGrid     = 100 // tasks past which a DAG's grid shows gridRunsBig runs
	gridRunsBig = 10
)
