package ui

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The audit log (§10.4): the events page with its filters (the names of GET /api/v1/eventLogs'
// query), and each DAG, run and task page's own recent events.

// eventsPage is how many events a page of /ui/events lists; recentEvents how many a DAG, run
// or task page shows.
const (
	eventsPage   = 50
	recentEvents = 8
)

// eventRow is one event as the pages show it.
type eventRow struct {
	ID                         int64
	At                         time.Time
	Actor                      string
	Action                     vocab.Action
	DAGID, RunID, TaskID, Pool string
	Try                        int
	Outcome                    string
	Params                     []param // its arguments, by name
	OK                         bool    // its outcome is ok
	RunGone                    bool    // its run's deletion is among the rows: no link to it
}

type param struct{ Name, Value string }

// eventRows turns the API's events (server.Events, as GET /api/v1/eventLogs answers them)
// into rows.
func eventRows(es []server.EventLogJSON) []eventRow {
	out := make([]eventRow, len(es))
	gone := map[[2]string]bool{}
	for i, v := range es {
		e := eventRow{ID: v.EventLogID, At: v.When, Actor: v.Owner, Action: v.Event, DAGID: deref(v.DAGID),
			RunID: deref(v.RunID), TaskID: deref(v.TaskID), Pool: deref(v.Pool), Outcome: v.Outcome,
			Params: eventParams(string(v.Params)), OK: v.Outcome == "" || v.Outcome == "ok"}
		if v.TryNumber != nil {
			e.Try = *v.TryNumber
		}
		out[i] = e
		if e.Action == vocab.ActionDeleteRun && e.OK {
			gone[[2]string{e.DAGID, e.RunID}] = true
		}
	}
	for i := range out {
		out[i].RunGone = gone[[2]string{out[i].DAGID, out[i].RunID}]
	}
	return out
}

// eventParams reads an event's JSON arguments as name=value pairs in name order; a value that
// is not a string is shown as JSON. Anything but an object is one unnamed value.
func eventParams(raw string) []param {
	if s := strings.TrimSpace(raw); s == "" || s == "null" {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return []param{{Value: raw}}
	}
	out := make([]param, 0, len(m))
	for k, v := range m {
		var s string
		var list []string
		switch {
		case json.Unmarshal(v, &s) == nil:
		case json.Unmarshal(v, &list) == nil:
			s = strings.Join(list, ", ")
		default:
			s = string(v)
		}
		out = append(out, param{Name: k, Value: s})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// eventsData is the events page: the filter form's values, the rows of one page, and the links
// to the pages around it.
type eventsData struct {
	Filter  eventQuery
	Actions []vocab.Action
	Table   eventsCard // the page's rows (Scope "": every column)
	Total   int
	From    int // the first row's number, 1-based (0 when none)
	To      int
	Prev    string // "" when there is none
	Next    string
	API     string // the same query on GET /api/v1/eventLogs
	Error   string // why a filter was not understood
}

// eventQuery is the events page's query: the API's filter names.
type eventQuery struct {
	DAGID, RunID, TaskID, Event, Actor, After, Before string
	Offset                                            int
}

func (q eventQuery) values() url.Values {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("dag_id", q.DAGID)
	set("run_id", q.RunID)
	set("task_id", q.TaskID)
	set("event", q.Event)
	set("actor", q.Actor)
	set("after", q.After)
	set("before", q.Before)
	if q.Offset > 0 {
		v.Set("offset", strconv.Itoa(q.Offset))
	}
	return v
}

// Filtered says whether any filter is set.
func (q eventQuery) Filtered() bool {
	q.Offset = 0
	return len(q.values()) > 0
}

// eventsPath is the events page for a query.
func eventsPath(q eventQuery) string {
	if v := q.values(); len(v) > 0 {
		return "/ui/events?" + v.Encode()
	}
	return "/ui/events"
}

// eventsOf is the events page of a DAG, a run or a task instance: the link of its pages'
// events cards.
func eventsOf(dag, run, task string) string {
	return eventsPath(eventQuery{DAGID: dag, RunID: run, TaskID: task})
}

// parseWhen reads a time bound of the filter form: RFC 3339, or a date and time as the form's
// datetime-local input sends it (taken as UTC), or a date alone.
func parseWhen(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05",
		"2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time (2026-12-02T07:30, UTC, or RFC 3339)", s)
}

func (u *UI) eventsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	fq := eventQuery{DAGID: q.Get("dag_id"), RunID: q.Get("run_id"), TaskID: q.Get("task_id"), Event: q.Get("event"),
		Actor: q.Get("actor"), After: q.Get("after"), Before: q.Get("before")}
	fq.Offset, _ = strconv.Atoi(q.Get("offset"))
	fq.Offset = max(fq.Offset, 0)
	data := eventsData{Filter: fq, Actions: vocab.Actions()}
	f := store.EventFilter{DAGID: fq.DAGID, RunID: fq.RunID, TaskID: fq.TaskID, Actor: fq.Actor,
		Limit: eventsPage, Offset: fq.Offset}
	var bad []string
	if fq.Event != "" {
		if a := vocab.Action(fq.Event); a.Valid() {
			f.Action = a
		} else {
			bad = append(bad, fmt.Sprintf("event: %q is not an event", fq.Event))
		}
	}
	for _, b := range []struct {
		name, s string
		t       *time.Time
	}{{"after", fq.After, &f.After}, {"before", fq.Before, &f.Before}} {
		if b.s == "" {
			continue
		}
		t, err := parseWhen(b.s)
		if err != nil {
			bad = append(bad, b.name+": "+err.Error())
			continue
		}
		*b.t = t
	}
	status := http.StatusOK
	if len(bad) > 0 {
		data.Error = strings.Join(bad, "; ")
		status = http.StatusBadRequest
		u.render(w, r, status, "events", "Events", "events", data)
		return
	}
	es, total, err := u.api.Events(r.Context(), f)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	data.Table, data.Total = eventsCard{Now: u.api.Now(), Rows: eventRows(es)}, total
	if len(es) > 0 {
		data.From, data.To = fq.Offset+1, fq.Offset+len(es)
	}
	if fq.Offset > 0 {
		p := fq
		p.Offset = max(fq.Offset-eventsPage, 0)
		data.Prev = eventsPath(p)
	}
	if fq.Offset+len(es) < total {
		n := fq.Offset
		fq.Offset += eventsPage
		data.Next = eventsPath(fq)
		fq.Offset = n
	}
	api := fq.values()
	for name, t := range map[string]time.Time{"after": f.After, "before": f.Before} {
		if !t.IsZero() {
			api.Set(name, t.Format(time.RFC3339))
		}
	}
	api.Set("limit", strconv.Itoa(eventsPage))
	api.Set("offset", strconv.Itoa(fq.Offset))
	data.API = "/api/v1/eventLogs?" + api.Encode()
	u.render(w, r, status, "events", "Events", "events", data)
}

// eventsCard is what a DAG, run or task page shows of its own events: the newest few, how many
// there are, and the link to all of them.
// eventsCountBound is where a page's events card stops counting: a DAG triggered 100,000 times
// says "the 10 newest of 1,000+" instead of walking its whole history on every view.
const eventsCountBound = 1000

type eventsCard struct {
	Now   time.Time
	Rows  []eventRow
	Total int
	Of    template.HTML // Total as the card says it: "1,000+" past eventsCountBound
	All   string
	// Scope says whose events they are (the DAG's, the run's, the task's): the card hides the
	// columns it would repeat.
	Scope string
}

// Targets says whether the target column says anything: on a run's or a task's page only
// events about one of its tasks or a pool have one.
func (c eventsCard) Targets() bool {
	for _, e := range c.Rows {
		if len(targetOf(e, c.Scope)) > 0 {
			return true
		}
	}
	return false
}

// taskEventsScan is how many of a run's newest events a task page reads to find its own.
const taskEventsScan = 200

// recentEventsOf is the events card of a DAG, a run, or a task instance (task set). A task's
// own events are those that name it: its task_id, or a clear's or a mark's task_ids (their
// events are the run's, with the tasks asked for among the arguments); its card links to the
// run's events.
func (u *UI) recentEventsOf(r *http.Request, dag, run, task string) (eventsCard, error) {
	f := store.EventFilter{DAGID: dag, RunID: run, Limit: recentEvents, CountAtMost: eventsCountBound}
	if task != "" {
		f.Limit, f.CountAtMost = taskEventsScan, 0
	}
	es, total, err := u.api.Events(r.Context(), f)
	if err != nil {
		return eventsCard{}, err
	}
	card := eventsCard{Now: u.api.Now(), All: eventsOf(dag, run, ""), Scope: "dag"}
	switch {
	case task != "":
		card.Scope = "task"
		mine := es[:0]
		for _, e := range es {
			if e.TaskID != nil && *e.TaskID == task || e.TaskID == nil && namesTask(e.Params, task) {
				mine = append(mine, e)
			}
		}
		total = len(mine)
		es = mine[:min(len(mine), recentEvents)]
	case run != "":
		card.Scope = "run"
	}
	card.Rows, card.Total, card.Of = eventRows(es), total, template.HTML(thousands(total))
	if f.CountAtMost > 0 && total > f.CountAtMost {
		card.Of = template.HTML(thousands(f.CountAtMost) + "+")
	}
	return card, nil
}

// namesTask reports whether an event's arguments name the task among their task_ids.
func namesTask(params json.RawMessage, task string) bool {
	var p struct {
		TaskIDs []string `json:"task_ids"`
	}
	return json.Unmarshal(params, &p) == nil && slices.Contains(p.TaskIDs, task)
}

// targetLink is one part of what an event is about, linked to its page.
type targetLink struct {
	Kind  string // "pool" before a pool's name
	Text  string
	Href  string // "" for a deleted run
	Title string
}

// targetOf is what an event is about (pool, DAG, run, task), without the parts the page it is
// shown on already says (scope: dag, run, task, or "" for the events page).
func targetOf(e eventRow, scope string) []targetLink {
	var out []targetLink
	if e.Pool != "" {
		out = append(out, targetLink{Kind: "pool", Text: e.Pool, Href: poolPath(e.Pool)})
	}
	if e.DAGID != "" && scope == "" {
		out = append(out, targetLink{Text: e.DAGID, Href: dagPath(e.DAGID)})
	}
	if e.RunID != "" && (scope == "" || scope == "dag") {
		l := targetLink{Text: e.RunID, Href: runPath(e.DAGID, e.RunID)}
		if e.RunGone || e.Action == vocab.ActionDeleteRun {
			l.Href, l.Title = "", "deleted"
		}
		out = append(out, l)
	}
	if e.TaskID != "" && scope != "task" {
		l := targetLink{Text: e.TaskID}
		if e.RunID != "" && !e.RunGone {
			l.Href = taskPath(e.DAGID, e.RunID, e.TaskID)
		}
		out = append(out, l)
	}
	return out
}
