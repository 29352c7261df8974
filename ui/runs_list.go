package ui

import (
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The runs list (/ui/runs, and /ui/dags/{dag}/runs for one DAG): every run, newest first,
// paged and filtered by state, type, logical date range and text, so that no run is out of
// reach however many there are. The DAG page's grid shows a window of it; this is the whole.

// runsPage is how many runs one page of the list shows.
const runsPage = 50

// countBound is where a page of runs shown from offset stops counting the runs its filter
// selects: a thousand past the page, rounded to a thousand. Counting every run walks all of
// them (100,000 index entries, on every view and live refresh); the page says "1,000+" instead,
// and costs the same at 1,000 runs as at 100,000. The oldest page, asked for, counts them all.
func countBound(offset, limit int) int { return (offset+limit)/1000*1000 + 1000 }

// runTotal is how many runs f selects as a page says it, from ListRunsWhere's total: the count,
// or "1,000+" when the count stopped at f's bound (HTML, digits and signs only: the template
// would write the + as &#43;, which a page search for "1,000+" does not find).
func runTotal(total int, f store.RunFilter) template.HTML {
	if f.Capped(total) {
		return template.HTML(thousands(f.CountAtMost) + "+")
	}
	return template.HTML(thousands(total))
}

// thousands writes n with its thousands separated by commas: 100,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// runsQuery is the list's filter, as the form sends it.
type runsQuery struct {
	DAGID  string // from the path: the list of one DAG
	States []string
	Types  []string // run types in the API's words (scheduled, backfill, manual, node, test)
	From   string   // logical date bounds as typed
	To     string
	Text   string
	Offset int
	Oldest bool // the oldest page (offset=last), wherever it is
}

func (q runsQuery) values() url.Values {
	v := url.Values{}
	for _, s := range q.States {
		v.Add("state", s)
	}
	for _, t := range q.Types {
		v.Add("type", t)
	}
	for k, s := range map[string]string{"from": q.From, "to": q.To, "q": q.Text} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Offset > 0 {
		v.Set("offset", strconv.Itoa(q.Offset))
	}
	if q.Oldest {
		v.Set("offset", "last")
	}
	return v
}

// Filtered reports whether anything narrows the list.
func (q runsQuery) Filtered() bool {
	return len(q.States)+len(q.Types) > 0 || q.From != "" || q.To != "" || q.Text != ""
}

// Has reports whether the filter keeps state or type s (the form's ticked boxes).
func (q runsQuery) Has(s string) bool {
	for _, x := range append(append([]string{}, q.States...), q.Types...) {
		if x == s {
			return true
		}
	}
	return false
}

func (q runsQuery) path() string {
	p := "/ui/runs"
	if q.DAGID != "" {
		p = dagPath(q.DAGID) + "/runs"
	}
	if v := q.values(); len(v) > 0 {
		p += "?" + v.Encode()
	}
	return p
}

// runsListPath is the runs list of a DAG ("" = every DAG).
func runsListPath(dag string) string { return runsQuery{DAGID: dag}.path() }

type runsData struct {
	Filter     runsQuery
	States     []vocab.RunState
	Types      []string
	Runs       []store.Run
	Total      int
	Of         template.HTML // Total as the page says it: "1,000+" when the count stopped at its bound
	Capped     bool          // the count stopped at its bound: the page does not know how many pages
	From, To   int           // the 1-based positions of the shown runs among the selected
	Page       int
	Pages      int // how many pages (when the count is not Capped)
	Prev, Next string
	First      string
	Last       string
	API        string
	Error      string
}

func (u *UI) runsList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	fq := runsQuery{DAGID: mux.Vars(r)["dag"], States: q["state"], Types: q["type"], From: strings.TrimSpace(q.Get("from")),
		To: strings.TrimSpace(q.Get("to")), Text: strings.TrimSpace(q.Get("q"))}
	fq.Offset, _ = strconv.Atoi(q.Get("offset"))
	fq.Offset = max(fq.Offset, 0)
	oldest := q.Get("offset") == "last" // the oldest page: where it is needs the whole count

	title, nav := "Runs", "runs"
	if fq.DAGID != "" {
		if _, _, err := u.api.DAG(r.Context(), fq.DAGID); err != nil {
			u.fail(w, r, err)
			return
		}
		title, nav = fq.DAGID+" · runs", "dags"
	}
	data := runsData{Filter: fq, States: vocab.RunStates(), Types: vocab.RunTypeWords()}
	f := store.RunFilter{DAGID: fq.DAGID, Text: fq.Text, OrderBy: "queued_at", Desc: true, Limit: runsPage, Offset: fq.Offset}
	var bad []string
	for _, s := range fq.States {
		if st := vocab.RunState(s); st.Valid() {
			f.States = append(f.States, st)
		} else {
			bad = append(bad, "state: "+strconv.Quote(s)+" is not a run state")
		}
	}
	for _, s := range fq.Types {
		if t, ok := vocab.ParseRunType(s); ok {
			f.RunTypes = append(f.RunTypes, t)
		} else {
			bad = append(bad, "type: "+strconv.Quote(s)+" is not a run type ("+strings.Join(data.Types, ", ")+")")
		}
	}
	if len(fq.Text) > 200 {
		bad = append(bad, "text: at most 200 characters")
	}
	for _, b := range []struct {
		name, s string
		t       *time.Time
		end     bool
	}{{"from", fq.From, &f.LogicalFrom, false}, {"to", fq.To, &f.LogicalTo, true}} {
		if b.s == "" {
			continue
		}
		t, err := parseWhen(b.s)
		if err != nil {
			bad = append(bad, b.name+": "+err.Error())
			continue
		}
		if b.end && len(b.s) == len("2006-01-02") { // a date alone: to the end of that day
			t = t.Add(24*time.Hour - time.Microsecond)
		}
		*b.t = t
	}
	if len(bad) > 0 {
		data.Error = strings.Join(bad, "; ")
		u.render(w, r, http.StatusBadRequest, "runs", title, nav, data)
		return
	}
	if oldest {
		c := f
		c.Limit = 1
		_, total, err := u.api.Store().ListRunsWhere(r.Context(), c)
		if err != nil {
			u.fail(w, r, err)
			return
		}
		fq.Offset = max(total-1, 0) / runsPage * runsPage
		f.Offset, data.Filter.Offset = fq.Offset, fq.Offset
	}
	f.CountAtMost = countBound(f.Offset, f.Limit)
	runs, total, err := u.api.Store().ListRunsWhere(r.Context(), f)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	data.Runs, data.Total, data.Of, data.Capped = runs, total, runTotal(total, f), f.Capped(total)
	if len(runs) > 0 {
		data.From, data.To = fq.Offset+1, fq.Offset+len(runs)
	}
	data.Page, data.Pages = fq.Offset/runsPage+1, max((total+runsPage-1)/runsPage, 1)
	at := func(off int) string { p := fq; p.Offset = off; return p.path() }
	if fq.Offset > 0 {
		data.Prev, data.First = at(max(fq.Offset-runsPage, 0)), at(0)
	}
	if fq.Offset+len(runs) < total {
		data.Next, data.Last = at(fq.Offset+runsPage), at((data.Pages-1)*runsPage)
		if data.Capped {
			p := fq
			p.Offset, p.Oldest = 0, true
			data.Last = p.path()
		}
	}
	api := url.Values{}
	for _, s := range f.States {
		api.Add("state", string(s))
	}
	for _, t := range f.RunTypes {
		api.Add("run_type", t.Word())
	}
	if !f.LogicalFrom.IsZero() {
		api.Set("logical_date_gte", f.LogicalFrom.Format(time.RFC3339Nano))
	}
	if !f.LogicalTo.IsZero() {
		api.Set("logical_date_lte", f.LogicalTo.Format(time.RFC3339Nano))
	}
	if f.Text != "" {
		api.Set("q", f.Text)
	}
	api.Set("limit", strconv.Itoa(runsPage))
	api.Set("offset", strconv.Itoa(fq.Offset))
	dag := fq.DAGID
	if dag == "" {
		dag = "~"
	}
	data.API = apiPath("dags", dag, "dagRuns") + "?" + api.Encode()
	u.render(w, r, http.StatusOK, "runs", title, nav, data)
}
