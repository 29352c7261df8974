package ui

import (
	"encoding/json"
	"net/http"

	"github.com/gorilla/mux"
)

// The graph's live view of its run (static/graph.js): the run's state and each task's state,
// try and wait reason, as compact JSON. A 500-task run is about 15 KB of it, 2 KB gzipped, and a
// 304 while nothing changed (the ETag of server/compress.go), so following a big run costs a
// few hundred bytes a second instead of the whole page.

// runStates is the answer of GET /ui/dags/{dag}/runs/{run}/states.
type runStates struct {
	Run  string `json:"run"`
	Open bool   `json:"open"` // the run may still change: keep following it
	// Tasks maps a task id to [state, try] or [state, try, why it waits].
	Tasks map[string][]any `json:"tasks"`
}

func (u *UI) runStatesJSON(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	run, err := u.api.Run(r.Context(), v["dag"], v["run"])
	if err != nil {
		status, msg := u.api.StatusOf(err)
		http.Error(w, msg, status)
		return
	}
	views, err := u.api.TaskInstances(r.Context(), run)
	if err != nil {
		status, msg := u.api.StatusOf(err)
		http.Error(w, msg, status)
		return
	}
	out := runStates{Run: string(run.State), Open: run.State.Open(), Tasks: make(map[string][]any, len(views))}
	for _, ti := range views {
		t := []any{ti.State, ti.TryNumber}
		if ti.WaitReason != nil {
			t = append(t, ti.WaitReason.Text)
		} else if ti.Reason != nil {
			t = append(t, *ti.Reason)
		}
		out.Tasks[ti.TaskID] = t
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache, private")
	h.Set("X-Content-Type-Options", "nosniff")
	_ = json.NewEncoder(w).Encode(out)
}
