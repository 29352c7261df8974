package ui

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// Browser tests of repairing runs (§10): clear with its preview, mark, notes, deletion, and the
// events page listing what was done with its actor.

// TestBrowserClear is issue 18's walk: a task of a run fails, the user fixes its cause, clears it
// with its downstream from the task page, reads the preview (the pools each task needs, and what
// it waits for: db is held by another run), confirms, and watches the run turn green; the events
// page lists the clear with its actor.
func TestBrowserClear(t *testing.T) {
	b := setup(t, setupOpts{})
	b.trigger(t, "flaky", "f1")
	if st := b.waitRunEnd(t, "flaky", "f1"); st != "failed" {
		t.Fatalf("run ended %s, want failed", st)
	}
	b.release(t, "fixed")
	b.trigger(t, "hold", "h1") // holds db: the cleared extract waits for it
	b.waitAdmitted(t, "hold", "h1", "keep")
	base := serve(t, b)
	ctx := tab(t)

	do(t, ctx, chromedp.Navigate(base+"/ui/dags/flaky/runs/f1/tasks/extract"))
	waitFor(t, ctx, "the clear form", `document.querySelector("#clear-form input[name=downstream]").checked`)
	shot(t, ctx, "repair-task-failed")
	eval[int](t, ctx, markPage)
	do(t, ctx, chromedp.Click(chromedp.CSS(`#clear-task`)))
	waitFor(t, ctx, "the preview", `document.querySelector("dialog#confirm-dialog[open] .preview-rows")`)
	preview := eval[string](t, ctx, `document.querySelector("dialog#confirm-dialog").innerText`)
	for _, w := range []string{"extract", "load", "db × 1", "default × 2", "try 2", "waits for pool db", "1st in line"} {
		if !strings.Contains(preview, w) {
			t.Errorf("the preview does not say %q:\n%s", w, preview)
		}
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("dialog#confirm-dialog tr[data-task]").length`); n != 2 {
		t.Errorf("the preview lists %d task instances, want 2 (extract and its downstream load)", n)
	}
	if got := eval[string](t, ctx, `document.activeElement.id`); got != "dialog-confirm" {
		t.Errorf("focus is on %q, want the confirm button", got)
	}
	shot(t, ctx, "repair-clear-preview")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#dialog-confirm`)))
	waitFor(t, ctx, "the answer", `document.querySelector("#clear-form .form-msg.ok")`)
	if got := eval[string](t, ctx, `document.querySelector("#clear-form .form-msg").innerText`); !strings.Contains(got, "Cleared 2") {
		t.Errorf("answer %q", got)
	}
	waitFor(t, ctx, "extract waiting for db", `document.querySelector(".head-actions .badge.st-scheduled")`)
	b.release(t, "release") // hold ends: db is free
	waitFor(t, ctx, "the run strip all green", `document.querySelectorAll(".run-strip .sq[data-state=success]").length === 2`)
	waitFor(t, ctx, "try 2 succeeded", `document.querySelector(".head-actions .badge.st-success") && document.querySelector("#try-2") && document.querySelector("#try-1")`)
	if !eval[bool](t, ctx, pageKept) {
		t.Error("the page reloaded")
	}
	shot(t, ctx, "repair-clear-done")

	do(t, ctx, chromedp.Navigate(base+"/ui/dags/flaky"))
	waitFor(t, ctx, "the grid", `document.querySelectorAll("table.grid a.cell[data-state=success]").length === 2 &&
		document.querySelector("a.runbar[data-run=f1]").classList.contains("st-success")`)
	waitFor(t, ctx, "the DAG's events", `document.querySelector("#events-live tr[data-event=clear]")`)
	shot(t, ctx, "repair-dag-after-clear")

	do(t, ctx, chromedp.Click(chromedp.CSS(`#all-events`)))
	waitFor(t, ctx, "the events page", `location.pathname === "/ui/events" && document.querySelector("tr[data-event=clear]")`)
	row := eval[string](t, ctx, `document.querySelector("tr[data-event=clear]").innerText`)
	for _, w := range []string{"api:127.0.0.1", "clear", "extract", "include_downstream", "ok"} {
		if !strings.Contains(row, w) {
			t.Errorf("the clear's event does not say %q: %q", w, row)
		}
	}
	shot(t, ctx, "repair-events")
	// Filter by event with the form.
	do(t, ctx, chromedp.SetValue(chromedp.CSS(`#events-filter select[name=event]`), "clear"),
		chromedp.Click(chromedp.CSS(`#events-filter button[type=submit]`)))
	waitFor(t, ctx, "the filtered list", `location.search.includes("event=clear") &&
		document.querySelectorAll("tr[data-event]").length === document.querySelectorAll("tr[data-event=clear]").length`)
	shot(t, ctx, "repair-events-filtered")
}

