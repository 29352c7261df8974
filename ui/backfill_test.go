package ui

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

const hourlyDAG = `schedule: '@hourly'
tasks:
  - {id: extract, command: ["true"]}
  - {id: load, depends_on: [extract], command: ["true"]}
`

// withHourly adds an hourly DAG to the bundle's folder and waits for the daemon to load it.
func withHourly(t *testing.T, b *bundle) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(b.dir, "dags", "hourly.yaml"), []byte(hourlyDAG), 0o644); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(30 * time.Second)
	for {
		dags, _ := b.daemon.DAGs()
		for _, d := range dags {
			if d.ID == "hourly" {
				return
			}
		}
		select {
		case <-b.notices:
		case <-timeout:
			t.Fatal("dag hourly not loaded")
		}
	}
}

// TestBackfillPages: the DAG page offers the backfill form only for a scheduled DAG; a bad
// range is refused in words; the backfill page shows its progress and dates.
func TestBackfillPages(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	withHourly(t, b)
	if html := b.page(t, http.StatusOK, "/ui/dags/quick"); strings.Contains(html, "backfill-form") {
		t.Error("a DAG without a schedule offers a backfill")
	}
	if html := b.page(t, http.StatusOK, "/ui/dags/hourly"); !strings.Contains(html, `id="backfill-form"`) {
		t.Error("the hourly DAG has no backfill form")
	}
	rec := b.request(t, http.MethodPost, "/ui/dags/hourly/backfill", map[string][]string{"from": {"2026-01-02T00:00"},
		"to": {"2026-01-01T00:00"}}, nil)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "is before from_date") {
		t.Errorf("a bad range: %d %s", rec.Code, rec.Body.String())
	}
	rec = b.request(t, http.MethodPost, "/ui/dags/hourly/backfill", map[string][]string{"from": {"2026-01-01T00:00"},
		"to": {"2026-01-01T02:00"}, "confirm": {"1"}, "max_active_runs": {"2"}}, nil)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/ui/backfills/1" {
		t.Fatalf("create: %d %s", rec.Code, rec.Body.String())
	}
	html := b.page(t, http.StatusOK, "/ui/backfills/1")
	for _, want := range []string{"Backfill 1 of hourly", `svg xmlns="http://www.w3.org/2000/svg" class="progress"`, "Max active runs",
		`data-count="left"`} {
		if !strings.Contains(html, want) {
			t.Errorf("the backfill page lacks %q", want)
		}
	}
	b.page(t, http.StatusNotFound, "/ui/backfills/99")
}

// TestBrowserBackfill: the form's preview is the dry run (runs to create, its dates); starting
// it goes to the backfill page, whose progress bar and counts fill as its runs end; the DAG
// page then lists it.
func TestBrowserBackfill(t *testing.T) {
	b := setup(t, setupOpts{})
	withHourly(t, b)
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/hourly"))
	waitFor(t, ctx, "the backfill form", `document.querySelector("#backfill-form")`)
	do(t, ctx,
		chromedp.SetValue(chromedp.CSS(`#backfill-form input[name=from]`), "2026-01-01T00:00"),
		chromedp.SetValue(chromedp.CSS(`#backfill-form input[name=to]`), "2026-01-01T05:00"),
		chromedp.SetValue(chromedp.CSS(`#backfill-form input[name=max_active_runs]`), "2"))
	shot(t, ctx, "backfill-form")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#backfill-form button[type=submit]`)))
	waitFor(t, ctx, "the preview", `document.querySelector("dialog#confirm-dialog[open] .backfill-plan")`)
	preview := eval[string](t, ctx, `document.querySelector("dialog#confirm-dialog").innerText`)
	for _, w := range []string{"Backfill 6 dates of hourly?", "6 runs to create, 0 to clear, 0 to skip"} {
		if !strings.Contains(preview, w) {
			t.Errorf("the preview does not say %q:\n%s", w, preview)
		}
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("dialog#confirm-dialog tr[data-action=created]").length`); n != 6 {
		t.Errorf("the preview lists %d dates to create, want 6", n)
	}
	shot(t, ctx, "backfill-preview")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#dialog-confirm`)))
	waitFor(t, ctx, "the backfill page", `location.pathname === "/ui/backfills/1"`)
	waitFor(t, ctx, "every date done", `document.querySelector("[data-count=done] b") &&
		document.querySelector("[data-count=done] b").innerText === "6"`)
	if n := eval[int](t, ctx, `document.querySelectorAll("svg.progress rect.seg.st-success").length`); n != 1 {
		t.Errorf("%d done segments in the bar", n)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("table.backfill-dates .badge.st-success").length`); n != 6 {
		t.Errorf("%d successful runs listed, want 6", n)
	}
	shot(t, ctx, "backfill-done")
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/hourly"))
	waitFor(t, ctx, "the DAG's backfills", `document.querySelector("li[data-backfill='1'] svg.progress")`)
	shot(t, ctx, "backfill-dag-page")
}
