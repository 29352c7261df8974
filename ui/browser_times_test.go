package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// shortTime is app.js's text of a time in zone loc: the clock for today, the date and clock this
// year, else the date and minutes.
func shortTime(t time.Time, loc *time.Location) string {
	t, now := t.In(loc), time.Now().In(loc)
	switch {
	case t.Format("2006-01-02") == now.Format("2006-01-02"):
		return t.Format("15:04:05")
	case t.Year() == now.Year():
		return t.Format("Jan 2, 15:04:05")
	default:
		return t.Format("2006-01-02 15:04")
	}
}

// TestBrowserTimeZone: times are absolute, in the browser's zone by default; the switch in the
// header shows them in UTC, and the choice is remembered across pages and reloads.
func TestBrowserTimeZone(t *testing.T) {
	b := setup(t, setupOpts{})
	b.trigger(t, "quick", "q1")
	b.waitRunEnd(t, "quick", "q1")
	base := serve(t, b)
	ctx := tab(t)
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Skip("no zone data: ", err)
	}
	do(t, ctx, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Tokyo"})
		return chromedp.Void{}, err
	})
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/quick/runs/q1/tasks/only"))
	waitFor(t, ctx, "the zone switch", `!document.getElementById("tz-toggle").hidden && document.documentElement.dataset.tz`)
	first := `document.querySelector(".facts time[datetime]")`
	at, err := time.Parse(time.RFC3339Nano, eval[string](t, ctx, first+`.getAttribute("datetime")`))
	if err != nil {
		t.Fatal(err)
	}
	check := func(when, zone string, loc *time.Location, label string) {
		t.Helper()
		if got := eval[string](t, ctx, `document.documentElement.dataset.tz`); got != zone {
			t.Errorf("%s: zone %q, want %q", when, got, zone)
		}
		if got, want := eval[string](t, ctx, first+`.textContent`), shortTime(at, loc); got != want {
			t.Errorf("%s: the start reads %q, want %q", when, got, want)
		}
		if got := eval[string](t, ctx, `document.getElementById("tz-toggle").textContent`); got != label {
			t.Errorf("%s: the switch says %q, want %q", when, got, label)
		}
	}
	check("by default", "local", tokyo, "Times: local (Asia/Tokyo)")
	title := eval[string](t, ctx, first+`.title`)
	if !strings.HasPrefix(title, "just now · ") && !strings.Contains(title, " ago · ") {
		t.Errorf("the time's title %q does not say how long ago", title)
	}
	for _, want := range []string{at.In(tokyo).Format("2006-01-02 15:04:05") + " Asia/Tokyo", at.UTC().Format("2006-01-02 15:04:05") + " UTC"} {
		if !strings.Contains(title, want) {
			t.Errorf("the time's title %q lacks %q", title, want)
		}
	}
	shot(t, ctx, "times-local")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#tz-toggle`)))
	check("switched", "utc", time.UTC, "Times: UTC")
	if got := eval[string](t, ctx, `localStorage.getItem("poolflow.tz")`); got != "utc" {
		t.Errorf("remembered %q", got)
	}
	do(t, ctx, chromedp.Reload())
	waitFor(t, ctx, "the page again", `document.documentElement.dataset.tz`)
	check("after a reload", "utc", time.UTC, "Times: UTC")
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/quick/runs/q1"))
	waitFor(t, ctx, "the run page", `document.documentElement.dataset.tz && document.querySelector("time[datetime]")`)
	if got := eval[string](t, ctx, `document.documentElement.dataset.tz`); got != "utc" {
		t.Errorf("another page shows %q times", got)
	}
	shot(t, ctx, "times-utc")
	// A chart's ticks follow the switch too: a pool timeline's, in UTC and then in Tokyo.
	tickOK := func(loc *time.Location) {
		t.Helper()
		got := eval[[]string](t, ctx, `[...document.querySelectorAll("svg.window-chart text[data-time]")].slice(0, 3).map(e => e.getAttribute("data-time") + "|" + e.textContent)`)
		if len(got) == 0 {
			t.Fatal("the timeline has no ticks")
		}
		for _, g := range got {
			at, label, _ := strings.Cut(g, "|")
			tm, err := time.Parse(time.RFC3339, at)
			want := tm.In(loc).Format("15:04")
			if tm.In(loc).Format("15:04") == "00:00" {
				want = tm.In(loc).Format("Jan 2")
			}
			if err != nil || label != want {
				t.Errorf("the tick at %s reads %q, want %q", at, label, want)
			}
		}
	}
	do(t, ctx, chromedp.Navigate(base+"/ui/pools/db/timeline"))
	waitFor(t, ctx, "the timeline", `document.documentElement.dataset.tz && document.querySelector("svg.window-chart text[data-time]")`)
	tickOK(time.UTC)
	do(t, ctx, chromedp.Click(chromedp.CSS(`#tz-toggle`)))
	if got := eval[string](t, ctx, `localStorage.getItem("poolflow.tz") + "|" + document.documentElement.dataset.tz`); got != "local|local" {
		t.Errorf("switched back: %q", got)
	}
	tickOK(tokyo)
}
