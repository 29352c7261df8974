package ui

import (
	"context"
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// poolHistory makes a history in pool db: hold's keep holds it until released, then held's
// load, which waited for it, holds it.
func poolHistory(t *testing.T) *bundle {
	t.Helper()
	b := setup(t, setupOpts{})
	b.trigger(t, "hold", "h1")
	b.waitAdmitted(t, "hold", "h1", "keep")
	b.trigger(t, "held", "w1")
	b.waiting(t, "held", "w1", "load")
	b.release(t, "release")
	for _, r := range [][2]string{{"hold", "h1"}, {"held", "w1"}} {
		if st := b.waitRunEnd(t, r[0], r[1]); st != "success" {
			t.Fatalf("%s ended %s", r[0], st)
		}
	}
	return b
}

var hitRE = regexp.MustCompile(`<a class="hit" href="([^"]+)" tabindex="-1" data-at="[^"]+" data-peak="(\d+)">`)

// TestPoolTimelinePage: the hour, the day and the week each draw their buckets as links; the
// first slice that held a slot links to the moment keep held it, and that page lists keep's
// try with its slot; bad windows, times and pools are refused with the reason.
func TestPoolTimelinePage(t *testing.T) {
	t.Parallel()
	b := poolHistory(t)
	for _, c := range []struct {
		window string
		n      int
	}{{"", 240}, {"?window=day", 288}, {"?window=week", 336}} {
		page := b.page(t, http.StatusOK, "/ui/pools/db/timeline"+c.window)
		hits := hitRE.FindAllStringSubmatch(page, -1)
		if len(hits) != c.n {
			t.Fatalf("%s: %d slices, want %d", c.window, len(hits), c.n)
		}
		if len(page) > 200<<10 {
			t.Errorf("%s: the page is %d KB", c.window, len(page)>>10)
		}
		first := ""
		for _, h := range hits {
			if h[2] == "1" {
				first = html.UnescapeString(h[1])
				break
			}
		}
		if first == "" || !strings.Contains(page, "peak 1 slot") {
			t.Fatalf("%s: no slice held a slot", c.window)
		}
		at := b.page(t, http.StatusOK, strings.TrimSuffix(first, "#holders"))
		for _, want := range []string{`id="holders-table"`, `>hold.keep</a> <span class="muted small">try 1</span>`, "1 slot of 1 held by 1 attempt.", `<line class="at"`} {
			if !strings.Contains(at, want) {
				t.Errorf("%s: the holders at %s lack %s", c.window, first, want)
			}
		}
	}
	if page := b.page(t, http.StatusOK, "/ui/pools"); !strings.Contains(page, `href="/ui/pools/db/timeline"`) {
		t.Error("the pools page does not link the timeline")
	}
	if page := b.page(t, http.StatusOK, "/ui/pools/db/timeline?at=noon"); !strings.Contains(page, `id="holders-error"`) || !strings.Contains(page, "at: want a time") {
		t.Error("a bad instant is not explained")
	}
	// A minute after the pool was created (its capacity history begins there): of its 1 slot.
	later := time.Now().UTC().Add(2 * time.Minute).Format("2006-01-02+15:04")
	if page := b.page(t, http.StatusOK, "/ui/pools/db/timeline?at="+later); !strings.Contains(page, "0 slots of 1 held by 0 attempts.") {
		t.Error("a time without a zone is not read as UTC")
	}
	// Before the pool existed: no capacity then.
	if page := b.page(t, http.StatusOK, "/ui/pools/db/timeline?at=2020-12-02+10:00"); !strings.Contains(page, "0 slots held by 0 attempts.") {
		t.Error("the capacity before the pool existed")
	}
	b.page(t, http.StatusBadRequest, "/ui/pools/db/timeline?window=month")
	b.page(t, http.StatusBadRequest, "/ui/pools/db/timeline?end=yesterday")
	b.page(t, http.StatusNotFound, "/ui/pools/nosuch/timeline")
}

// TestBrowserPoolTimeline: a click on the chart lists who held the slots then, without leaving
// the page; the week window reads the same history; at 1280 px and on a phone.
func TestBrowserPoolTimeline(t *testing.T) {
	b := poolHistory(t)
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/ui/pools/db/timeline"))
	waitFor(t, ctx, "the chart", `document.querySelectorAll("svg.window-chart a.hit").length === 240`)
	eval[int](t, ctx, markPage)
	click := `(() => { const a = [...document.querySelectorAll('svg.window-chart a.hit[data-peak="1"]')][0];
		const r = a.querySelector("rect").getBoundingClientRect();
		return [r.left + r.width / 2, r.top + r.height / 2]; })()`
	xy := eval[[]float64](t, ctx, click)
	do(t, ctx, chromedp.MouseClickXY(xy[0], xy[1]))
	waitFor(t, ctx, "the holders", `document.querySelector("#holders-table")`)
	if !eval[bool](t, ctx, pageKept) {
		t.Error("the click reloaded the page")
	}
	if got := eval[string](t, ctx, `document.querySelector("#holders-table tbody").innerText`); !strings.Contains(got, "hold.keep") || !strings.Contains(got, "try 1") {
		t.Errorf("holders: %q", got)
	}
	if !eval[bool](t, ctx, `location.search.includes("at=") && !!document.querySelector("svg.window-chart line.at")`) {
		t.Error("the address or the chart does not mark the instant")
	}
	shot(t, ctx, "pool-timeline-hour")
	do(t, ctx, chromedp.Click(chromedp.CSS(`.window-tabs a[data-window=week]`)))
	waitFor(t, ctx, "the week", `document.querySelectorAll("svg.window-chart a.hit").length === 336 && document.querySelector('.window-tabs a.on').dataset.window === "week"`)
	xy = eval[[]float64](t, ctx, click)
	do(t, ctx, chromedp.MouseClickXY(xy[0], xy[1]))
	waitFor(t, ctx, "the holders in the week", `document.querySelector("#holders-table") && document.querySelector("#holders-table").innerText.includes("hold.keep")`)
	shot(t, ctx, "pool-timeline-week")

	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Reload())
	waitFor(t, ctx, "the page on a phone", `document.querySelector("#holders-table")`)
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the timeline page is %d px wide on a 390 px phone", w)
	}
	shot(t, ctx, "pool-timeline-phone")

	// A pool resized from 2 to 6 slots 20 minutes ago: the capacity is a step, and the slices
	// that reached 2 before it are full.
	resizedPool(t, b)
	do(t, ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/ui/pools/grown/timeline"))
	waitFor(t, ctx, "the resized pool's chart", `document.querySelectorAll("svg.window-chart a.hit").length === 240`)
	if d := eval[string](t, ctx, `document.querySelector("svg.window-chart path.cap").getAttribute("d")`); strings.Count(d, "V") != 1 || strings.Count(d, "H") != 2 {
		t.Errorf("the capacity line is not one step: %q", d)
	}
	steps := eval[[]float64](t, ctx, `(() => { const p = document.querySelector("svg.window-chart path.cap").getBBox();
		const full = [...document.querySelectorAll("svg.window-chart rect.full")].map(r => r.getBBox());
		return [p.height, full.length, full.length ? full[0].x : 0, p.x]; })()`)
	if steps[0] < 50 || steps[1] != 1 {
		t.Errorf("the step is %.0f px high, %v full stretches; want a visible step and one stretch", steps[0], steps[1])
	}
	if got := eval[string](t, ctx, `document.querySelector(".desc").innerText`); !strings.Contains(got, "capacity as it was (it changed in this window), 6 today") {
		t.Errorf("the description: %q", got)
	}
	shot(t, ctx, "pool-timeline-resized")
}

