package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/internal/bigdag"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

func TestPrefixOf(t *testing.T) {
	for id, want := range map[string]string{
		"extract_table_042": "extract_table_", "mart_7": "mart_", "stage_3_extract": "stage_3_",
		"start": "", "a.b.c": "a.b.", "load-": "",
	} {
		if got := prefixOf(id); got != want {
			t.Errorf("prefixOf(%q) = %q, want %q", id, got, want)
		}
	}
}

// TestViewNodes: tasks of one layer sharing a prefix become a group, long one-to-one chains a
// chain node, opened groups are drawn task by task, and the collapsed picture has no cycle.
func TestViewNodes(t *testing.T) {
	d := bigdag.Warehouse("big", []string{"true"})
	nodes := viewNodes(d, true, nil)
	kinds := map[string]int{}
	members := 0
	for _, n := range nodes {
		kinds[n.Kind]++
		members += len(n.Members)
	}
	if members != 500 {
		t.Errorf("groups hold %d tasks, want 500", members)
	}
	// extract, clean, load, check and mart groups; start, publish, notify, archive alone.
	if kinds["prefix"] != 5 || kinds["task"] != 4 || len(nodes) != 9 {
		t.Errorf("collapsed: %v in %d nodes", kinds, len(nodes))
	}
	if ls := vlayers(nodes); len(ls) != 8 {
		t.Errorf("collapsed picture has %d layers, want 8", len(ls))
	}
	open := viewNodes(d, true, map[string]bool{"prefix:3:load_table_": true})
	if len(open) != 9-1+100 {
		t.Errorf("with load_table_ open: %d nodes, want 108", len(open))
	}
	if all := viewNodes(d, false, nil); len(all) != 500 {
		t.Errorf("uncollapsed: %d nodes", len(all))
	}

	// A chain: a → b → c → d → e with no siblings to group, between two tasks.
	c := dag.New("chain")
	c.Command("first", []string{"true"})
	prev := "first"
	for _, id := range []string{"fetch", "unpack", "verify", "index", "publish"} {
		c.Command(id, []string{"true"}, dag.After(prev))
		prev = id
	}
	c.Command("side", []string{"true"}, dag.After("first"))
	c.Command("last", []string{"true"}, dag.After("publish", "side"))
	got := viewNodes(c, true, nil)
	var chain *vnode
	for _, n := range got {
		if n.Kind == "chain" {
			chain = n
		}
	}
	if chain == nil || len(chain.Members) != 5 || chain.Label != "fetch → … → publish" || len(got) != 4 {
		t.Fatalf("chain not collapsed: %+v (%d nodes)", chain, len(got))
	}
	for _, n := range got {
		if n.ID == "last" && strings.Join(n.Deps, ",") != "chain:fetch,side" {
			t.Errorf("last depends on %v, want the chain and side", n.Deps)
		}
	}
	if len(viewNodes(c, true, map[string]bool{"chain:fetch": true})) != 8 {
		t.Errorf("an opened chain is not drawn task by task")
	}
}