// TestBrowserMarkSuccess marks a waiting task success from its page: its downstream task runs
// and the run succeeds.
func TestBrowserMarkSuccess(t *testing.T) {
	b := setup(t, setupOpts{})
	b.trigger(t, "hold", "h1")
	b.waitAdmitted(t, "hold", "h1", "keep")
	b.trigger(t, "flaky", "m1")
	b.waiting(t, "flaky", "m1", "extract")
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/flaky/runs/m1/tasks/extract"))
	waitFor(t, ctx, "the mark form", `document.querySelector("#mark-success")`)
	eval[int](t, ctx, markPage)
	do(t, ctx, chromedp.Click(chromedp.CSS(`#mark-success`)))
	waitFor(t, ctx, "the mark's preview", `document.querySelector("dialog#confirm-dialog[open] tr[data-task=extract]")`)
	shot(t, ctx, "repair-mark-preview")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#dialog-confirm`)))
	waitFor(t, ctx, "the answer", `document.querySelector("#mark-form .form-msg.ok")`)
	waitFor(t, ctx, "load to run after it", `document.querySelectorAll(".run-strip .sq[data-state=success]").length === 2`)
	if !eval[bool](t, ctx, pageKept) {
		t.Error("the page reloaded")
	}
	shot(t, ctx, "repair-mark-done")
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/flaky/runs/m1"))
	waitFor(t, ctx, "the run's success", `document.querySelector(".head-actions .badge.st-success")`)
	waitFor(t, ctx, "the mark's event", `document.querySelector("#events-live tr[data-event=mark]")`)
	shot(t, ctx, "repair-mark-run")
}

// TestBrowserNote writes a run's note and a task's note, and sees who wrote them and when.
func TestBrowserNote(t *testing.T) {
	b := setup(t, setupOpts{})
	b.trigger(t, "diamond", "n1")
	b.waitRunEnd(t, "diamond", "n1")
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/diamond/runs/n1"))
	waitFor(t, ctx, "the note form", `document.querySelector("#note-form textarea")`)
	shot(t, ctx, "repair-run")
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#note-text`), "re-run after the vendor fixed the feed"))
	// A live refresh while the note is half written (and the reader looks elsewhere) keeps it.
	do(t, ctx, chromedp.Blur(chromedp.CSS(`#note-text`)))
	waitRefreshes(t, ctx, 2)
	if got := eval[string](t, ctx, `document.querySelector("#note-text").value`); got != "re-run after the vendor fixed the feed" {
		t.Fatalf("the refresh lost the note being written: %q", got)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(`#save-note`)))
	waitFor(t, ctx, "the note saved", `document.querySelector("#note-form .form-msg.ok") &&
		document.querySelector("#note-meta").innerText.includes("api:127.0.0.1")`)
	shot(t, ctx, "repair-note")
	do(t, ctx, chromedp.Reload())
	waitFor(t, ctx, "the note after a reload", `document.querySelector("#note-text").value === "re-run after the vendor fixed the feed" &&
		document.querySelector("#events-live tr[data-event=note]")`)
	// A task's note.
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/diamond/runs/n1/tasks/left"))
	waitFor(t, ctx, "the task's note form", `document.querySelector("#note-form textarea")`)
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#note-text`), "checked by hand"),
		chromedp.Click(chromedp.CSS(`#save-note`)))
	waitFor(t, ctx, "the task's note saved", `document.querySelector("#note-meta").innerText.includes("Written by")`)
	shot(t, ctx, "repair-task-note")

	// At phone width the repair forms, the preview and the events fit the screen (tables scroll
	// in their boxes).
	do(t, ctx, chromedp.EmulateViewport(390, 844))
	defer do(t, ctx, chromedp.EmulateViewport(1280, 900))
	for _, p := range []struct{ path, name string }{{"/ui/dags/diamond/runs/n1", "repair-run-phone"},
		{"/ui/dags/diamond/runs/n1/tasks/left", "repair-task-phone"}, {"/ui/events", "repair-events-phone"}} {
		do(t, ctx, chromedp.Navigate(base+p.path))
		waitFor(t, ctx, p.name, `document.querySelector("#events-live") && document.documentElement.scrollWidth <= window.innerWidth`)
		shot(t, ctx, p.name)
	}
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/diamond/runs/n1/tasks/left"))
	waitFor(t, ctx, "the clear form", `document.querySelector("#clear-task")`)
	do(t, ctx, chromedp.Click(chromedp.CSS(`#clear-task`)))
	waitFor(t, ctx, "the preview at phone width", `document.querySelector("dialog#confirm-dialog[open] .preview-rows")`)
	shot(t, ctx, "repair-preview-phone")
	do(t, ctx, chromedp.KeyEvent("\x1b")) // Escape cancels
	waitFor(t, ctx, "the dialog to close", `!document.querySelector("dialog#confirm-dialog") && document.activeElement.id === "clear-task"`)
	if got := eval[string](t, ctx, `document.querySelector(".head-actions .badge").innerText`); got != "success" {
		t.Errorf("a cancelled clear changed the task: %s", got)
	}
}

