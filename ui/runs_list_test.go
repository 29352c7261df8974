package ui

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// TestRunsList: the runs list pages through every run and filters by state, type, logical
// date and text; bad filters are a 400 naming the field.
func TestRunsList(t *testing.T) {
	b := setup(t, setupOpts{})
	fill(t, b, 120) // bench_00000 … bench_00119, every 7th failed
	for _, c := range []struct {
		path    string
		want    []string // rows that must be there
		notWant []string
		total   string
	}{
		{"/ui/dags/diamond/runs", []string{"bench_00119", "bench_00070"}, []string{"bench_00069"}, "1–50 of 120 runs"},
		{"/ui/dags/diamond/runs?offset=100", []string{"bench_00019", "bench_00000"}, []string{"bench_00020"}, "101–120 of 120 runs"},
		{"/ui/runs?state=failed", []string{"bench_00119", "bench_00000"}, []string{"bench_00118"}, "1–18 of 18 runs"},
		{"/ui/runs?q=BENCH_0011", []string{"bench_00110", "bench_00119"}, []string{"bench_00109"}, "1–10 of 10 runs"},
		{"/ui/runs?type=backfill", nil, []string{"bench_00119"}, "No runs"},
		{"/ui/runs?type=manual&state=success&q=bench_0000", []string{"bench_00001"}, []string{"bench_00000", "bench_00007"}, "1–8 of 8 runs"},
	} {
		body := b.page(t, http.StatusOK, c.path)
		for _, w := range c.want {
			if !strings.Contains(body, `data-run="`+w+`"`) {
				t.Errorf("%s: no row %s", c.path, w)
			}
		}
		for _, w := range c.notWant {
			if strings.Contains(body, `data-run="`+w+`"`) {
				t.Errorf("%s: row %s should not be there", c.path, w)
			}
		}
		if !strings.Contains(body, c.total) {
			t.Errorf("%s: no %q", c.path, c.total)
		}
	}
	// Logical dates: fill spaces runs 3 s apart, ending now.
	runs, _, err := b.st.ListRuns(context.Background(), "diamond", 200, 0)
	if err != nil {
		t.Fatal(err)
	}
	from := runs[9].LogicalDate.UTC().Format(time.RFC3339Nano) // the 10 newest
	if body := b.page(t, http.StatusOK, "/ui/runs?from="+from); !strings.Contains(body, "1–10 of 10 runs") {
		t.Errorf("from %s: not the 10 newest", from)
	}
	for path, field := range map[string]string{
		"/ui/runs?state=nope": "state:", "/ui/runs?type=weekly": "type:", "/ui/runs?from=yesterday": "from:",
	} {
		if body := b.page(t, http.StatusBadRequest, path); !strings.Contains(body, field) {
			t.Errorf("%s: no error naming %s", path, field)
		}
	}
	b.page(t, http.StatusNotFound, "/ui/dags/nope/runs")
	// The API answers the same filter.
	if body := b.page(t, http.StatusOK, "/api/v1/dags/~/dagRuns?q=bench_0011&limit=100"); !strings.Contains(strings.ReplaceAll(body, " ", ""), `"total_entries":10`) {
		t.Errorf("API q filter: %s", body[:min(len(body), 300)])
	}
}

