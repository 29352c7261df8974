package ui

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// waitRefreshes waits until the page's live refresh has run n more times.
func waitRefreshes(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	from := eval[int](t, ctx, `+(document.documentElement.dataset.refreshes || 0)`)
	waitFor(t, ctx, strconv.Itoa(n)+" live refreshes", `+(document.documentElement.dataset.refreshes || 0) >= `+strconv.Itoa(from+n))
}

// TestBrowserLiveKeepsFocus: a focused button keeps its focus across live updates of a page
// that changes (a running attempt's page), and the page is updated, not replaced.
func TestBrowserLiveKeepsFocus(t *testing.T) {
	b := setup(t, setupOpts{})
	b.trigger(t, "talk", "t1")
	if _, err := b.talked.Line(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/talk/runs/t1/tasks/say"))
	waitFor(t, ctx, "the running attempt's log", `document.querySelector('pre[data-log][data-running="1"]')`)
	eval[bool](t, ctx, markPage+`, window.__btn = document.querySelector("#task-live form[data-action] button[type=submit]"), window.__btn.focus(), true`)
	if !eval[bool](t, ctx, `document.activeElement === window.__btn`) {
		t.Fatal("the button did not take the focus")
	}
	before := eval[string](t, ctx, `document.getElementById("task-live").innerText`)
	waitRefreshes(t, ctx, 3)
	if !eval[bool](t, ctx, `document.activeElement === window.__btn && document.contains(window.__btn)`) {
		t.Errorf("the focus moved to %s", eval[string](t, ctx, `document.activeElement.outerHTML.slice(0, 200)`))
	}
	if !eval[bool](t, ctx, pageKept) {
		t.Error("the page was reloaded")
	}
	if after := eval[string](t, ctx, `document.getElementById("task-live").innerText`); after == before {
		t.Error("the page did not change across the refreshes: the test shows nothing")
	}
}

// TestBrowserLiveKeepsSelection: text selected in a finished attempt's log stays selected while
// the page refreshes itself.
func TestBrowserLiveKeepsSelection(t *testing.T) {
	b := setup(t, setupOpts{})
	b.trigger(t, "talk", "t1")
	if _, err := b.talked.Line(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	b.release(t, "go-on")
	if st := b.waitRunEnd(t, "talk", "t1"); st != "success" {
		t.Fatalf("talk ended %s", st)
	}
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/talk/runs/t1/tasks/say"))
	waitFor(t, ctx, "the log", `document.querySelector("pre[data-log]") && document.querySelector("pre[data-log]").textContent.includes("second line")`)
	eval[bool](t, ctx, `(() => {
		const pre = document.querySelector("pre[data-log]"), text = pre.firstChild;
		const at = text.nodeValue.indexOf("first line"), r = document.createRange();
		r.setStart(text, at); r.setEnd(text, at + "first line".length);
		const s = getSelection(); s.removeAllRanges(); s.addRange(r);
		return true;
	})()`)
	waitRefreshes(t, ctx, 3)
	if got := eval[string](t, ctx, `getSelection().toString()`); got != "first line" {
		t.Errorf("the selection is now %q", got)
	}
}