// bigRun writes a finished run of the 500-task DAG with a mix of task states.
func bigRun(t testing.TB, b *bundle, dagID, runID string) {
	t.Helper()
	states := []vocab.TaskState{vocab.TaskSuccess, vocab.TaskSuccess, vocab.TaskSuccess, vocab.TaskFailed,
		vocab.TaskUpstreamFailed, vocab.TaskSkipped}
	d := bigdag.Warehouse(dagID, []string{"true"})
	err := b.st.WithTx(context.Background(), func(tx store.Tx) error {
		at := time.Now().UTC().Add(-time.Hour)
		run := store.Run{DAGID: dagID, RunID: runID, RunType: vocab.RunManual, LogicalDate: at, State: vocab.RunFailed,
			QueuedAt: at, StartDate: at, EndDate: at.Add(time.Minute)}
		if err := tx.InsertRun(&run); err != nil {
			return err
		}
		for i, task := range d.Tasks {
			ti := store.TaskInstance{Run: run.PK, TaskID: task.ID, State: states[i%len(states)], TryNumber: 1,
				StartDate: at, EndDate: at.Add(time.Second)}
			if err := tx.InsertTI(&ti); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func bigSetup(t testing.TB) *bundle {
	b := setup(t, setupOpts{dags: []*dag.DAG{bigdag.Warehouse("warehouse_500", []string{"true"})}})
	bigRun(t, b, "warehouse_500", "r1")
	return b
}

// TestBigDAGPage: the 500-task DAG page draws groups with their counts, one grid row per
// group, and every task in the list; ?groups=off draws every task.
func TestBigDAGPage(t *testing.T) {
	b := bigSetup(t)
	body := b.page(t, http.StatusOK, "/ui/dags/warehouse_500")
	if n := strings.Count(body, `class="node group`); n != 5 {
		t.Errorf("%d group nodes, want 5", n)
	}
	if !strings.Contains(body, "load_table_* (100)") {
		t.Errorf("no load_table_ group label")
	}
	if n := strings.Count(body, `<li data-task=`); n != 500 {
		t.Errorf("the list has %d tasks, want 500", n)
	}
	if n := strings.Count(body, `class="group-row"`); n != 5 {
		t.Errorf("the grid has %d group rows, want 5", n)
	}
	body = b.page(t, http.StatusOK, "/ui/dags/warehouse_500?groups=off")
	if n := strings.Count(body, `<g class="node `); n != 500 {
		t.Errorf("ungrouped: %d nodes, want 500", n)
	}
	if !strings.Contains(body, `<title>extract_table_042: `) {
		t.Errorf("a node's link has no accessible name with its full task id")
	}
}

// graphCheck is the JavaScript that reports whether the node of task is outlined, inside the
// graph's box, and its name drawn at least 11 px tall.
func graphCheck(task string) string {
	return fmt.Sprintf(`(() => {
		const g = document.querySelector('svg.graph g.node.hit[data-task=%q]');
		// Opening a group navigates: the next page may be read while its tools are not parsed yet.
		const search = document.getElementById("graph-search"), found = document.getElementById("graph-found");
		if (!search || !found) return "the page is loading";
		if (!g) return "not outlined; search " + JSON.stringify(search.value) + " says " + found.textContent;
		const v = document.getElementById("graph-view").getBoundingClientRect();
		const r = g.querySelector("rect.box").getBoundingClientRect();
		if (r.left < v.left || r.right > v.right || r.top < v.top || r.bottom > v.bottom) return "outside the box: " + JSON.stringify([r, v]);
		const text = g.querySelector("text.name");
		const px = parseFloat(getComputedStyle(text).fontSize) * text.getScreenCTM().a;
		if (px < 11) return "text " + px + " px";
		return "ok";
	})()`, task)
}

// TestBrowserBigGraph: zoom and search on a 500-task graph: the searched node is in the box and
// its text at least 11 px; a task in a closed group opens the group.
func TestBrowserBigGraph(t *testing.T) {
	b := bigSetup(t)
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/warehouse_500"))
	waitFor(t, ctx, "the graph's tools", `!document.getElementById("graph-tools").hidden && document.getElementById("graph-view").dataset.zoom`)
	shot(t, ctx, "graph-500-grouped")
	shotOf(t, ctx, "#graph-live", "graph-500-grouped-card")

	// A task inside the closed load_table_ group.
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#graph-search`), "load_table_042"),
		chromedp.Click(chromedp.CSS(`#graph-find button[type=submit]`)))
	waitOK(t, ctx, "the group opened and the task outlined", graphCheck("load_table_042"))
	if !strings.Contains(eval[string](t, ctx, `location.search`), "open=prefix") {
		t.Errorf("the group was not opened")
	}
	shotOf(t, ctx, "#graph-live", "graph-500-found")

	// Every task drawn: zoom out with the buttons, the wheel and the keyboard, then find one.
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/warehouse_500?groups=off"))
	waitFor(t, ctx, "500 nodes", `document.querySelectorAll("svg.graph g.node").length === 500 && document.getElementById("graph-view").dataset.zoom`)
	zoom := func() float64 { return eval[float64](t, ctx, `+document.getElementById("graph-view").dataset.zoom`) }
	k0 := zoom()
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-zoom=out]`)))
	if k := zoom(); k >= k0 {
		t.Errorf("zoom out: %v → %v", k0, k)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(`[data-zoom=fit]`)))
	kFit := zoom()
	eval[bool](t, ctx, `document.getElementById("graph-view").dispatchEvent(new WheelEvent("wheel", {deltaY: -300, clientX: 300, clientY: 500, bubbles: true, cancelable: true}))`)
	if k := zoom(); k <= kFit {
		t.Errorf("the wheel did not zoom in: %v → %v", kFit, k)
	}
	do(t, ctx, chromedp.Focus(chromedp.CSS(`#graph-view`)), chromedp.KeyEvent("0"))
	if k := zoom(); k != kFit {
		t.Errorf("the 0 key did not fit: %v, want %v", k, kFit)
	}
	do(t, ctx, chromedp.KeyEvent("+"))
	if k := zoom(); k <= kFit {
		t.Errorf("the + key did not zoom in")
	}
	shotOf(t, ctx, "#graph-live", "graph-500-all")
	do(t, ctx, chromedp.KeyEvent("/"), chromedp.SendKeys(chromedp.CSS(`#graph-search`), "mart_77"),
		chromedp.Click(chromedp.CSS(`#graph-find button[type=submit]`)))
	waitOK(t, ctx, "mart_77 outlined and readable", graphCheck("mart_77"))
	if got := eval[string](t, ctx, `document.getElementById("graph-found").textContent`); !strings.HasPrefix(got, "mart_77") {
		t.Errorf("the search says %q", got)
	}
	shotOf(t, ctx, "#graph-live", "graph-500-search")
	do(t, ctx, chromedp.EmulateViewport(390, 844))
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/warehouse_500"))
	waitFor(t, ctx, "the graph", `document.getElementById("graph-view").dataset.zoom`)
	// Its 9 nodes (groups and chains) are fitted on load: the shape and its colours at a glance.
	if outside := eval[[]string](t, ctx, nodesOutside); len(outside) > 0 {
		t.Errorf("on a phone, nodes outside the graph's box on load: %v", outside)
	}
	shot(t, ctx, "graph-500-phone")
}

// shotOf saves a screenshot of one element (the graph's card) named name.png.
func shotOf(t *testing.T, ctx context.Context, sel, name string) {
	t.Helper()
	dir := os.Getenv("POOLFLOW_UI_SHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitOK waits for a JavaScript check to answer "ok", and says what it answered last if not.
func waitOK(t *testing.T, ctx context.Context, what, check string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		_, err = chromedp.Run(ctx, chromedp.Poll[bool](check+` === "ok"`, chromedp.WithPollingMutation(),
			chromedp.WithPollingTimeout(time.Until(deadline))))
		if err == nil || !strings.Contains(err.Error(), "(-32000)") || ctx.Err() != nil {
			break // -32000: a navigation under the poll; poll again in the new page
		}
	}
	if err != nil {
		last, _ := chromedp.Run(ctx, chromedp.Evaluate[string](check))
		t.Fatalf("waiting for %s: %v; last: %s", what, err, last)
	}
}

// TestRunStatesJSON: the graph's live view reads each task's state and try, and the run's.
func TestRunStatesJSON(t *testing.T) {
	b := bigSetup(t)
	rec := b.request(t, http.MethodGet, "/ui/dags/warehouse_500/runs/r1/states", nil, map[string]string{"Accept-Encoding": "gzip"})
	if rec.Code != http.StatusOK || rec.Header().Get("ETag") == "" {
		t.Fatalf("states: %d %v", rec.Code, rec.Header())
	}
	if rec.Body.Len() > 4000 {
		t.Errorf("states of 500 tasks: %d bytes gzipped, want under 4 KB", rec.Body.Len())
	}
	var got runStates
	if err := json.Unmarshal([]byte(b.page(t, http.StatusOK, "/ui/dags/warehouse_500/runs/r1/states")), &got); err != nil {
		t.Fatal(err)
	}
	if got.Run != "failed" || got.Open || len(got.Tasks) != 500 || got.Tasks["load_table_000"][0] != "failed" {
		t.Errorf("states: run %s open %v, %d tasks, load_table_000 %v", got.Run, got.Open, len(got.Tasks), got.Tasks["load_table_000"])
	}
	b.page(t, http.StatusNotFound, "/ui/dags/warehouse_500/runs/nope/states")
}

// BenchmarkBigDAGPage renders the 500-task DAG's page with 25 runs in its grid.
func BenchmarkBigDAGPage(b *testing.B) {
	bd := bigSetup(b)
	for i := 1; i < gridRuns; i++ {
		bigRun(b, bd, "warehouse_500", fmt.Sprintf("r%02d", i+1))
	}
	for b.Loop() {
		rec := httptest.NewRecorder()
		bd.srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ui/dags/warehouse_500", nil))
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
}
