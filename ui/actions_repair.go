package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/poolflow/poolflow/vocab"
)

// Repairing runs (§10): clear, mark, notes and deletion, from the task and run pages. Each is
// a form post sent through the API's own routes (server.Call). A clear and a task's mark are
// asked twice: the first post (no confirm field) sends the API's dry run and answers with its
// preview, the second (confirm=1) does it. The script shows the preview in a dialog and posts
// again when the user confirms; without the script the preview is a page whose button posts
// again.

// previewResult is the script's answer to a first post: the preview's HTML (the template
// "preview") and the words of its confirm button.
type previewResult struct {
	OK      bool   `json:"ok"`
	Preview string `json:"preview"`
	Confirm string `json:"confirm"`
	Message string `json:"message,omitempty"`
}

// previewData is the preview of a clear or a mark: what it would do, for the dialog and the
// page without script.
type previewData struct {
	Verb    string // clear | mark
	Title   string // "Clear 3 task instances of run r1?"
	Notes   []string
	Clear   []clearRow
	Mark    []markRow
	State   vocab.TaskState // a mark's new state
	Confirm string          // the confirm button's words
	Danger  bool            // the confirm button is red (mark failed, skipped)
	// The form that does it: the same action with the same fields and confirm=1.
	Action string
	Fields map[string]string
	Back   string
	Empty  string // what to say when it would change nothing
	// Backfill is a backfill's dry run (verb backfill, §11).
	Backfill *backfillPreview
}

// checked reads a form checkbox: present and not "0", "false" or "off".
func checked(r *http.Request, name string) bool {
	switch v := r.PostFormValue(name); v {
	case "", "0", "false", "off":
		return false
	}
	return true
}

func confirmed(r *http.Request) bool { return r.PostFormValue("confirm") == "1" }

