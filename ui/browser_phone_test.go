package ui

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// nodesOutside lists the graph's nodes not wholly inside the graph's box.
const nodesOutside = `(() => {
	const v = document.getElementById("graph-view").getBoundingClientRect();
	return [...document.querySelectorAll("svg.graph g.node")].filter(g => {
		const r = g.querySelector("rect.box").getBoundingClientRect();
		return r.left < v.left - 0.5 || r.right > v.right + 0.5 || r.top < v.top - 0.5 || r.bottom > v.bottom + 0.5;
	}).map(g => g.dataset.task || g.textContent);
})()`

// TestBrowserDAGPhone: on a 390 px phone a small DAG's graph is fitted on load, every node
// inside the graph's box (it showed the first node or two until Fit was pressed), and the runs
// table under the grid fits the width instead of scrolling sideways past its duration column.
func TestBrowserDAGPhone(t *testing.T) {
	b := setup(t, setupOpts{})
	for _, id := range []string{"scheduled__2026-01-01T00:00:00_first_of_two", "r2"} {
		b.trigger(t, "diamond", id)
		b.waitRunEnd(t, "diamond", id)
	}
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/ui/dags/diamond"))
	waitFor(t, ctx, "the graph", `document.getElementById("graph-view") && document.getElementById("graph-view").dataset.zoom`)
	outside := eval[[]string](t, ctx, nodesOutside)
	if n := eval[int](t, ctx, `document.querySelectorAll("svg.graph g.node").length`); n != 4 || len(outside) > 0 {
		t.Errorf("%d nodes drawn; outside the graph's box on load: %v", n, outside)
	}
	shot(t, ctx, "dag-phone-diamond")
	do(t, ctx, chromedp.ScrollIntoView(chromedp.CSS(`table.list.runs`)))
	shot(t, ctx, "dag-phone-diamond-runs")
	if w := eval[[]int](t, ctx, `(() => { const s = document.querySelector("table.list.runs").parentElement; return [s.scrollWidth, s.clientWidth]; })()`); w[0] > w[1] {
		t.Errorf("the runs table is %d px wide in a %d px box: it scrolls sideways", w[0], w[1])
	}
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the DAG page is %d px wide on a 390 px phone", w)
	}
	// The runs list too.
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/diamond/runs"))
	waitFor(t, ctx, "the runs list", `document.readyState === "complete" && document.querySelector("h1")`)
	shot(t, ctx, "runs-phone")
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the runs list is %d px wide on a 390 px phone", w)
	}
}
