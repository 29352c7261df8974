package ui

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/internal/bigdag"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The accessibility audit: axe-core (testdata/axe, vendored for the tests only: the product
// never serves it) run in chromium on the main pages, in the light and the dark theme, against
// WCAG 2.0/2.1 A and AA; a serious or critical violation fails the test. And the tab order of
// the big pages: a 500-task DAG page has a few dozen tab stops, not one per node and grid cell.

//go:embed testdata/axe/axe.min.js
var axeSource string

// axeViolation is one rule axe found broken, with a few of the elements that break it.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
	Count  int      `json:"count"`
}

// audit injects axe into the page (once) and runs it on the whole document.
func audit(t *testing.T, ctx context.Context) []axeViolation {
	t.Helper()
	if !eval[bool](t, ctx, `typeof window.axe === "object"`) {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](axeSource+";true")); err != nil {
			t.Fatalf("inject axe: %v", err)
		}
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`axe.run(document, {
		runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}, resultTypes: ["violations"]})
	  .then(r => JSON.stringify(r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, count: v.nodes.length,
	    nodes: v.nodes.slice(0, 4).map(n => n.target.join(" ") + " :: " + (n.failureSummary || "").replace(/\s+/g, " "))}))))`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("axe: %v", err)
	}
	var vs []axeViolation
	if err := json.Unmarshal([]byte(out), &vs); err != nil {
		t.Fatal(err)
	}
	return vs
}

// tabStops counts the elements sequential keyboard navigation stops at: focusable, not taken
// out of the order (tabindex -1), enabled and rendered (not hidden, not in a closed details).
const tabStops = `[...document.querySelectorAll("a[href], button, input, select, textarea, summary, [tabindex], [contenteditable]")]
  .filter(e => e.tabIndex >= 0 && !e.disabled && !(e.type === "hidden") && !e.closest("[inert]") &&
    !(e.closest("details:not([open])") && !e.matches("details > summary")) &&
    e.getClientRects().length > 0 && getComputedStyle(e).visibility !== "hidden").length`

// TestBrowserAccessibility audits the DAG list, a 500-task DAG's page (grouped and not), run
// pages, the runs list, the pools, notifications and events pages and the sign-in page with
// axe-core in both themes, and counts the tab stops of the big pages.
func TestBrowserAccessibility(t *testing.T) {
	b := setup(t, setupOpts{dags: []*dag.DAG{bigdag.Warehouse("warehouse_500", []string{"true"})}})
	bigRun(t, b, "warehouse_500", "r1")
	for _, id := range []string{"r1", "r2"} {
		b.trigger(t, "diamond", id)
		b.waitRunEnd(t, "diamond", id)
	}
	b.trigger(t, "hold", "h1")
	b.waitAdmitted(t, "hold", "h1", "keep")
	b.trigger(t, "held", "w1")
	b.waiting(t, "held", "w1", "load")
	b.trigger(t, "gate", "g1")
	base := serve(t, b)
	pages := []struct{ name, path, ready string }{
		{"dags", "/ui/", "table.dags"},
		{"dag-500", "/ui/dags/warehouse_500", "svg.graph"},
		{"dag-500-ungrouped", "/ui/dags/warehouse_500?groups=off", "svg.graph"},
		{"dag", "/ui/dags/diamond", "svg.graph"},
		{"run", "/ui/dags/diamond/runs/r1", "h1"},
		{"run-500", "/ui/dags/warehouse_500/runs/r1", "h1"},
		{"runs", "/ui/runs", "h1"},
		{"pools", "/ui/pools", "h1"},
		{"notifications", "/ui/notifications", "h1"},
		{"events", "/ui/events", "h1"},
	}
	for _, theme := range []string{"light", "dark"} {
		for _, p := range pages {
			ctx := tab(t) // a tab each: a tab's bound is 90 s
			setTheme(t, ctx, theme)
			do(t, ctx, chromedp.Navigate(base+p.path))
			waitFor(t, ctx, p.name, `document.readyState === "complete" && document.querySelector(`+jsString(p.ready)+`)`)
			check(t, ctx, p.name, theme)
		}
	}
	// The sign-in page, once a user exists.
	if err := auth.CreateUser(context.Background(), b.st, "test", "otto", "otto's password",
		[]store.Grant{{Role: vocab.RoleOperator}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	ctx := tab(t)
	for _, theme := range []string{"light", "dark"} {
		setTheme(t, ctx, theme)
		do(t, ctx, chromedp.Navigate(base+"/ui/login"))
		waitFor(t, ctx, "the sign-in form", `document.readyState === "complete" && document.querySelector("#login input[name=name]")`)
		check(t, ctx, "sign-in", theme)
	}
	shot(t, ctx, "a11y-signin-dark")
	signIn(t, ctx, base)

	// The tab order of the big pages.
	for _, p := range []struct {
		path string
		max  int
	}{{"/ui/dags/warehouse_500", 120}, {"/ui/dags/warehouse_500?groups=off", 120}, {"/ui/dags/warehouse_500/runs/r1", 60}} {
		ctx := tab(t) // a fresh tab (its bound is 90 s) in the same browser: the session's cookie holds
		do(t, ctx, chromedp.Navigate(base+p.path))
		waitFor(t, ctx, p.path, `document.readyState === "complete" && document.querySelector("h1")`)
		if n := eval[int](t, ctx, tabStops); n > p.max {
			t.Errorf("%s: %d tab stops, want at most %d", p.path, n, p.max)
		} else {
			t.Logf("%s: %d tab stops", p.path, n)
		}
	}
}

// check fails the test on axe's serious and critical violations and logs the others.
func check(t *testing.T, ctx context.Context, page, theme string) {
	t.Helper()
	for _, v := range audit(t, ctx) {
		msg := fmt.Sprintf("%s (%s): %s %q on %d elements, e.g.\n\t%s", page, theme, v.Impact, v.ID+": "+v.Help,
			v.Count, strings.Join(v.Nodes, "\n\t"))
		if v.Impact == "serious" || v.Impact == "critical" {
			t.Error(msg)
		} else {
			t.Log(msg)
		}
	}
}

// setTheme makes the page's prefers-color-scheme light or dark.
func setTheme(t *testing.T, ctx context.Context, theme string) {
	t.Helper()
	do(t, ctx, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: theme}}})
		return chromedp.Void{}, err
	})
}

// signIn signs otto in.
func signIn(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	do(t, ctx, chromedp.Navigate(base+"/ui/login"))
	waitFor(t, ctx, "the sign-in form", `document.querySelector("#login input[name=name]")`)
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#login input[name=name]`), "otto"),
		chromedp.SendKeys(chromedp.CSS(`#login input[name=password]`), "otto's password"),
		chromedp.Submit(chromedp.CSS(`#login`)))
	waitFor(t, ctx, "signed in", `document.querySelector("#whoami")`)
}

func jsString(s string) string { b, _ := json.Marshal(s); return string(b) }
