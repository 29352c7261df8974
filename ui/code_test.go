package ui

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// quickV2 is quick.yaml changed: another command and a comment.
const quickV2 = `
description: one quick task
tags: [demo]
owner: tests
tasks:
  - id: only
    command: ["echo", "version two"] # changed
`

// versioned runs quick as it is (q1, version 1), changes its file, and runs it again (q2,
// version 2) once a daemon's load recorded the change.
func versioned(t *testing.T) *bundle {
	t.Helper()
	b := setup(t, setupOpts{})
	b.waitVersion(t, "quick", 1)
	b.trigger(t, "quick", "q1")
	b.waitRunEnd(t, "quick", "q1")
	if err := os.WriteFile(filepath.Join(b.dir, "dags", "quick.yaml"), []byte(quickV2), 0o644); err != nil {
		t.Fatal(err)
	}
	b.waitVersion(t, "quick", 2)
	b.trigger(t, "quick", "q2")
	b.waitRunEnd(t, "quick", "q2")
	return b
}

// waitVersion waits until a daemon's pass recorded version n of a DAG as its current one: its
// registry reads a changed file off the loop and wakes the loop, whose pass records it.
func (b *bundle) waitVersion(t testing.TB, dagID string, n int) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		if v, err := b.st.GetDAGVersion(context.Background(), dagID, 0); err == nil && v.Version == n {
			return
		}
		select {
		case <-b.notices:
		case <-timeout:
			t.Fatalf("dag %s: version %d not recorded", dagID, n)
		}
	}
}

// TestCodePage (§12): the Code tab shows the current version's text with line numbers, any
// version by its number, and the diff of two; each run's page links to the code it ran, and
// the run of an older version says so.
func TestCodePage(t *testing.T) {
	t.Parallel()
	b := versioned(t)
	html := b.page(t, http.StatusOK, "/ui/dags/quick/code")
	for _, want := range []string{`id="L7"`, `href="#L7">7</a>`, `command: [&#34;echo&#34;, &#34;version two&#34;] # changed`,
		`<span class="chip live">current</span>`, `v1 · first seen`, `id="code-tab" class="on"`} {
		if !strings.Contains(html, want) {
			t.Errorf("the current version's page lacks %q", want)
		}
	}
	html = b.page(t, http.StatusOK, "/ui/dags/quick/code?version=1")
	if !strings.Contains(html, `command: [&#34;true&#34;]`) || strings.Contains(html, "version two") {
		t.Errorf("version 1's page does not show its own text:\n%s", html)
	}
	html = b.page(t, http.StatusOK, "/ui/dags/quick/code?version=2&diff=1")
	for _, want := range []string{`<tr class="del">`, `<tr class="add">`, `+1</span> <span class="del-n">−1</span>`,
		`version two`, `command: [&#34;true&#34;]`} {
		if !strings.Contains(html, want) {
			t.Errorf("the diff lacks %q", want)
		}
	}
	old := b.page(t, http.StatusOK, "/ui/dags/quick/runs/q1")
	if !strings.Contains(old, `id="version-note"`) || !strings.Contains(old, `href="/ui/dags/quick/code?version=1"`) ||
		!strings.Contains(old, `/ui/dags/quick/code?diff=1&amp;version=2`) {
		t.Errorf("the run of version 1 does not say it is not the current one:\n%s", old)
	}
	if cur := b.page(t, http.StatusOK, "/ui/dags/quick/runs/q2"); strings.Contains(cur, `id="version-note"`) ||
		!strings.Contains(cur, `href="/ui/dags/quick/code?version=2"`) {
		t.Errorf("the run of the current version:\n%s", cur)
	}
	if task := b.page(t, http.StatusOK, "/ui/dags/quick/runs/q1/tasks/only"); !strings.Contains(task, `class="muted small attempt-version" href="/ui/dags/quick/code?version=1"`) {
		t.Errorf("the attempt does not name its version:\n%s", task)
	}
	// A clear's preview says it runs the current version, not the run's.
	rec := b.request(t, http.MethodPost, "/ui/dags/quick/runs/q1/clear", url.Values{}, nil)
	if body := rec.Body.String(); rec.Code != http.StatusOK ||
		!strings.Contains(body, "current definition (version 2; this run was created with version 1)") {
		t.Errorf("the clear's preview: %d\n%s", rec.Code, body)
	}
	b.page(t, http.StatusBadRequest, "/ui/dags/quick/code?version=x")
	b.page(t, http.StatusNotFound, "/ui/dags/quick/code?version=9")
	b.page(t, http.StatusNotFound, "/ui/dags/nope/code")
}