// resizedPool stores pool grown: 2 slots from 50 minutes ago, 6 from 20 minutes ago; 2 slots
// held from 45 to 30 minutes ago (full then), 5 from 15 to 5 minutes ago.
func resizedPool(t *testing.T, b *bundle) {
	t.Helper()
	now := time.Now().UTC()
	ago := func(m int) time.Time { return now.Add(-time.Duration(m) * time.Minute) }
	err := b.st.WithTx(context.Background(), func(tx store.Tx) error {
		for _, c := range []struct{ m, slots int }{{50, 2}, {20, 6}} {
			if err := tx.PutPool(&store.Pool{Name: "grown", Slots: c.slots, TargetSlots: store.NoTarget, Ordering: vocab.Backfill,
				OnResize: vocab.ResizeImmediate, Source: "store"}, ago(c.m)); err != nil {
				return err
			}
		}
		r := &store.Run{DAGID: "held", RunID: "grown", RunType: vocab.RunManual, LogicalDate: ago(60), State: vocab.RunSuccess, QueuedAt: ago(60)}
		if err := tx.InsertRun(r); err != nil {
			return err
		}
		for i, h := range []struct{ slots, from, to int }{{2, 45, 30}, {5, 15, 5}} {
			e := &store.Entry{Run: r.PK, TaskID: "load" + strconv.Itoa(i), TryNumber: 1, Label: "held.load", Priority: 1, Due: ago(h.from),
				State: vocab.EntryWaiting, CreatedAt: ago(h.from), Needs: []store.Requirement{{Pool: "grown", Slots: h.slots}}}
			if err := tx.InsertEntry(e); err != nil {
				return err
			}
			if err := tx.Admit(e, "test", 1, ago(h.from), now); err != nil {
				return err
			}
			if _, err := tx.ReleaseHeld(e.ID, "test", 1, ago(h.to)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