// TestDAGPageRuns: the grid pages through older runs, and the graph shows the newest run that
// has started unless the picker chose another.
func TestDAGPageRuns(t *testing.T) {
	b := setup(t, setupOpts{})
	fill(t, b, 60)
	// The newest run is only queued: the graph must not default to it.
	err := b.st.WithTx(context.Background(), func(tx store.Tx) error {
		at := time.Now().UTC()
		return tx.InsertRun(&store.Run{DAGID: "diamond", RunID: "queued_only", RunType: "manual", LogicalDate: at,
			State: "queued", QueuedAt: at})
	})
	if err != nil {
		t.Fatal(err)
	}
	body := b.page(t, http.StatusOK, "/ui/dags/diamond")
	if !strings.Contains(body, `<option value="bench_00059" selected>`) || !strings.Contains(body, `<option value="queued_only">`) {
		t.Errorf("the picker does not default to the newest started run")
	}
	if !strings.Contains(body, `id="grid-older"`) || strings.Contains(body, `data-run="bench_00010"`) {
		t.Errorf("the first window of the grid is wrong")
	}
	body = b.page(t, http.StatusOK, "/ui/dags/diamond?grid=50")
	if !strings.Contains(body, `data-run="bench_00000"`) || !strings.Contains(body, `id="grid-newer"`) || strings.Contains(body, `id="grid-older"`) {
		t.Errorf("the oldest window of the grid does not show bench_00000")
	}
	if !strings.Contains(body, `<option value="bench_00059" selected>`) {
		t.Errorf("an older window's graph should still show the newest started run")
	}
	body = b.page(t, http.StatusOK, "/ui/dags/diamond?run=bench_00003")
	if !strings.Contains(body, `<option value="bench_00003" selected>`) || !strings.Contains(body, `>bench_00003</a>`) {
		t.Errorf("?run= does not choose the graph's run")
	}
}

// TestConditionalPages: pages and API reads come gzipped with an ETag, and a repeat with
// If-None-Match is a 304.
func TestConditionalPages(t *testing.T) {
	b := setup(t, setupOpts{})
	fill(t, b, 30)
	for _, path := range []string{"/ui/dags/diamond/runs/bench_00001", "/api/v1/dags/diamond/dagRuns", "/ui/static/app.js"} {
		rec := b.request(t, http.MethodGet, path, nil, map[string]string{"Accept-Encoding": "gzip"})
		etag := rec.Header().Get("ETag")
		if rec.Code != 200 || rec.Header().Get("Content-Encoding") != "gzip" || etag == "" {
			t.Fatalf("%s: %d %v", path, rec.Code, rec.Header())
		}
		zr, err := gzip.NewReader(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		if raw, _ := io.ReadAll(zr); len(raw) < 1024 {
			t.Errorf("%s: %d bytes after gunzip", path, len(raw))
		}
		again := b.request(t, http.MethodGet, path, nil, map[string]string{"Accept-Encoding": "gzip", "If-None-Match": etag})
		if again.Code != http.StatusNotModified || again.Body.Len() != 0 {
			t.Errorf("%s with If-None-Match: %d, %d bytes", path, again.Code, again.Body.Len())
		}
	}
}

// TestBrowserRunsList: the 300th run is reachable from the runs list by paging.
func TestBrowserRunsList(t *testing.T) {
	b := setup(t, setupOpts{})
	fill(t, b, 300)
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/diamond"))
	waitFor(t, ctx, "the DAG page", `document.querySelector("#all-runs")`)
	do(t, ctx, chromedp.Click(chromedp.CSS("#all-runs")))
	waitFor(t, ctx, "the runs list", `document.querySelector("#runs-table tr[data-run=bench_00299]")`)
	shot(t, ctx, "runs")
	for page := 1; page < 6; page++ {
		do(t, ctx, chromedp.Click(chromedp.CSS("#runs-older")))
		waitFor(t, ctx, "the next page", fmt.Sprintf(`document.querySelector("#runs-table tr[data-run=bench_%05d]")`, 299-page*50))
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(`#runs-table tr[data-run=bench_00000] a`)))
	waitFor(t, ctx, "the 300th run's page", `location.pathname.endsWith("/runs/bench_00000")`)

	// The filter form narrows the list.
	do(t, ctx, chromedp.Navigate(base+"/ui/runs"),
		chromedp.SendKeys(chromedp.CSS(`#runs-filter input[name=q]`), "bench_0029"),
		chromedp.Click(chromedp.CSS(`#runs-filter input[value=failed]`)),
		chromedp.Click(chromedp.CSS(`#runs-filter button[type=submit]`)))
	waitFor(t, ctx, "the filtered list (bench_00294 alone)", `document.querySelectorAll("#runs-table tbody tr").length === 1 && document.querySelector("#runs-table tr[data-run=bench_00294]")`)
	shot(t, ctx, "runs-filtered")
	do(t, ctx, chromedp.EmulateViewport(390, 844))
	do(t, ctx, chromedp.Navigate(base+"/ui/runs"))
	waitFor(t, ctx, "the runs list", `document.querySelector("#runs-table")`)
	shot(t, ctx, "runs-all-phone")
	// Across DAGs the list has a DAG column: it still fits, the logical date hidden as the
	// start time is (the run id usually says it).
	if w := eval[[]int](t, ctx, `(() => { const s = document.querySelector("#runs-table").parentElement; return [s.scrollWidth, s.clientWidth]; })()`); w[0] > w[1] {
		t.Errorf("the runs list across DAGs is %d px wide in a %d px box on a phone: it scrolls sideways", w[0], w[1])
	}
}

