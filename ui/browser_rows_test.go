package ui

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	keys "github.com/chromedp/chromedp/kb"
)

// TestBrowserRunTaskKeys: the 500-task run page has one tab stop for its task list, not one a
// row (it had 523 in all): Tab reaches the first task, the arrow keys, Page Down and End go
// from task to task, and the stop follows, so Tab out and Shift+Tab back return to it.
func TestBrowserRunTaskKeys(t *testing.T) {
	b := bigSetup(t)
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/warehouse_500/runs/r1"))
	waitFor(t, ctx, "the run page", `document.readyState === "complete" && document.querySelector("#run-tasks a[data-row]")`)
	if n := eval[int](t, ctx, tabStops); n >= 60 {
		t.Errorf("the 500-task run page has %d tab stops, want under 60", n)
	} else {
		t.Logf("%d tab stops", n)
	}
	focused := `document.activeElement.closest("tr") ? document.activeElement.closest("tr").dataset.task : document.activeElement.tagName`
	rows := eval[[]string](t, ctx, `[...document.querySelectorAll("#run-tasks a[data-row]")].map(a => a.textContent)`)
	if len(rows) != 500 {
		t.Fatalf("%d task rows", len(rows))
	}
	stop := `[...document.querySelectorAll("#run-tasks a[data-row]")].filter(a => a.tabIndex >= 0).map(a => a.textContent).join()`
	if got := eval[string](t, ctx, stop); got != rows[0] {
		t.Fatalf("the task list's tab stop is %q, want the first task %s", got, rows[0])
	}
	do(t, ctx, chromedp.Focus(chromedp.CSS(`#run-tasks a[data-row]`)))
	for _, k := range []struct {
		key  string
		want string
	}{{keys.ArrowDown, rows[1]}, {keys.ArrowDown, rows[2]}, {keys.ArrowUp, rows[1]}, {keys.PageDown, rows[11]},
		{keys.End, rows[499]}, {keys.ArrowDown, rows[499]}, {keys.Home, rows[0]}, {keys.PageDown, rows[10]}} {
		do(t, ctx, chromedp.KeyEvent(k.key))
		if got := eval[string](t, ctx, focused); got != k.want {
			t.Fatalf("after %q the focus is on %s, want %s", k.key, got, k.want)
		}
		if got := eval[string](t, ctx, stop); got != k.want {
			t.Fatalf("after %q the tab stop is %q, want only %s", k.key, got, k.want)
		}
	}
	// Out with Tab and back with Shift+Tab: the stop is where the reader left it.
	do(t, ctx, chromedp.KeyEvent(keys.Tab))
	if got := eval[string](t, ctx, focused); got == rows[10] {
		t.Fatalf("Tab did not leave the task list")
	}
	do(t, ctx, chromedp.KeyEvent(keys.Tab, chromedp.KeyModifiers(chromedp.ModifierShift)))
	if got := eval[string](t, ctx, focused); got != rows[10] {
		t.Errorf("Shift+Tab came back to %s, want %s", got, rows[10])
	}
	eval[bool](t, ctx, `window.scrollTo(0, 0), true`)
	shotView(t, ctx, "run-500-top")
}

// shotView saves a screenshot of what the window shows (a 500-task page is 20,000 px long).
func shotView(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("POOLFLOW_UI_SHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRunPageStateFilter: the run page's task counts are links that narrow its task list to
// one state (the 83 failed of 500 without scrolling past the rest), and back to all.
func TestRunPageStateFilter(t *testing.T) {
	b := bigSetup(t) // r1: of 500 tasks, every sixth failed (83), …
	rows := func(body string) int {
		i := strings.Index(body, `id="run-tasks"`)
		if i < 0 {
			t.Fatal("no task list")
		}
		return strings.Count(body[i:], "<tr data-task=")
	}
	all := b.page(t, http.StatusOK, "/ui/dags/warehouse_500/runs/r1")
	if n := rows(all); n != 500 {
		t.Errorf("%d rows, want 500", n)
	}
	if !strings.Contains(all, `href="/ui/dags/warehouse_500/runs/r1?state=failed#tasks-title"`) {
		t.Errorf("no link to the failed tasks")
	}
	failed := b.page(t, http.StatusOK, "/ui/dags/warehouse_500/runs/r1?state=failed")
	if n := rows(failed); n != 83 || strings.Count(failed, `data-state="success"`) > 0 {
		t.Errorf("?state=failed: %d rows, want the 83 failed", n)
	}
	for _, want := range []string{"· 83 failed of 500", `id="tasks-all"`, `aria-current="true"`} {
		if !strings.Contains(failed, want) {
			t.Errorf("?state=failed: no %q", want)
		}
	}
	if n := rows(b.page(t, http.StatusOK, "/ui/dags/warehouse_500/runs/r1?state=nope")); n != 500 {
		t.Errorf("?state=nope: %d rows, want every task", n)
	}
}
