package ui

import (
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// selectText selects the first occurrence of text in the element sel (inside one text node).
func selectText(sel, text string) string {
	return `(() => {
		const root = document.querySelector(` + strconv.Quote(sel) + `), w = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
		for (let n; (n = w.nextNode());) {
			const at = n.nodeValue.indexOf(` + strconv.Quote(text) + `);
			if (at < 0) continue;
			const r = document.createRange();
			r.setStart(n, at); r.setEnd(n, at + ` + strconv.Itoa(len(text)) + `);
			const s = getSelection(); s.removeAllRanges(); s.addRange(r);
			return true;
		}
		return false;
	})()`
}

// TestBrowserLogs: a 1 MB log: its colours drawn as spans (a tag in it stays text), the
// download link answers the whole file as an attachment, "Load earlier" pages back to the
// log's start while the reader's selection stays, the search highlights its matches and moves
// between them, and live refreshes change none of it.
func TestBrowserLogs(t *testing.T) {
	b, file := bigLog(t)
	base := serve(t, b)
	ctx := tab(t)
	const page = "/ui/dags/biglog/runs/b1/tasks/paint"
	do(t, ctx, chromedp.Navigate(base+page))
	waitFor(t, ctx, "the log's tail and its search box", `document.querySelector("#log-1 .a-fg-1") && !document.querySelector("#log-tools-1 .log-search").hidden`)
	if got := eval[string](t, ctx, `document.querySelector("#log-1 .a-fg-1").textContent + "|" + getComputedStyle(document.querySelector("#log-1 .a-fg-1")).color`); got != "red alert|rgb(255, 123, 114)" {
		t.Errorf("the red span: %q", got)
	}
	if eval[bool](t, ctx, `!!document.querySelector("#log-1 b") || document.querySelector("#log-1").textContent.includes("\x1b")`) {
		t.Error("the log's <b> became an element, or an escape is shown raw")
	}
	if !eval[bool](t, ctx, `document.querySelector("#log-1").textContent.includes("<b>not bold</b>")`) {
		t.Error("the log's tag is not shown as text")
	}
	shot(t, ctx, "logs-tail")

	// The download: the whole file, as an attachment.
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch(document.getElementById("log-download-1").href).then(r => r.text().then(body =>
		r.status + "|" + r.headers.get("Content-Disposition") + "|" + body.length))`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if want := "200|attachment; filename=biglog_b1_paint_try1.log|" + strconv.Itoa(len(file)); got != want {
		t.Errorf("download: %s, want %s", got, want)
	}
	if !eval[bool](t, ctx, `document.getElementById("log-download-1").hasAttribute("download")`) {
		t.Error("the download link does not ask to save")
	}

	eval[int](t, ctx, markPage)

	// A line far before the shown text: not in the page, found in the whole log; picking it
	// loads the log back to it and makes it the current match.
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#log-find-1`), "line 20000 of"))
	waitFor(t, ctx, "no match shown, the whole-log button", `document.querySelector("#log-tools-1 .log-count").textContent === "no match" &&
		!document.querySelector("#log-tools-1 [data-find=whole]").hidden`)
	do(t, ctx, chromedp.Click(chromedp.CSS(`#log-tools-1 [data-find=whole]`)))
	waitFor(t, ctx, "the whole log's line", `document.querySelectorAll("#log-tools-1 .log-find-line").length === 1`)
	shot(t, ctx, "logs-find-whole")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#log-tools-1 .log-find-line`)))
	waitFor(t, ctx, "the line shown and current", `document.querySelector("#log-tools-1 .log-count").textContent === "1 of 1"`)
	if got := eval[string](t, ctx, `[...CSS.highlights.get("log-current")][0].toString()`); got != "line 20000 of" {
		t.Errorf("the current match is %q", got)
	}
	if start := eval[int](t, ctx, `+document.getElementById("log-1").dataset.start`); start <= 0 || start > strings.Index(string(file), "line 20000 of") {
		t.Errorf("the log is shown from byte %d", start)
	}
	eval[string](t, ctx, `document.getElementById("log-find-1").value = ""`)

	// Select a line of the tail, then page back to the start.
	if !eval[bool](t, ctx, selectText("#log-1", "needle two")) {
		t.Fatal("cannot select in the log")
	}
	for i := 0; eval[bool](t, ctx, `!!document.getElementById("log-earlier-1")`); i++ {
		if i > 8 {
			t.Fatal("Load earlier does not reach the log's start")
		}
		startBefore := eval[string](t, ctx, `document.getElementById("log-1").dataset.start`)
		do(t, ctx, chromedp.Click(chromedp.CSS(`#log-earlier-1`)))
		waitFor(t, ctx, "an earlier piece", `document.getElementById("log-1").dataset.start !== `+strconv.Quote(startBefore))
	}
	if got := eval[string](t, ctx, `getSelection().toString()`); got != "needle two" {
		t.Errorf("paging back changed the selection to %q", got)
	}
	text := eval[string](t, ctx, `document.getElementById("log-1").textContent`)
	if !strings.HasPrefix(text, "FIRST-MARKER\nline 1 of the big log\n") || strings.Count(text, " of the big log\n") != 40000 {
		t.Errorf("the paged log: starts %q, %d numbered lines", text[:min(60, len(text))], strings.Count(text, " of the big log\n"))
	}
	if got := eval[string](t, ctx, `document.getElementById("log-shown-1").textContent`); got != "showing the whole log" {
		t.Errorf("the log's size note: %q", got)
	}

	// Search: three matches, the last first; Enter goes on (round), the ↑ button back.
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#log-find-1`), "NEEDLE"))
	waitFor(t, ctx, "three matches", `document.querySelector("#log-tools-1 .log-count").textContent === "3 of 3"`)
	if got := eval[string](t, ctx, `CSS.highlights.get("log-match").size + "|" + [...CSS.highlights.get("log-current")][0].toString()`); got != "2|needle" {
		t.Errorf("highlights: %q", got)
	}
	do(t, ctx, chromedp.KeyEvent("\r"))
	waitFor(t, ctx, "the first match", `document.querySelector("#log-tools-1 .log-count").textContent === "1 of 3"`)
	do(t, ctx, chromedp.Click(chromedp.CSS(`#log-tools-1 [data-find=prev]`)))
	waitFor(t, ctx, "back to the third", `document.querySelector("#log-tools-1 .log-count").textContent === "3 of 3"`)
	// A match far up a 1 MB log is scrolled into the log's box.
	eval[string](t, ctx, `document.getElementById("log-find-1").value = ""`)
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#log-find-1`), "line 123 of"))
	waitFor(t, ctx, "one match", `document.querySelector("#log-tools-1 .log-count").textContent === "1 of 1"`)
	inBox := `(() => { const r = [...CSS.highlights.get("log-current")][0].getBoundingClientRect(), p = document.getElementById("log-1").getBoundingClientRect();
		return r.top >= p.top && r.bottom <= p.bottom && r.height > 0; })()`
	if !eval[bool](t, ctx, inBox) {
		t.Error("the match is not scrolled into the log's box")
	}
	shot(t, ctx, "logs-search")

	// Live refreshes keep it all: the paged text, the search, the selection.
	if !eval[bool](t, ctx, selectText("#log-1", "needle two")) {
		t.Fatal("cannot select in the log")
	}
	waitRefreshes(t, ctx, 1) // a page of a 256 KB log refreshes every few seconds, not every 2
	if got := eval[string](t, ctx, `getSelection().toString()`); got != "needle two" {
		t.Errorf("the live refresh changed the selection to %q", got)
	}
	if !eval[bool](t, ctx, pageKept+` && document.getElementById("log-1").textContent.startsWith("FIRST-MARKER")`) ||
		eval[string](t, ctx, `document.querySelector("#log-tools-1 .log-count").textContent`) != "1 of 1" {
		t.Error("the live refresh undid the paging or the search")
	}

	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+page))
	waitFor(t, ctx, "the log on a phone", `document.querySelector("#log-1 .a-fg-1") && !document.querySelector("#log-tools-1 .log-search").hidden`)
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the task page is %d px wide on a 390 px phone", w)
	}
	shot(t, ctx, "logs-phone")
}
