package ui

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// TestWaitBars: each try's wait for admission comes from its queue entry: admitted ones and
// ones that ended unadmitted are drawn, a waiting one only counted, and the sum names the pools.
func TestWaitBars(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	needs := func(pools ...string) []store.Requirement {
		out := []store.Requirement{{Pool: "_global", Slots: 1, Implicit: true}}
		for _, p := range pools {
			out = append(out, store.Requirement{Pool: p, Slots: 1})
		}
		return out
	}
	entries := []store.Entry{
		// try 1 waited 88 s for default, then ran.
		{TaskID: "load", TryNumber: 1, CreatedAt: t0, Due: t0, State: vocab.EntryDone, AdmittedAt: t0.Add(88 * time.Second),
			EndedAt: t0.Add(93 * time.Second), Needs: needs("default"), Reason: "default is full"},
		// try 2 was due 10 s after it was queued (a retry delay): only what follows counts.
		{TaskID: "load", TryNumber: 2, CreatedAt: t0.Add(100 * time.Second), Due: t0.Add(110 * time.Second), State: vocab.EntryDone,
			AdmittedAt: t0.Add(112 * time.Second), Needs: needs("default")},
		// never started: cancelled while waiting for db.
		{TaskID: "copy", TryNumber: 1, CreatedAt: t0, Due: t0, State: vocab.EntryCancelled, EndedAt: t0.Add(30 * time.Second), Needs: needs("db")},
		// still waiting: counted to now.
		{TaskID: "report", TryNumber: 1, CreatedAt: t0.Add(110 * time.Second), Due: t0.Add(110 * time.Second), State: vocab.EntryWaiting, Needs: needs("db")},
		// admitted at once: nothing to draw.
		{TaskID: "fast", TryNumber: 1, CreatedAt: t0, Due: t0, State: vocab.EntryDone, AdmittedAt: t0, Needs: needs()},
	}
	bars, sum := waitBars(entries, t0.Add(120*time.Second))
	if len(bars) != 3 {
		t.Fatalf("%d bars, want 3: %+v", len(bars), bars)
	}
	if b := bars[0]; !b.Waiting || !b.Start.Equal(t0) || !b.End.Equal(t0.Add(88*time.Second)) ||
		!strings.Contains(b.Label, "load try 1 waited 1m 28s for admission: needs default×1") || !strings.Contains(b.Label, "default is full") {
		t.Errorf("try 1's bar: %+v", b)
	}
	if b := bars[1]; !b.Start.Equal(t0.Add(110 * time.Second)) {
		t.Errorf("try 2's wait starts at %v, want when it was due", b.Start)
	}
	if b := bars[2]; !strings.Contains(b.Label, "copy try 1 never started: cancelled after waiting 30.0s for db×1") {
		t.Errorf("the cancelled try: %q", b.Label)
	}
	// 88 + 2 (default) + 30 + 10 (db) = 130 s.
	if sum.Total != 130*time.Second || sum.Words() != "2m 10s (default, db)" {
		t.Errorf("sum %v %q", sum.Total, sum.Words())
	}
}

// TestDAGListNeedsYou: the DAG list says how many runs wait for a person and for a pool.
func TestDAGListNeedsYou(t *testing.T) {
	b := setup(t, setupOpts{})
	b.trigger(t, "gate", "g1")
	b.trigger(t, "hold", "h1")
	b.waitAdmitted(t, "hold", "h1", "keep")
	b.trigger(t, "held", "w1")
	b.waiting(t, "held", "w1", "load")
	// A manual start is answered after the pass that reached the gate's approval task.
	body := b.page(t, http.StatusOK, "/ui/")
	if !strings.Contains(body, "1 run needs you") {
		t.Errorf("the DAG list does not say a run needs you")
	}
	if !strings.Contains(body, `<a class="needs-you" href="/ui/dags/gate/runs?state=running&amp;state=queued"`) {
		t.Errorf("no needs-you link on the gate's row")
	}
	if !strings.Contains(body, "1 waits for a pool") {
		t.Errorf("held's run is not said to wait for a pool")
	}
}

// TestBrowserGanttWaits: the Gantt of a run that waited for a pool shows the wait bar before
// the attempt, with the pool on hover, and the run page sums the wait.
func TestBrowserGanttWaits(t *testing.T) {
	b := setup(t, setupOpts{})
	b.trigger(t, "hold", "h1")
	b.waitAdmitted(t, "hold", "h1", "keep")
	b.trigger(t, "held", "w1")
	b.waiting(t, "held", "w1", "load")
	b.release(t, "release")
	if st := b.waitRunEnd(t, "held", "w1"); st != "success" {
		t.Fatalf("held ended %s", st)
	}
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/held/runs/w1"))
	waitFor(t, ctx, "the Gantt", `document.querySelector("svg.gantt")`)
	title := eval[string](t, ctx, `(document.querySelector("svg.gantt rect.bar.waiting title") || {}).textContent || ""`)
	if !strings.Contains(title, "load try 1 waited") || !strings.Contains(title, "needs db×1") {
		t.Errorf("the wait bar's title: %q", title)
	}
	if ok := eval[bool](t, ctx, `(() => {
		const w = document.querySelector("svg.gantt rect.bar.waiting"), r = document.querySelector("svg.gantt rect.bar:not(.waiting)");
		return w && r && +w.getAttribute("x") < +r.getAttribute("x") && +w.getAttribute("height") < +r.getAttribute("height");
	})()`); !ok {
		t.Errorf("the wait bar is not a thin bar before the attempt's")
	}
	if got := eval[string](t, ctx, `document.getElementById("waited").textContent`); !strings.Contains(got, "waited for pools:") || !strings.Contains(got, "(db)") {
		t.Errorf("the run page says %q", got)
	}
	shot(t, ctx, "run-waited")
}
