package ui

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/poolflow/poolflow/vocab"
)

// TestGridBodyEscapes: the grid's rows, written without the template, escape every value
// (a task id, a run id in a title, a group's link) and keep the markup the page's script and
// styles read: a cell's state class and data-state, a mapped task's bar, an absent cell.
func TestGridBodyEscapes(t *testing.T) {
	rows := []gridRow{
		{Task: `a<b>"c"`, Kind: "command", Cells: []gridCell{
			{State: vocab.TaskUpForRetry, Href: `/ui/x?a=1&b="2"`, Title: `<script>alert(1)</script>`},
			{State: vocab.TaskNone, Title: `not in "r2"`},
			{State: vocab.TaskSuccess, Href: "/ui/m", Title: "m", Bar: []statePart{{State: vocab.TaskSuccess, N: 3, Pct: 75},
				{State: vocab.TaskFailed, N: 1, Pct: 25}}},
		}},
		{Task: "load_* (100)", Kind: "prefix", Group: "/ui/dags/d?open=prefix%3A1&x=<", Size: 100},
	}
	got := string(gridBody(rows))
	for _, want := range []string{
		`<th class="task-col"><span title="command">a&lt;b&gt;&#34;c&#34;</span></th>`,
		`<a class="cell st-up-for-retry" href="/ui/x?a=1&amp;b=&#34;2&#34;" title="&lt;script&gt;alert(1)&lt;/script&gt;" data-state="up_for_retry">`,
		`<span class="cell absent" title="not in &#34;r2&#34;"></span>`,
		`<a class="cell st-success mapped" href="/ui/m" title="m" data-state="success" tabindex="-1"><span class="st-success" style="width: 75.00%" data-state="success" data-count="3"></span>`,
		`<tr class="group-row"><th class="task-col"><a href="/ui/dags/d?open=prefix%3A1&amp;x=&lt;" title="100 tasks: open the group">load_* (100)</a></th>`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %s in\n%s", want, got)
		}
	}
	if strings.Contains(got, "<script>") {
		t.Errorf("unescaped: %s", got)
	}
}

// TestLiveRefreshLeavesGraphOut: app.js's live refresh of a big DAG page (X-Poolflow-Live)
// gets the grid, which it updates, without the graph and its list of tasks, which follow the
// run by themselves; the page says it varies with that header, so no cache mixes the two.
func TestLiveRefreshLeavesGraphOut(t *testing.T) {
	b := bigSetup(t)
	full := b.request(t, http.MethodGet, "/ui/dags/warehouse_500", nil, nil)
	live := b.request(t, http.MethodGet, "/ui/dags/warehouse_500", nil, map[string]string{liveHeader: "1"})
	for _, rec := range []*httptest.ResponseRecorder{full, live} {
		if rec.Code != http.StatusOK || !strings.Contains(strings.Join(rec.Header().Values("Vary"), ","), liveHeader) {
			t.Fatalf("%d, Vary %v", rec.Code, rec.Header().Values("Vary"))
		}
	}
	if !strings.Contains(full.Body.String(), `<svg`) || !strings.Contains(full.Body.String(), `id="graph-list"`) {
		t.Error("the page has no graph")
	}
	if strings.Contains(live.Body.String(), `class="graph"`) || strings.Contains(live.Body.String(), `id="graph-list"`) {
		t.Error("the live refresh has the graph")
	}
	if n, m := strings.Count(full.Body.String(), `class="cell `), strings.Count(live.Body.String(), `class="cell `); n == 0 || m != n {
		t.Errorf("grid cells: %d in the page, %d in the live refresh", n, m)
	}
	if live.Body.Len()*2 > full.Body.Len() {
		t.Errorf("live refresh %d bytes, the page %d", live.Body.Len(), full.Body.Len())
	}
}
