package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// addEvents writes audit events as the daemon and the API do.
func (b *bundle) addEvents(t *testing.T, es ...store.Event) {
	t.Helper()
	err := b.st.WithTx(context.Background(), func(tx store.Tx) error {
		for i := range es {
			if err := tx.InsertEvent(&es[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

var eventRowRE = regexp.MustCompile(`<tr data-event="[a-z_]+" data-event-id="\d+">`)

// TestEventsPage: the filters of GET /api/v1/eventLogs, pages of 50, a bad filter said inline.
func TestEventsPage(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	at := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	var es []store.Event
	for i := range 60 {
		es = append(es, store.Event{At: at.Add(time.Duration(i) * time.Minute), Actor: "api:10.0.0.1",
			Action: vocab.ActionTrigger, DAGID: "quick", RunID: fmt.Sprintf("r%02d", i), Outcome: "ok"})
	}
	es = append(es,
		store.Event{At: at.Add(2 * time.Hour), Actor: "cli:ann@host", Action: vocab.ActionClear, DAGID: "diamond",
			RunID: "d1", TaskID: "left", Params: `{"include_downstream":true,"task_ids":["left"]}`, Outcome: "ok"},
		store.Event{At: at.Add(3 * time.Hour), Actor: "api:10.0.0.2", Action: vocab.ActionPoolSet, Pool: "db",
			Params: `{"slots":3}`, Outcome: "pool db is defined in poolflow.yaml <b>"},
		store.Event{At: at.Add(4 * time.Hour), Actor: "api:10.0.0.1", Action: vocab.ActionDeleteRun, DAGID: "diamond",
			RunID: "gone", Outcome: "ok"})
	b.addEvents(t, es...)

	tests := []struct {
		name  string
		query string
		rows  int
		want  []string
		not   []string
	}{
		{"first page", "", 50, []string{"1–50 of 63 events", `rel="next"`, `href="/ui/events?offset=50"`,
			`href="/api/v1/eventLogs?limit=50&amp;offset=0"`}, []string{`rel="prev"`}},
		{"second page", "?offset=50", 13, []string{"51–63 of 63 events", `rel="prev"`, `href="/ui/events"`}, []string{`rel="next"`}},
		{"by dag", "?dag_id=diamond", 2, []string{"1–2 of 2 events", "include_downstream", `<span class="k">task_ids</span> left</span>`,
			`href="/ui/dags/diamond/runs/d1/tasks/left"`, `<span title="deleted">gone</span>`, `value="diamond"`}, nil},
		{"by event", "?event=clear", 1, []string{`<option value="clear" selected>`, "cli:ann@host"}, nil},
		{"by actor", "?actor=api:10.0.0.2", 1, []string{`<span class="muted">pool</span> <a href="/ui/pools#pool-db">db</a>`,
			"pool db is defined in poolflow.yaml &lt;b&gt;"}, nil},
		{"by run and task", "?dag_id=diamond&run_id=d1&task_id=left", 1, []string{"Clear filters"}, nil},
		{"time window", "?after=2026-12-02T07:10&before=2026-12-02T07:20", 10, []string{"1–10 of 10 events",
			`href="/api/v1/eventLogs?after=2026-12-02T07%3A10%3A00Z&amp;before=2026-12-02T07%3A20%3A00Z&amp;limit=50&amp;offset=0"`}, nil},
		{"no match", "?actor=nobody", 0, []string{"No event matches these filters"}, nil},
	}
	for _, tt := range tests {
		body := b.page(t, http.StatusOK, "/ui/events"+tt.query)
		if n := len(eventRowRE.FindAllString(body, -1)); n != tt.rows {
			t.Errorf("%s: %d rows, want %d", tt.name, n, tt.rows)
		}
		for _, w := range tt.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: no %q in the page", tt.name, w)
			}
		}
		for _, w := range tt.not {
			if strings.Contains(body, w) {
				t.Errorf("%s: %q in the page", tt.name, w)
			}
		}
	}
	// The page's JSON link is the API's answer to the same query.
	rec := b.get(t, "/api/v1/eventLogs?after=2026-12-02T07%3a10%3a00Z&before=2026-12-02T07%3a20%3a00Z&limit=50&offset=0")
	var api struct {
		Total int `json:"total_entries"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &api); rec.Code != http.StatusOK || err != nil || api.Total != 10 {
		t.Errorf("the JSON link: %d %s", rec.Code, rec.Body.String())
	}
	for query, want := range map[string]string{
		"?event=nosuch":     `event: &#34;nosuch&#34; is not an event`,
		"?after=yesterday":  `after: &#34;yesterday&#34; is not a time`,
		"?before=12/2/2026": `before: &#34;12/2/2026&#34; is not a time`,
	} {
		body := b.page(t, http.StatusBadRequest, "/ui/events"+query)
		if !strings.Contains(body, want) || !strings.Contains(body, `id="filter-error"`) {
			t.Errorf("%s: the page does not say %q", query, want)
		}
	}
}

// TestEventsCards: a DAG's, a run's and a task's page each show their own newest events and
// link to the whole list.
func TestEventsCards(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.trigger(t, "diamond", "r1")
	b.waitRunEnd(t, "diamond", "r1")
	at := time.Now().UTC()
	b.addEvents(t,
		store.Event{At: at, Actor: "cli:ann@host", Action: vocab.ActionNote, DAGID: "diamond", RunID: "r1", TaskID: "left",
			Params: `{"note":"flaky"}`, Outcome: "ok"},
		store.Event{At: at, Actor: "cli:bob@host", Action: vocab.ActionPause, DAGID: "diamond", Outcome: "ok"},
		store.Event{At: at, Actor: "cli:cy@host", Action: vocab.ActionPause, DAGID: "quick", Outcome: "ok"},
		// A clear's event is the run's; the tasks asked for are among its arguments.
		store.Event{At: at, Actor: "cli:dee@host", Action: vocab.ActionClear, DAGID: "diamond", RunID: "r1",
			Params: `{"task_ids":["left","start"]}`, Outcome: "ok"})
	for path, want := range map[string][]string{
		"/ui/dags/diamond":                    {"cli:ann@host", "cli:bob@host", `href="/ui/events?dag_id=diamond"`, "all of this DAG"},
		"/ui/dags/diamond/runs/r1":            {"cli:ann@host", `href="/ui/events?dag_id=diamond&amp;run_id=r1"`, "all of this run"},
		"/ui/dags/diamond/runs/r1/tasks/left": {"cli:ann@host", "flaky", "cli:dee@host", `href="/ui/events?dag_id=diamond&amp;run_id=r1"`},
	} {
		body := b.page(t, http.StatusOK, path)
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: no %q", path, w)
			}
		}
		if strings.Contains(body, "cli:cy@host") {
			t.Errorf("%s shows another DAG's event", path)
		}
	}
	if body := b.page(t, http.StatusOK, "/ui/dags/diamond/runs/r1/tasks/right"); strings.Contains(body, "cli:ann@host") ||
		strings.Contains(body, "cli:dee@host") {
		t.Error("a task page shows another task's event")
	}
	// The trigger over the API left its own event.
	if body := b.page(t, http.StatusOK, "/ui/events?event=trigger&dag_id=diamond"); len(eventRowRE.FindAllString(body, -1)) != 1 {
		t.Errorf("the trigger's event is not listed")
	}
}
