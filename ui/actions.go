package ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/vocab"
)

// Actions are form posts. Each goes through the API's own handler (server.Call) or its command
// path (server.Command), with the token of the sign-in cookie. The script of app.js sends them
// with the header X-Poolflow-Fetch and gets JSON back, so the page stays and shows the answer
// next to the form; without the script, success redirects and a refusal is a page saying why.

type actionResult struct {
	OK       bool   `json:"ok"`
	Message  string `json:"message"`
	Location string `json:"location,omitempty"`
}

func fromScript(r *http.Request) bool { return r.Header.Get("X-Poolflow-Fetch") == "1" }

// done answers a successful action.
func (u *UI) done(w http.ResponseWriter, r *http.Request, status int, msg, location string) {
	if status == http.StatusNoContent { // the API's answer had no body; the script's has one
		status = http.StatusOK
	}
	if fromScript(r) {
		writeResult(w, status, actionResult{OK: true, Message: msg, Location: location})
		return
	}
	http.Redirect(w, r, location, http.StatusSeeOther)
}

type actionData struct {
	Status  int
	Message string
	Back    string
	SignIn  bool
}

// actionError answers a refused action with the API's status and message.
func (u *UI) actionError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if fromScript(r) {
		writeResult(w, status, actionResult{Message: msg})
		return
	}
	back := safeNext(r.Referer())
	if ref := r.Referer(); ref != "" {
		if i := strings.Index(ref, "/ui/"); i >= 0 {
			back = safeNext(ref[i:])
		}
	}
	u.render(w, r, status, "action", "Action refused", "", actionData{Status: status, Message: msg, Back: back,
		SignIn: status == http.StatusUnauthorized})
}

func writeResult(w http.ResponseWriter, status int, res actionResult) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(res)
}

// mayAct refuses an action when a token is configured and the request has not signed in.
func (u *UI) mayAct(w http.ResponseWriter, r *http.Request) bool {
	if u.canAct(r) {
		return true
	}
	u.actionError(w, r, http.StatusUnauthorized, "Sign in with the API token first: this server needs it for actions.")
	return false
}

// callAPI sends the action to the API and turns a refusal into the action's answer.
func (u *UI) callAPI(w http.ResponseWriter, r *http.Request, method, path string, body any) (int, []byte, bool) {
	status, data := u.api.Call(r.Context(), method, path, body, "")
	if status >= 300 {
		u.actionError(w, r, status, upperFirst(server.ProblemDetail(data)))
		return status, data, false
	}
	return status, data, true
}

type triggerBody struct {
	DAGRunID *string         `json:"dag_run_id,omitempty"`
	Conf     json.RawMessage `json:"conf,omitempty"`
	Queue    bool            `json:"queue"`
}

// trigger is the DAG page's form: conf (a JSON object), an optional run id and whether to wait
// in the queue when pools are full.
func (u *UI) trigger(w http.ResponseWriter, r *http.Request) {
	dag := mux.Vars(r)["dag"]
	if !u.mayAct(w, r) {
		return
	}
	body := triggerBody{Queue: r.PostFormValue("queue") != "no"}
	if conf := strings.TrimSpace(r.PostFormValue("conf")); conf != "" {
		if !json.Valid([]byte(conf)) {
			var v any
			err := json.Unmarshal([]byte(conf), &v)
			u.actionError(w, r, http.StatusBadRequest, "conf: not valid JSON ("+strings.TrimPrefix(err.Error(), "json: ")+")")
			return
		}
		body.Conf = json.RawMessage(conf)
	}
	if id := strings.TrimSpace(r.PostFormValue("run_id")); id != "" {
		body.DAGRunID = &id
	}
	status, data, ok := u.callAPI(w, r, http.MethodPost, apiPath("dags", dag, "dagRuns"), body)
	if !ok {
		return
	}
	var res server.TriggerJSON
	_ = json.Unmarshal(data, &res)
	msg := "Run " + res.DAGRunID + " started."
	if res.Queued {
		msg = fmt.Sprintf("Run %s started; a task waits for pool %s (queue ID %d).", res.DAGRunID, res.Pool, res.QueueID)
	}
	u.done(w, r, status, msg, runPath(dag, res.DAGRunID))
}