// TestBrowserCodeTab walks the Code tab as a user does: from the DAG page to its code, the
// older version picked in the picker (the page follows the choice), its diff with the current
// one; from the run of the older version, whose page says it is not the current one, to the
// code it ran.
func TestBrowserCodeTab(t *testing.T) {
	b := versioned(t)
	base := serve(t, b)
	ctx := tab(t)

	do(t, ctx, chromedp.Navigate(base+"/ui/dags/quick"))
	waitFor(t, ctx, "the tabs", `document.querySelector("#code-tab")`)
	do(t, ctx, chromedp.Click(chromedp.CSS(`#code-tab`)))
	waitFor(t, ctx, "the source", `document.querySelector("table#source tr#L7")`)
	if got := eval[string](t, ctx, `document.querySelector("tr#L7 td.src").innerText`); got != `    command: ["echo", "version two"] # changed` {
		t.Errorf("line 7 %q", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("table#source tr").length`); n != 7 {
		t.Errorf("%d lines shown, want 7", n)
	}
	shot(t, ctx, "code-current")

	// The picker: version 1 shows at once (the script sends the form on change).
	pick(t, ctx, "#version-select", "1")
	waitFor(t, ctx, "version 1", `location.search.includes("version=1") && document.querySelector("table#source")`)
	if got := eval[string](t, ctx, `document.querySelector("tr#L7 td.src").innerText`); got != `    command: ["true"]` {
		t.Errorf("version 1's line 7 %q", got)
	}
	shot(t, ctx, "code-version-1")

	// Compare with the current version.
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/quick/code?version=2"))
	waitFor(t, ctx, "the picker", `document.querySelector("#diff-select")`)
	pick(t, ctx, "#diff-select", "1")
	waitFor(t, ctx, "the diff", `document.querySelector("table#diff tr.add")`)
	added := eval[string](t, ctx, `document.querySelector("table#diff tr.add td.src").innerText`)
	removed := eval[string](t, ctx, `document.querySelector("table#diff tr.del td.src").innerText`)
	if !strings.Contains(added, "version two") || !strings.Contains(removed, `["true"]`) {
		t.Errorf("diff: added %q, removed %q", added, removed)
	}
	shot(t, ctx, "code-diff")

	// The older run says it is not the current version and links to the code it ran.
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/quick/runs/q1"))
	waitFor(t, ctx, "the version note", `document.querySelector("#version-note")`)
	if got := eval[string](t, ctx, `document.querySelector("#version-note").innerText`); !strings.Contains(got, "version 1") ||
		!strings.Contains(got, "current version is 2") {
		t.Errorf("version note %q", got)
	}
	shot(t, ctx, "code-run-older-version")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#run-code`)))
	waitFor(t, ctx, "the run's code", `location.search.includes("version=1") && document.querySelector("table#source tr#L7")`)
	if got := eval[string](t, ctx, `document.querySelector("tr#L7 td.src").innerText`); got != `    command: ["true"]` {
		t.Errorf("the run's code, line 7 %q", got)
	}
}

// pick chooses value in a select as a user does: the value changes and the select says so (its
// change event), with no button pressed.
func pick(t *testing.T, ctx context.Context, sel, value string) {
	t.Helper()
	eval[bool](t, ctx, `(function () { var s = document.querySelector("`+sel+`"); s.value = "`+value+`";
		s.dispatchEvent(new Event("change", {bubbles: true})); return true })()`)
}