// TestRunsCountBound: past a thousand runs the lists stop counting ("1,000+ runs"), so that a
// page costs the same at 100,000 runs as at 1,000; the pages themselves are unchanged, the
// oldest page is still one link away (offset=last counts them all), and a filter that selects
// fewer is counted exactly.
func TestRunsCountBound(t *testing.T) {
	b := setup(t, setupOpts{})
	fillLight(t, b, 2300) // bench_000000 … bench_002299, every 7th failed
	for _, c := range []struct {
		path, want, notWant string
	}{
		{"/ui/dags/diamond/runs", "1–50 of 1,000+ runs", "page 1 of"},
		{"/ui/dags/diamond/runs", `href="/ui/dags/diamond/runs?offset=last"`, ""},
		{"/ui/dags/diamond/runs?offset=1000", "1001–1050 of 2,000+ runs", ""},
		{"/ui/dags/diamond/runs?offset=1000", `data-run="bench_001299"`, `data-run="bench_001300"`},
		{"/ui/dags/diamond/runs?offset=last", "2251–2300 of 2,300 runs", "+ runs"},
		{"/ui/dags/diamond/runs?offset=last", `data-run="bench_000000"`, `data-run="bench_000050"`},
		{"/ui/runs?state=failed", "1–50 of 329 runs", "+ runs"},
		{"/ui/dags/diamond", "all 1,000+ runs", ""},
		{"/ui/dags/diamond", "the last 25 runs of 1,000+", ""},
		{"/ui/dags/diamond?grid=1500", "runs 1501–1525 from the newest of 2,000+", ""},
		{"/ui/dags/diamond?grid=2275", "runs 2276–2300 from the newest of 2,300,", `id="grid-older"`},
	} {
		body := b.page(t, http.StatusOK, c.path)
		if !strings.Contains(body, c.want) {
			i := strings.Index(body, "list-title")
			t.Errorf("%s: no %q in %s", c.path, c.want, body[max(i, 0):max(i, 0)+200])
		}
		if c.notWant != "" && strings.Contains(body, c.notWant) {
			t.Errorf("%s: %q should not be there", c.path, c.notWant)
		}
	}
}

// TestEventsCountBound: a DAG's events card stops counting at a thousand ("the 8 newest of
// 1,000+"), the DAG page's cost not growing with the DAG's history; fewer are counted exactly.
func TestEventsCountBound(t *testing.T) {
	b := setup(t, setupOpts{})
	add := func(dagID string, n int) {
		err := b.st.WithTx(context.Background(), func(tx store.Tx) error {
			for i := range n {
				run := fmt.Sprintf("m%05d", i)
				if err := tx.InsertEvent(&store.Event{At: time.Now().Add(-time.Duration(n-i) * time.Second), Actor: "cli:ann@host",
					Action: vocab.ActionTrigger, DAGID: dagID, RunID: run}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	add("diamond", 1005)
	add("hold", 12)
	if body := b.page(t, http.StatusOK, "/ui/dags/diamond"); !strings.Contains(body, "the 8 newest of 1,000+") {
		t.Errorf("diamond: no \"the 8 newest of 1,000+\"")
	}
	if body := b.page(t, http.StatusOK, "/ui/dags/hold"); !strings.Contains(body, "the 8 newest of 12 ") {
		t.Errorf("hold: no \"the 8 newest of 12\"")
	}
}
