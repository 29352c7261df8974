package ui

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/vocab"
)

// TestPreviewTemplate: a clear's preview names, for each task, its state, its next try, the
// pools it will need and whether it is admitted at once or what it waits for.
func TestPreviewTemplate(t *testing.T) {
	t.Parallel()
	p := previewData{Verb: "clear", Title: "Clear 3 task instances of run r1?", Confirm: "Clear 3",
		Clear: []clearRow{
			{TaskID: "extract", DAGID: "etl", DAGRunID: "r1", State: vocab.TaskFailed, TryNumber: 3,
				Requirements: map[string]int{"source_db": 1, "warehouse": 2}, Admitted: true},
			{TaskID: "load", DAGID: "etl", DAGRunID: "r1", State: vocab.TaskUpstreamFailed, TryNumber: 1,
				Requirements: map[string]int{"warehouse": 2},
				WaitReason: &server.PreviewWait{Pool: "warehouse", Shortfall: 1, Place: 2,
					Text: "would wait: pool warehouse is full (needs 2, 1 of 4 free); place 2 in line for warehouse, 1 slot short"}},
			{TaskID: "report", DAGID: "etl", DAGRunID: "r1", State: vocab.TaskUpstreamFailed, TryNumber: 1,
				Requirements: map[string]int{"default": 1}, WaitReason: &server.PreviewWait{Text: "would wait: upstream load is not done"}},
		}}
	var sb strings.Builder
	if err := parsePages()["preview"].ExecuteTemplate(&sb, "preview", p); err != nil {
		t.Fatal(err)
	}
	got := sb.String()
	for _, w := range []string{"Clear 3 task instances of run r1?", `href="/ui/dags/etl/runs/r1/tasks/extract"`,
		"source_db × 1", "warehouse × 2", "try 3", "admitted at once", `waits for pool <a href="/ui/pools#pool-warehouse" class="pool-name">warehouse</a>: 1 slot short, 2nd in line`,
		"pool warehouse is full (needs 2, 1 of 4 free)</span>", "upstream load is not done", "st-upstream-failed"} {
		if !strings.Contains(got, w) {
			t.Errorf("preview: no %q in\n%s", w, got)
		}
	}
}

func TestOrdinal(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 102: "102nd", 111: "111th"} {
		if got := ordinal(n); got != want {
			t.Errorf("ordinal(%d) = %q, want %q", n, got, want)
		}
	}
}

// fetchJSON posts a form as the script does and decodes its JSON answer.
func (b *bundle) fetchJSON(t *testing.T, path string, form url.Values, v any) int {
	t.Helper()
	rec := b.request(t, http.MethodPost, path, form, map[string]string{"X-Poolflow-Fetch": "1"})
	if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
		t.Fatalf("POST %s: the answer is not JSON (%d): %s", path, rec.Code, rec.Body.String())
	}
	return rec.Code
}

