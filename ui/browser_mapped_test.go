package ui

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserMapped: a mapped task is one node of the graph with its instances' counts and a bar
// of their states, one row of the grid whose cell is that bar, and its task page lists its
// instances, each linking to its own page (§14).
func TestBrowserMapped(t *testing.T) {
	b := setup(t, setupOpts{})
	b.trigger(t, "mapped", "m1")
	if st := b.waitRunEnd(t, "mapped", "m1"); st != "success" {
		t.Fatalf("run ended %s, want success (its leaf runs after all_done)", st)
	}
	base := serve(t, b)
	ctx := tab(t)

	do(t, ctx, chromedp.Navigate(base+"/ui/dags/mapped?run=m1"))
	waitFor(t, ctx, "the graph", `document.querySelector("svg.graph g.node[data-task=each]")`)
	if n := eval[int](t, ctx, `document.querySelectorAll("svg.graph g.node").length`); n != 2 {
		t.Errorf("graph: %d nodes, want 2 (the instances are inside their task's)", n)
	}
	bar := eval[string](t, ctx, `[...document.querySelectorAll("svg.graph g.node[data-task=each] rect.mbar")].map(r => r.dataset.state + ":" + r.dataset.count).join(" ")`)
	if bar != "success:4 failed:1" {
		t.Errorf("graph node bar %q", bar)
	}
	if sub := eval[string](t, ctx, `document.querySelector("svg.graph g.node[data-task=each]").textContent`); !strings.Contains(sub, "5 mapped · 4 done") {
		t.Errorf("graph node text %q", sub)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("table.grid tbody tr").length`); n != 2 {
		t.Errorf("grid: %d rows, want 2", n)
	}
	cell := eval[string](t, ctx, `[...document.querySelectorAll("table.grid a.cell.mapped span")].map(s => s.dataset.state + ":" + s.dataset.count).join(" ")`)
	if cell != "success:4 failed:1" {
		t.Errorf("grid cell bar %q", cell)
	}
	shot(t, ctx, "mapped-dag")

	do(t, ctx, chromedp.Navigate(base+"/ui/dags/mapped/runs/m1/tasks/each"))
	waitFor(t, ctx, "the instances", `document.querySelector("#instances")`)
	rows := eval[string](t, ctx, `[...document.querySelectorAll("#instances tbody tr")].map(r => r.dataset.task + "=" + r.dataset.state).join(" ")`)
	if rows != "each[0]=success each[1]=success each[2]=failed each[3]=success each[4]=success" {
		t.Errorf("instances %q", rows)
	}
	if c := eval[string](t, ctx, `document.querySelector("#instance-counts").textContent`); !strings.Contains(c, "5 instances") {
		t.Errorf("counts %q", c)
	}
	shot(t, ctx, "mapped-task")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#instances tr[data-task="each[2]"] a`)))
	waitFor(t, ctx, "the instance's page", `document.querySelector("h1") && document.querySelector("h1").textContent == "each[2]"`)
	if txt := eval[string](t, ctx, `document.body.innerText`); !strings.Contains(txt, "Instance 2 of the mapped task each") {
		t.Errorf("instance page: %q", txt)
	}
	shot(t, ctx, "mapped-instance")
}