// showPreview answers a first post with its preview: JSON for the script, else a page.
func (u *UI) showPreview(w http.ResponseWriter, r *http.Request, p previewData) {
	if fromScript(r) {
		var sb strings.Builder
		if err := u.pages["preview"].ExecuteTemplate(&sb, "preview", p); err != nil {
			u.log.Error("ui: render preview", "err", err)
			writeResult(w, http.StatusInternalServerError, actionResult{Message: "internal error"})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(previewResult{OK: true, Preview: sb.String(), Confirm: p.Confirm})
		return
	}
	u.render(w, r, http.StatusOK, "preview", p.Title, "dags", p)
}

// fields are a form's values to post again with confirm=1.
func fields(r *http.Request, names ...string) map[string]string {
	out := map[string]string{"confirm": "1"}
	for _, n := range names {
		if v := r.PostFormValue(n); v != "" {
			out[n] = v
		}
	}
	return out
}

// clearTask is the task page's Clear: the task instance, with its downstream and upstream
// when asked, only the failed ones when asked (POST /api/v1/dags/{dag}/clearTaskInstances).
func (u *UI) clearTask(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	dag, run, task := v["dag"], v["run"], v["task"]
	if !u.mayAct(w, r) {
		return
	}
	body := clearBody{DAGRunID: run, TaskIDs: []string{task}, OnlyFailed: checked(r, "only_failed"),
		IncludeDownstream: checked(r, "downstream"), IncludeUpstream: checked(r, "upstream"), DryRun: !confirmed(r)}
	here := taskPath(dag, run, task)
	u.clear(w, r, apiPath("dags", dag)+"/clearTaskInstances", body, clearScope{dag: dag, run: run, task: task,
		back: here, action: here + "/clear", fields: []string{"downstream", "upstream", "only_failed"}})
}

// clearRun is the run page's Clear run and Clear failed tasks (only_failed=1):
// POST /api/v1/dags/{dag}/dagRuns/{run}/clear.
func (u *UI) clearRun(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	dag, run := v["dag"], v["run"]
	if !u.mayAct(w, r) {
		return
	}
	body := runClearBody{DryRun: !confirmed(r), OnlyFailed: checked(r, "only_failed")}
	here := runPath(dag, run)
	u.clear(w, r, apiPath("dags", dag, "dagRuns", run)+"/clear", body, clearScope{dag: dag, run: run, back: here,
		action: here + "/clear", fields: []string{"only_failed"}, onlyFailed: body.OnlyFailed})
}

type clearScope struct {
	dag, run, task string
	back, action   string
	fields         []string
	onlyFailed     bool
}

func (u *UI) clear(w http.ResponseWriter, r *http.Request, path string, body any, sc clearScope) {
	status, data, ok := u.callAPI(w, r, http.MethodPost, path, body)
	if !ok {
		return
	}
	if confirmed(r) {
		n := len(decodeClear(data))
		msg := fmt.Sprintf("Cleared %d task %s of run %s: %s again.", n, plural(n, "instance", "instances"), sc.run,
			plural(n, "it runs", "they run"))
		if n == 0 {
			msg = "Nothing to clear: no task instance matched."
		}
		if status == http.StatusAccepted {
			msg = "The clear was sent to the daemon that owns run " + sc.run + "; it applies it shortly."
		}
		u.done(w, r, status, msg, sc.back)
		return
	}
	rows := decodeClear(data)
	p := previewData{Verb: "clear", Clear: rows, Action: sc.action, Fields: fields(r, sc.fields...), Back: sc.back}
	switch {
	case sc.task != "":
		p.Title = fmt.Sprintf("Clear %s of run %s?", sc.task, sc.run)
		if len(rows) != 1 {
			p.Title = fmt.Sprintf("Clear %d task instances of run %s?", len(rows), sc.run)
		}
	case sc.onlyFailed:
		p.Title = fmt.Sprintf("Clear the %d failed task %s of run %s?", len(rows), plural(len(rows), "instance", "instances"), sc.run)
	default:
		p.Title = fmt.Sprintf("Clear run %s (%d task %s)?", sc.run, len(rows), plural(len(rows), "instance", "instances"))
	}
	p.Confirm = fmt.Sprintf("Clear %d task instances", len(rows))
	if len(rows) == 1 {
		p.Confirm = "Clear " + rows[0].TaskID
	}
	p.Notes = clearNotes(rows)
	if len(rows) == 0 {
		p.Title, p.Confirm, p.Notes = "Nothing to clear", "", nil
		p.Empty = "No task instance matches: with only failed, only failed and upstream_failed ones are cleared."
		if sc.onlyFailed {
			p.Empty = "No task instance of run " + sc.run + " has failed."
		}
	}
	u.showPreview(w, r, p)
}

// clearNotes say what a clear does beyond sending the tasks back to run.
func clearNotes(rows []clearRow) []string {
	running := 0
	for _, c := range rows {
		if c.State == vocab.TaskRunning {
			running++
		}
	}
	notes := []string{"Each runs again under the DAG's current definition" + versionWords(rows) +
		", with a fresh set of retries; earlier attempts and their logs stay."}
	if running > 0 {
		notes = append(notes, fmt.Sprintf("%d %s running: %s stopped first and %s up no retry.", running,
			plural(running, "is", "are"), plural(running, "it is", "they are"), plural(running, "uses", "use")))
	}
	return notes
}

// markTask is the task page's Mark success / failed / skipped, with its downstream and
// upstream when asked: PATCH .../taskInstances/{task} with new_state.
func (u *UI) markTask(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	dag, run, task := v["dag"], v["run"], v["task"]
	if !u.mayAct(w, r) {
		return
	}
	state := vocab.TaskState(r.PostFormValue("new_state"))
	body := markBody{NewState: state, IncludeDownstream: checked(r, "downstream"), IncludeUpstream: checked(r, "upstream"),
		DryRun: !confirmed(r)}
	here := taskPath(dag, run, task)
	status, data, ok := u.callAPI(w, r, http.MethodPatch, apiPath("dags", dag, "dagRuns", run, "taskInstances", task), body)
	if !ok {
		return
	}
	if confirmed(r) {
		msg := fmt.Sprintf("%s marked %s.", task, words(state))
		if status == http.StatusAccepted {
			msg = "The mark was sent to the daemon that owns run " + run + "; it applies it shortly."
		}
		u.done(w, r, status, msg, here)
		return
	}
	rows := decodeMark(data, task)
	p := previewData{Verb: "mark", Mark: rows, State: state, Action: here + "/mark", Back: here,
		Fields: fields(r, "new_state", "downstream", "upstream"), Danger: state != vocab.TaskSuccess}
	p.Title = fmt.Sprintf("Mark %s %s?", task, words(state))
	if len(rows) != 1 {
		p.Title = fmt.Sprintf("Mark %d task instances of run %s %s?", len(rows), run, words(state))
	}
	p.Confirm = "Mark " + words(state)
	p.Notes = []string{"A marked task ends with that state and no further retry; a running attempt is stopped first. " +
		"Downstream tasks then follow their trigger rules."}
	u.showPreview(w, r, p)
}

// markRun is the run page's Mark run success / failed: PATCH .../dagRuns/{run} with state.
func (u *UI) markRun(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	dag, run := v["dag"], v["run"]
	if !u.mayAct(w, r) {
		return
	}
	state := vocab.RunState(r.PostFormValue("state"))
	status, _, ok := u.callAPI(w, r, http.MethodPatch, apiPath("dags", dag, "dagRuns", run), map[string]any{"state": state})
	if !ok {
		return
	}
	msg := fmt.Sprintf("Run %s marked %s.", run, words(state))
	if status == http.StatusAccepted {
		msg = "The mark was sent to the daemon that owns run " + run + "; it applies it shortly."
	}
	u.done(w, r, status, msg, runPath(dag, run))
}

// noteTask and noteRun write a note (§10.3): PATCH .../taskInstances/{task} or .../dagRuns/{run}
// with only note.
func (u *UI) noteTask(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	u.note(w, r, apiPath("dags", v["dag"], "dagRuns", v["run"], "taskInstances", v["task"]),
		taskPath(v["dag"], v["run"], v["task"]))
}

func (u *UI) noteRun(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	u.note(w, r, apiPath("dags", v["dag"], "dagRuns", v["run"]), runPath(v["dag"], v["run"]))
}

func (u *UI) note(w http.ResponseWriter, r *http.Request, path, here string) {
	if !u.mayAct(w, r) {
		return
	}
	note := strings.TrimSpace(r.PostFormValue("note"))
	status, _, ok := u.callAPI(w, r, http.MethodPatch, path, map[string]string{"note": note})
	if !ok {
		return
	}
	msg := "Note saved."
	if note == "" {
		msg = "Note removed."
	}
	u.done(w, r, status, msg, here)
}

// deleteRun is the run page's Delete run: DELETE .../dagRuns/{run}, with force=true when the
// form says an attempt runs (it is stopped first). It returns to the DAG page.
func (u *UI) deleteRun(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	dag, run := v["dag"], v["run"]
	if !u.mayAct(w, r) {
		return
	}
	path := apiPath("dags", dag, "dagRuns", run)
	if checked(r, "force") {
		path += "?force=true"
	}
	status, _, ok := u.callAPI(w, r, http.MethodDelete, path, nil)
	if !ok {
		return
	}
	msg := "Run " + run + " deleted with its task instances, attempts and logs."
	if status == http.StatusAccepted {
		msg = "Run " + run + " is being deleted: its running attempts are stopped first."
	}
	u.done(w, r, status, msg, dagPath(dag))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func words[S ~string](s S) string { return strings.ReplaceAll(string(s), "_", " ") }

// versionWords names the version a clear runs (§12), and the run's when it is another: " (version
// 3; this run was created with version 2)".
func versionWords(rows []clearRow) string {
	if len(rows) == 0 || rows[0].DAGVersion == nil {
		return ""
	}
	now := *rows[0].DAGVersion
	if run := rows[0].RunDAGVersion; run != nil && *run != now {
		return fmt.Sprintf(" (version %d; this run was created with version %d)", now, *run)
	}
	return fmt.Sprintf(" (version %d, the run's own)", now)
}
