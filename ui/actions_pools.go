package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/vocab"
)

// Creating, resizing and deleting a pool from the pools page (issue 21; the admin's pools
// permission, §15). Each goes through the API's own routes (POST, PATCH and DELETE
// /api/v1/pools) and is asked twice like a clear: the first post answers with what it will do
// (the preview dialog, or a page without the script), the second (confirm=1) does it. A pool of
// poolflow.yaml is read-only here, as over the API. A shrink below the slots held now, or a
// delete of a pool that holds slots, needs force (§4.1): the preview says what happens then
// (§4.7: running attempts keep their slots, nobody new starts until the pool is under its new
// size) and its confirm button forces it; a loaded DAG that needs more slots is the API's
// refusal, shown beside the form, whose force box overrides it.

// apiPool is what the previews read of a pool: GET /api/v1/pools/{name}.
type apiPool struct {
	Name          string         `json:"name"`
	Slots         int            `json:"slots"`
	OccupiedSlots int            `json:"occupied_slots"`
	QueuedEntries int            `json:"queued_entries"`
	Description   *string        `json:"description"`
	Ordering      vocab.Ordering `json:"ordering"`
	OnResize      vocab.OnResize `json:"on_resize"`
	DrainingTo    *int           `json:"draining_to"`
	Source        string         `json:"source"`
	Teams         []string       `json:"teams"`
}

// poolForm is the create and change forms' fields, as the API's body.
type poolForm struct {
	Name        *string   `json:"name,omitempty"`
	Slots       *int      `json:"slots,omitempty"`
	Description *string   `json:"description,omitempty"`
	Ordering    *string   `json:"ordering,omitempty"`
	Teams       *[]string `json:"teams,omitempty"`
}

// readPoolForm reads the form's fields; a bad one is a 400 naming it.
func readPoolForm(r *http.Request) (poolForm, string) {
	var f poolForm
	if s := strings.TrimSpace(r.PostFormValue("slots")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < -1 {
			return f, "slots: want a whole number of slots, or -1 for unlimited (got " + strconv.Quote(s) + ")"
		}
		f.Slots = &n
	}
	if _, ok := r.PostForm["description"]; ok {
		d := strings.TrimSpace(r.PostFormValue("description"))
		f.Description = &d
	}
	if o := r.PostFormValue("ordering"); o != "" {
		f.Ordering = &o
	}
	if _, ok := r.PostForm["teams"]; ok {
		teams := []string{}
		for t := range strings.FieldsFuncSeq(r.PostFormValue("teams"), func(c rune) bool { return c == ',' || c == ' ' }) {
			teams = append(teams, t)
		}
		f.Teams = &teams
	}
	return f, ""
}

func slotWords(n int) string {
	if n < 0 {
		return "unlimited slots"
	}
	return count(n, "slot", "slots")
}

// count is n with its noun: "1 slot is", "3 slots are".
func count(n int, one, many string) string { return strconv.Itoa(n) + " " + plural(n, one, many) }

func teamWords(teams []string) string {
	if len(teams) == 0 {
		return "every team"
	}
	return "team " + strings.Join(teams, ", ")
}

// readPool reads a pool through the API, answering the action's refusal when it cannot.
func (u *UI) readPool(w http.ResponseWriter, r *http.Request, name string) (apiPool, bool) {
	status, data := u.api.Call(r.Context(), http.MethodGet, apiPath("pools", name), nil, "")
	if status != http.StatusOK {
		u.actionError(w, r, status, upperFirst(server.ProblemDetail(data)))
		return apiPool{}, false
	}
	var p apiPool
	_ = json.Unmarshal(data, &p)
	return p, true
}

// fileReadOnly says why a pool cannot be changed here ("" when it can).
func fileReadOnly(name, source string) string {
	switch {
	case source == "store":
		return ""
	case name == "default":
		return "The default pool belongs to the configuration: set pools.default in poolflow.yaml."
	}
	return "Pool " + name + " is defined in poolflow.yaml: it is read-only here; change it in the file (the daemon reloads it)."
}

// createPool is the pools page's New pool form (POST /api/v1/pools).
func (u *UI) createPool(w http.ResponseWriter, r *http.Request) {
	if !u.mayAct(w, r) {
		return
	}
	f, bad := readPoolForm(r)
	name := strings.TrimSpace(r.PostFormValue("name"))
	switch {
	case bad != "":
		u.actionError(w, r, http.StatusBadRequest, bad)
		return
	case name == "":
		u.actionError(w, r, http.StatusBadRequest, "name: required")
		return
	case f.Slots == nil:
		u.actionError(w, r, http.StatusBadRequest, "slots: required")
		return
	}
	f.Name = &name
	if !confirmed(r) {
		notes := []string{slotWords(*f.Slots) + ", ordering " + orText(f.Ordering, "backfill") + ", open to " + teamWords(derefTeams(f.Teams)) + "."}
		if f.Description != nil && *f.Description != "" {
			notes = append(notes, "Description: "+*f.Description)
		}
		notes = append(notes, "It is kept in the store, like `poolflow pools set`; DAGs may name it at once.")
		u.showPreview(w, r, previewData{Verb: "pool", Title: "Create pool " + name + "?", Notes: notes,
			Confirm: "Create pool " + name, Action: "/ui/pools/new", Back: "/ui/pools",
			Fields: fields(r, "name", "slots", "ordering", "description", "teams")})
		return
	}
	status, _, ok := u.callAPI(w, r, http.MethodPost, apiPath("pools"), f)
	if ok {
		u.done(w, r, status, "Pool "+name+" created with "+slotWords(*f.Slots)+".", poolPath(name))
	}
}