// pause sets or clears a DAG's paused flag (paused=true|false).
func (u *UI) pause(w http.ResponseWriter, r *http.Request) {
	dag := mux.Vars(r)["dag"]
	if !u.mayAct(w, r) {
		return
	}
	paused := r.PostFormValue("paused") == "true"
	status, _, ok := u.callAPI(w, r, http.MethodPatch, apiPath("dags", dag), map[string]bool{"is_paused": paused})
	if !ok {
		return
	}
	msg := dag + " unpaused: scheduled runs start again."
	if paused {
		msg = dag + " paused: no new scheduled runs; waiting tasks wait with reason paused."
	}
	u.done(w, r, status, msg, back(r, dagPath(dag)))
}

// taskAction is approve, reject (with a note), fail (mark failed, as `tasks fail`) and cancel
// (the task's waiting queue entry, as the pools page's cancel).
func (u *UI) taskAction(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	dag, run, task, action := v["dag"], v["run"], v["task"], vocab.CommandKind(v["action"])
	if !u.mayAct(w, r) {
		return
	}
	here := taskPath(dag, run, task)
	switch action {
	case vocab.CommandApprove, vocab.CommandReject:
		body := map[string]string{"note": r.PostFormValue("note")}
		status, _, ok := u.callAPI(w, r, http.MethodPost, apiPath("dags", dag, "dagRuns", run, "taskInstances", task)+"/"+string(action), body)
		if ok {
			u.done(w, r, status, fmt.Sprintf("%s %sd.", task, action), here)
		}
		return
	case vocab.CommandCancel:
		d, err := u.api.TaskInstance(r.Context(), dag, run, task)
		if err != nil {
			status, msg := u.api.StatusOf(err)
			u.actionError(w, r, status, upperFirst(msg))
			return
		}
		if d.Entry == nil || d.Entry.State != vocab.EntryWaiting {
			u.actionError(w, r, http.StatusConflict, task+" has no waiting queue entry to cancel.")
			return
		}
		u.cancel(w, r, firstPool(d.View.Requirements), d.Entry.ID, here)
		return
	}
	err := u.api.Command(r.Context(), dag, run, task, action, r.PostFormValue("note"))
	if errors.Is(err, server.ErrCommandPending) {
		u.done(w, r, http.StatusAccepted, upperFirst(err.Error())+".", here)
		return
	}
	if err != nil {
		status, msg := u.api.StatusOf(err)
		u.actionError(w, r, status, upperFirst(msg))
		return
	}
	u.done(w, r, http.StatusOK, task+" marked failed.", here)
}

// cancelEntry is the pools page's cancel of a waiting entry.
func (u *UI) cancelEntry(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	if !u.mayAct(w, r) {
		return
	}
	id, err := strconv.ParseInt(v["id"], 10, 64)
	if err != nil {
		u.actionError(w, r, http.StatusNotFound, "No queue entry "+v["id"]+".")
		return
	}
	u.cancel(w, r, v["pool"], id, back(r, "/ui/pools"))
}

func (u *UI) cancel(w http.ResponseWriter, r *http.Request, pool string, id int64, location string) {
	path := "/pools/" + escape(pool) + "/queue/" + strconv.FormatInt(id, 10) + "/cancel"
	status, _, ok := u.callAPI(w, r, http.MethodPost, path, nil)
	if !ok {
		return
	}
	msg := fmt.Sprintf("Queue entry %d cancelled: its attempt failed and follows the retry policy.", id)
	if status == http.StatusAccepted {
		msg = fmt.Sprintf("Cancel of queue entry %d sent to the daemon that owns its run.", id)
	}
	u.done(w, r, status, msg, location)
}

// back is where a form returns: the form's "back" field when it is a UI path, else def.
func back(r *http.Request, def string) string {
	if b := r.PostFormValue("back"); strings.HasPrefix(b, "/ui/") {
		return safeNext(b)
	}
	return def
}

func firstPool(reqs map[string]int) string {
	best := ""
	for p := range reqs {
		if best == "" || p < best {
			best = p
		}
	}
	return best
}