// TestBrowserDeleteRun deletes an ended run, then a running one (force: its attempt is stopped
// first, and the page says so); a delete without force while an attempt runs shows the API's
// refusal beside the button.
func TestBrowserDeleteRun(t *testing.T) {
	b := setup(t, setupOpts{})
	b.trigger(t, "diamond", "d1")
	b.waitRunEnd(t, "diamond", "d1")
	b.trigger(t, "hold", "h1")
	b.waitAdmitted(t, "hold", "h1", "keep")
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/diamond/runs/d1"))
	waitFor(t, ctx, "the delete button", `document.querySelector("#delete-run")`)
	confirmText := eval[string](t, ctx, `document.querySelector("#delete-run-form").dataset.confirm`)
	if !strings.Contains(confirmText, "4 task instances") || strings.Contains(confirmText, "force") {
		t.Errorf("confirmation %q", confirmText)
	}
	eval[bool](t, ctx, `window.confirm = () => true, true`)
	do(t, ctx, chromedp.Click(chromedp.CSS(`#delete-run`)))
	waitFor(t, ctx, "the DAG page", `location.pathname === "/ui/dags/diamond" && document.querySelector("#grid-live")`)
	if eval[bool](t, ctx, `!!document.querySelector("a.runbar[data-run=d1]")`) {
		t.Error("the deleted run is still in the grid")
	}
	waitFor(t, ctx, "the deletion's event", `document.querySelector("#events-live tr[data-event=delete_run]")`)
	shot(t, ctx, "repair-deleted")

	do(t, ctx, chromedp.Navigate(base+"/ui/dags/hold/runs/h1"))
	waitFor(t, ctx, "the forced delete", `document.querySelector("#delete-run").innerText.includes("Stop and delete")`)
	if got := eval[string](t, ctx, `document.querySelector("#delete-run-form").dataset.confirm`); !strings.Contains(got, "stopped first (force)") {
		t.Errorf("confirmation %q does not say the attempt is stopped", got)
	}
	shot(t, ctx, "repair-delete-running")
	// Without force the API refuses while the attempt runs: the refusal shows inline.
	// In one step, so that no live refresh brings the field back in between.
	eval[bool](t, ctx, `window.confirm = () => true, document.querySelector("#delete-run-form input[name=force]").remove(),
		document.querySelector("#delete-run").click(), true`)
	waitFor(t, ctx, "the refusal", `document.querySelector("#delete-run-form .form-msg.err")`)
	shot(t, ctx, "repair-delete-refused")
	do(t, ctx, chromedp.Reload())
	waitFor(t, ctx, "the forced delete again", `document.querySelector("#delete-run-form input[name=force]")`)
	eval[bool](t, ctx, `window.confirm = () => true, true`)
	do(t, ctx, chromedp.Click(chromedp.CSS(`#delete-run`)))
	waitFor(t, ctx, "the DAG page", `location.pathname === "/ui/dags/hold"`)
	waitFor(t, ctx, "the run gone", `!document.querySelector("a.runbar[data-run=h1]")`)
	shot(t, ctx, "repair-deleted-forced")
}

// TestBrowserClearWithoutScript: with scripts off, Clear opens the preview as a page whose
// button clears, and the user lands back on the task page.
func TestBrowserClearWithoutScript(t *testing.T) {
	b := setup(t, setupOpts{})
	b.trigger(t, "flaky", "f1")
	b.waitRunEnd(t, "flaky", "f1")
	b.release(t, "fixed")
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return chromedp.Void{}, err
	})
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/flaky/runs/f1/tasks/extract"))
	waitFor(t, ctx, "the clear form", `document.querySelector("#clear-task")`)
	do(t, ctx, chromedp.Click(chromedp.CSS(`#clear-task`)))
	waitFor(t, ctx, "the preview page", `document.querySelector(".confirm-page .preview-rows tr[data-task=load]")`)
	if got := eval[string](t, ctx, `document.querySelector(".confirm-page").innerText`); !strings.Contains(got, "db × 1") ||
		!strings.Contains(got, "admitted at once") {
		t.Errorf("the preview page says %q", got)
	}
	shot(t, ctx, "repair-preview-page")
	do(t, ctx, chromedp.Click(chromedp.CSS(`.confirm-row button[type=submit]`)))
	waitFor(t, ctx, "the task page again", `location.pathname === "/ui/dags/flaky/runs/f1/tasks/extract" && document.querySelector("#clear-form")`)
	if st := b.waitRunEnd(t, "flaky", "f1"); st != "success" {
		t.Errorf("the cleared run ended %s", st)
	}
}