// setPool is a stored pool's Change form: its slots, description and teams (PATCH).
func (u *UI) setPool(w http.ResponseWriter, r *http.Request) {
	name := mux.Vars(r)["pool"]
	if !u.mayAct(w, r) {
		return
	}
	f, bad := readPoolForm(r)
	if bad != "" {
		u.actionError(w, r, http.StatusBadRequest, bad)
		return
	}
	p, ok := u.readPool(w, r, name)
	if !ok {
		return
	}
	if why := fileReadOnly(name, p.Source); why != "" {
		u.actionError(w, r, http.StatusConflict, why)
		return
	}
	size := p.Slots
	if p.DrainingTo != nil {
		size = *p.DrainingTo
	}
	force := checked(r, "force")
	if !confirmed(r) {
		var notes []string
		shrink := false
		if f.Slots != nil && *f.Slots != size {
			notes = append(notes, fmt.Sprintf("Slots: %d → %s.", size, slotWords(*f.Slots)))
			if *f.Slots >= 0 && p.OccupiedSlots > *f.Slots {
				shrink, force = true, true
				notes = append(notes, fmt.Sprintf("%s held now, more than %d. Running attempts keep their slots: "+
					"nobody is thrown off, and nobody new starts in %s until fewer than %d are in use. "+
					"Confirming forces the shrink.", count(p.OccupiedSlots, "slot is", "slots are"), *f.Slots, name, *f.Slots))
			}
			if p.OnResize == vocab.ResizeDrain && p.QueuedEntries > 0 {
				notes = append(notes, fmt.Sprintf("%s drains first (on_resize: drain): its %s are admitted at %d slots "+
					"and new entries are refused meanwhile; then it has %s.", name,
					count(p.QueuedEntries, "waiting entry", "waiting entries"), p.Slots, slotWords(*f.Slots)))
			}
		}
		if f.Teams != nil && strings.Join(*f.Teams, ",") != strings.Join(p.Teams, ",") {
			notes = append(notes, "Open to: "+teamWords(p.Teams)+" → "+teamWords(*f.Teams)+".")
		}
		if f.Description != nil && *f.Description != deref(p.Description) {
			notes = append(notes, "Description: "+orText(f.Description, "(none)"))
		}
		if force && !shrink {
			notes = append(notes, "Forced: even if a loaded DAG needs more slots than it will have.")
		}
		if len(notes) == 0 {
			u.showPreview(w, r, previewData{Verb: "pool", Title: "Change pool " + name + "?", Back: "/ui/pools",
				Empty: "Nothing would change: the form has the pool's settings."})
			return
		}
		fs := fields(r, "slots", "description", "teams")
		if force {
			fs["force"] = "1"
		}
		u.showPreview(w, r, previewData{Verb: "pool", Title: "Change pool " + name + "?", Notes: notes, Danger: shrink,
			Confirm: "Change " + name, Action: "/ui/pools/" + escape(name) + "/set", Back: poolPath(name), Fields: fs})
		return
	}
	path := apiPath("pools", name)
	if force {
		path += "?force=true"
	}
	status, _, ok := u.callAPI(w, r, http.MethodPatch, path, f)
	if ok {
		u.done(w, r, status, "Pool "+name+" changed.", poolPath(name))
	}
}

// deletePool is a stored pool's Delete button (DELETE /api/v1/pools/{name}).
func (u *UI) deletePool(w http.ResponseWriter, r *http.Request) {
	name := mux.Vars(r)["pool"]
	if !u.mayAct(w, r) {
		return
	}
	p, ok := u.readPool(w, r, name)
	if !ok {
		return
	}
	if why := fileReadOnly(name, p.Source); why != "" {
		u.actionError(w, r, http.StatusConflict, why)
		return
	}
	force := checked(r, "force")
	if !confirmed(r) {
		notes := []string{"Its settings are gone; a DAG that names it no longer loads until it is created again."}
		if p.QueuedEntries > 0 {
			notes = append(notes, count(p.QueuedEntries, "entry waits", "entries wait")+" for it: "+
				"they are rejected (their pool no longer exists) and follow their retry policy.")
		}
		if p.OccupiedSlots > 0 {
			force = true
			notes = append(notes, count(p.OccupiedSlots, "slot is", "slots are")+" held now: the attempts holding them "+
				"keep running. Confirming forces the delete.")
		} else if force {
			notes = append(notes, "Forced: even if a loaded DAG needs it.")
		}
		fs := map[string]string{"confirm": "1"}
		if force {
			fs["force"] = "1"
		}
		u.showPreview(w, r, previewData{Verb: "pool", Title: "Delete pool " + name + "?", Notes: notes, Danger: true,
			Confirm: "Delete " + name, Action: "/ui/pools/" + escape(name) + "/delete", Back: poolPath(name), Fields: fs})
		return
	}
	path := apiPath("pools", name)
	if force {
		path += "?force=true"
	}
	status, _, ok := u.callAPI(w, r, http.MethodDelete, path, nil)
	if ok {
		u.done(w, r, status, "Pool "+name+" deleted.", "/ui/pools")
	}
}

func derefTeams(p *[]string) []string {
	if p == nil {
		return nil
	}
	return *p
}

func orText(s *string, def string) string {
	if s == nil || *s == "" {
		return def
	}
	return *s
}