// TestRepairForms: clear, mark, note and delete from the forms, with the script (JSON answers,
// the preview first) and without it (a preview page whose button confirms, redirects).
func TestRepairForms(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.trigger(t, "flaky", "f1")
	if st := b.waitRunEnd(t, "flaky", "f1"); st != "failed" {
		t.Fatalf("run ended %s", st)
	}
	b.release(t, "fixed")
	clear := "/ui/dags/flaky/runs/f1/tasks/extract/clear"

	// Without the script the first post is the preview page, whose form posts again with confirm.
	page := b.request(t, http.MethodPost, clear, url.Values{"downstream": {"1"}}, nil)
	if page.Code != http.StatusOK {
		t.Fatalf("preview page: %d %s", page.Code, page.Body.String())
	}
	for _, w := range []string{"Clear 2 task instances of run f1?", "db × 1", "default × 2", "try 2", "admitted at once",
		`<input type="hidden" name="confirm" value="1">`, `<input type="hidden" name="downstream" value="1">`,
		`action="/ui/dags/flaky/runs/f1/tasks/extract/clear"`} {
		if !strings.Contains(page.Body.String(), w) {
			t.Errorf("preview page: no %q", w)
		}
	}
	// With the script it is JSON: the preview's HTML and the confirm button's words.
	var pv previewResult
	if code := b.fetchJSON(t, clear, url.Values{"downstream": {"1"}}, &pv); code != http.StatusOK || !pv.OK ||
		pv.Confirm != "Clear 2 task instances" || !strings.Contains(pv.Preview, "db × 1") {
		t.Errorf("preview: %d %+v", code, pv)
	}
	// Nothing was cleared by either.
	if st := b.page(t, http.StatusOK, "/ui/dags/flaky/runs/f1/tasks/extract"); !strings.Contains(st, `class="badge st-failed"`) {
		t.Error("a preview changed the task")
	}
	rec := b.request(t, http.MethodPost, clear, url.Values{"downstream": {"1"}, "confirm": {"1"}}, nil)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/ui/dags/flaky/runs/f1/tasks/extract" {
		t.Fatalf("clear: %d %q %s", rec.Code, rec.Header().Get("Location"), rec.Body.String())
	}
	if st := b.waitRunEnd(t, "flaky", "f1"); st != "success" {
		t.Errorf("cleared run ended %s, want success", st)
	}

	// Mark left failed with its downstream: the preview names both, then the run ends failed.
	b.trigger(t, "diamond", "m1")
	b.waitRunEnd(t, "diamond", "m1")
	mark := "/ui/dags/diamond/runs/m1/tasks/left/mark"
	if code := b.fetchJSON(t, mark, url.Values{"new_state": {"failed"}, "downstream": {"1"}}, &pv); code != http.StatusOK ||
		!strings.Contains(pv.Preview, `data-task="left"`) || !strings.Contains(pv.Preview, `data-task="join"`) ||
		strings.Contains(pv.Preview, `data-task="right"`) {
		t.Errorf("mark preview: %d %+v", code, pv)
	}
	var res actionResult
	if code := b.fetchJSON(t, mark, url.Values{"new_state": {"running"}, "confirm": {"1"}}, &res); code != http.StatusBadRequest ||
		res.OK || !strings.Contains(res.Message, `"running" is not one of success, failed, skipped`) {
		t.Errorf("bad state: %d %+v", code, res)
	}
	if code := b.fetchJSON(t, mark, url.Values{"new_state": {"failed"}, "downstream": {"1"}, "confirm": {"1"}}, &res); code != http.StatusOK || !res.OK {
		t.Fatalf("mark: %d %+v", code, res)
	}
	if st := b.waitRunEnd(t, "diamond", "m1"); st != "failed" {
		t.Errorf("marked run ended %s, want failed", st)
	}
	// Mark the run success.
	if code := b.fetchJSON(t, "/ui/dags/diamond/runs/m1/mark", url.Values{"state": {"success"}}, &res); code != http.StatusOK || !res.OK {
		t.Fatalf("mark run: %d %+v", code, res)
	}

	// Notes: who and when.
	if code := b.fetchJSON(t, "/ui/dags/diamond/runs/m1/note", url.Values{"note": {"vendor <fixed> it"}}, &res); code != http.StatusOK || !res.OK {
		t.Fatalf("note: %d %+v", code, res)
	}
	run := b.page(t, http.StatusOK, "/ui/dags/diamond/runs/m1")
	for _, w := range []string{"vendor &lt;fixed&gt; it</textarea>", `<strong class="note-by">api:192.0.2.1</strong>`} {
		if !strings.Contains(run, w) {
			t.Errorf("run page: no %q", w)
		}
	}
	if code := b.fetchJSON(t, "/ui/dags/diamond/runs/m1/tasks/join/note", url.Values{"note": {"by hand"}}, &res); code != http.StatusOK {
		t.Fatalf("task note: %d %+v", code, res)
	}
	if task := b.page(t, http.StatusOK, "/ui/dags/diamond/runs/m1/tasks/join"); !strings.Contains(task, "by hand</textarea>") ||
		!strings.Contains(task, "api:192.0.2.1") {
		t.Error("task page: no note with its author")
	}

	// Delete: back to the DAG page, and the run is gone.
	rec = b.request(t, http.MethodPost, "/ui/dags/diamond/runs/m1/delete", url.Values{}, nil)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/ui/dags/diamond" {
		t.Fatalf("delete: %d %q %s", rec.Code, rec.Header().Get("Location"), rec.Body.String())
	}
	b.page(t, http.StatusNotFound, "/ui/dags/diamond/runs/m1")
	if code := b.fetchJSON(t, "/ui/dags/diamond/runs/m1/delete", url.Values{}, &res); code != http.StatusNotFound || res.OK {
		t.Errorf("second delete: %d %+v", code, res)
	}

	// The events page lists each with its actor.
	events := b.page(t, http.StatusOK, "/ui/events?actor=api:192.0.2.1")
	for _, ev := range []vocab.Action{vocab.ActionClear, vocab.ActionMark, vocab.ActionNote, vocab.ActionDeleteRun} {
		if !strings.Contains(events, `data-event="`+string(ev)+`"`) {
			t.Errorf("events page: no %s event of api:192.0.2.1", ev)
		}
	}
}

// TestRepairNeedsToken: with a token, every repair action is refused until the user signs in.
func TestRepairNeedsToken(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken})
	b.trigger(t, "diamond", "r1")
	b.waitRunEnd(t, "diamond", "r1")
	for _, path := range []string{"/ui/dags/diamond/runs/r1/tasks/left/clear", "/ui/dags/diamond/runs/r1/tasks/left/mark",
		"/ui/dags/diamond/runs/r1/tasks/left/note", "/ui/dags/diamond/runs/r1/clear", "/ui/dags/diamond/runs/r1/mark",
		"/ui/dags/diamond/runs/r1/note", "/ui/dags/diamond/runs/r1/delete"} {
		var res actionResult
		if code := b.fetchJSON(t, path, url.Values{"new_state": {"success"}, "state": {"success"}}, &res); code != http.StatusUnauthorized ||
			!strings.Contains(res.Message, "Sign in") {
			t.Errorf("%s: %d %+v", path, code, res)
		}
		if rec := b.request(t, http.MethodPost, path, url.Values{}, map[string]string{"Origin": "http://evil.example"}); rec.Code != http.StatusForbidden {
			t.Errorf("%s from another site: %d", path, rec.Code)
		}
	}
	if rec := b.get(t, "/ui/dags/diamond/runs/r1"); rec.Code != http.StatusSeeOther { // a page asks to sign in
		t.Errorf("the run page without sign-in: %d", rec.Code)
	}
}
