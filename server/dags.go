package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// DAGJSON is Airflow's DAG object, plus the fields of its DAGDetail that poolflow has and our
// own (concurrency_policy, is_job).
type DAGJSON struct {
	DAGID                    string         `json:"dag_id"`
	Description              *string        `json:"description"`
	FileLoc                  string         `json:"fileloc"`
	IsPaused                 bool           `json:"is_paused"`
	IsActive                 bool           `json:"is_active"`
	Owners                   []string       `json:"owners"`
	Tags                     []TagJSON      `json:"tags"`
	ScheduleInterval         *ScheduleJSON  `json:"schedule_interval"`
	StartDate                *time.Time     `json:"start_date"`
	Catchup                  bool           `json:"catchup"`
	EveryNode                bool           `json:"every_node"`
	MaxActiveRuns            int            `json:"max_active_runs"`
	MaxActiveTasks           int            `json:"max_active_tasks"`
	HasTaskConcurrencyLimits bool           `json:"has_task_concurrency_limits"`
	HasImportErrors          bool           `json:"has_import_errors"`
	Params                   map[string]any `json:"params"`
	ConcurrencyPolicy        string         `json:"concurrency_policy"`
	IsJob                    bool           `json:"is_job"`
	TaskIDs                  []string       `json:"task_ids"`
	// DAGVersion is its current version (§12): the one the last load recorded; null when none.
	DAGVersion *int `json:"dag_version"`
}

// TagJSON is a DAG tag in Airflow's shape.
type TagJSON struct {
	Name string `json:"name"`
}

// ScheduleJSON is Airflow's ScheduleInterval; every poolflow schedule (cron, @daily, @every,
// @reboot) is reported as a CronExpression holding the text as written.
type ScheduleJSON struct {
	Type  string `json:"__type"`
	Value string `json:"value"`
}

type dagCollection struct {
	DAGs         []DAGJSON `json:"dags"`
	TotalEntries int       `json:"total_entries"`
}

func ts(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func strOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func codeOrNil(c vocab.ReasonCode) *vocab.ReasonCode {
	if c == "" {
		return nil
	}
	return &c
}

func dagView(d *dag.DAG, row store.DAGRow) DAGJSON {
	v := DAGJSON{DAGID: d.ID, Description: strOrNil(d.Description), FileLoc: d.File, IsPaused: row.Paused, IsActive: true,
		Owners: []string{}, Tags: []TagJSON{}, StartDate: ts(d.StartDate), Catchup: d.Catchup, EveryNode: d.EveryNode, MaxActiveRuns: d.MaxActiveRuns,
		MaxActiveTasks: d.MaxActiveTasks, Params: d.Params, ConcurrencyPolicy: d.ConcurrencyPolicy, IsJob: d.IsJob,
		TaskIDs: []string{}, DAGVersion: intOrNil(row.Version)}
	if d.Owner != "" {
		v.Owners = []string{d.Owner}
	}
	for _, t := range d.Tags {
		v.Tags = append(v.Tags, TagJSON{Name: t})
	}
	if d.Schedule != "" {
		v.ScheduleInterval = &ScheduleJSON{Type: "CronExpression", Value: d.Schedule}
	}
	if v.Params == nil {
		v.Params = map[string]any{}
	}
	if v.ConcurrencyPolicy == "" {
		v.ConcurrencyPolicy = dag.PolicyAllow
	}
	for _, t := range d.Tasks {
		v.TaskIDs = append(v.TaskIDs, t.ID)
		v.HasTaskConcurrencyLimits = v.HasTaskConcurrencyLimits || t.MaxActiveTIsPerDAG > 0 || t.MaxActiveTIsPerDAGRun > 0
	}
	return v
}

// inactiveView is a DAG the store knows but that is not loaded now (removed, or broken).
func inactiveView(row store.DAGRow, broken bool) DAGJSON {
	v := DAGJSON{DAGID: row.DAGID, FileLoc: row.File, IsPaused: row.Paused, Owners: []string{}, Tags: []TagJSON{},
		Params: map[string]any{}, ConcurrencyPolicy: dag.PolicyAllow, HasImportErrors: broken, TaskIDs: []string{},
		DAGVersion: intOrNil(row.Version)}
	if row.Schedule != "" {
		v.ScheduleInterval = &ScheduleJSON{Type: "CronExpression", Value: row.Schedule}
	}
	return v
}

// loadedDAGs returns the DAGs the daemon has loaded, by id.
func (s *Server) loadedDAGs() []*dag.DAG {
	if s.cfg.Daemon == nil {
		return nil
	}
	dags, _ := s.cfg.Daemon.DAGs()
	out := slices.Clone(dags)
	slices.SortFunc(out, func(a, b *dag.DAG) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (s *Server) findDAG(id string) *dag.DAG {
	for _, d := range s.loadedDAGs() {
		if d.ID == id {
			return d
		}
	}
	return nil
}

// dagViews lists every DAG: the loaded ones, then (when withInactive) those only the store
// remembers.
func (s *Server) dagViews(ctx context.Context, withInactive bool) ([]DAGJSON, error) {
	rows, err := s.cfg.Store.ListDAGRows(ctx)
	if err != nil {
		return nil, err
	}
	byID := map[string]store.DAGRow{}
	for _, row := range rows {
		byID[row.DAGID] = row
	}
	var out []DAGJSON
	seen := map[string]bool{}
	for _, d := range s.loadedDAGs() {
		out = append(out, dagView(d, byID[d.ID]))
		seen[d.ID] = true
	}
	if withInactive {
		broken := map[string]bool{}
		if ies, err := s.cfg.Store.ListImportErrors(ctx); err == nil {
			for _, ie := range ies {
				broken[ie.File] = true
			}
		}
		for _, row := range rows {
			if !seen[row.DAGID] {
				out = append(out, inactiveView(row, broken[row.File]))
			}
		}
		slices.SortFunc(out, func(a, b DAGJSON) int { return strings.Compare(a.DAGID, b.DAGID) })
	}
	return out, nil
}

// listDAGs is GET /api/v1/dags: limit, offset, only_active (default true), paused,
// dag_id_pattern (a case-insensitive substring, as Airflow's), tags (any of them, repeated or
// comma-separated) and order_by (dag_id, is_paused, fileloc; - for descending).
func (s *Server) listDAGs(w http.ResponseWriter, r *http.Request) {
	p, err := pageOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	onlyActive, set, err := boolQuery(r, "only_active")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !set {
		onlyActive = true
	}
	paused, pausedSet, err := boolQuery(r, "paused")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	pattern := strings.ToLower(r.URL.Query().Get("dag_id_pattern"))
	tags, _ := listQuery(r, "tags", nil, nil)
	field, desc, err := orderQuery(r, []string{"dag_id", "is_paused", "fileloc", "next_dagrun"}, "dag_id")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if field == "next_dagrun" {
		field = "dag_id" // Airflow's default order; poolflow does not report next_dagrun
	}
	all, err := s.dagViews(r.Context(), !onlyActive)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := []DAGJSON{}
	for _, v := range all {
		if pausedSet && v.IsPaused != paused {
			continue
		}
		if pattern != "" && !strings.Contains(strings.ToLower(v.DAGID), pattern) {
			continue
		}
		if len(tags) > 0 && !slices.ContainsFunc(v.Tags, func(t TagJSON) bool { return slices.Contains(tags, t.Name) }) {
			continue
		}
		out = append(out, v)
	}
	slices.SortStableFunc(out, func(a, b DAGJSON) int {
		var c int
		switch field {
		case "is_paused":
			c = cmpBool(a.IsPaused, b.IsPaused)
		case "fileloc":
			c = strings.Compare(a.FileLoc, b.FileLoc)
		}
		return cmpOrder(cmp.Or(c, strings.Compare(a.DAGID, b.DAGID)), desc)
	})
	lo, hi := p.slice(len(out))
	writeJSON(w, http.StatusOK, dagCollection{DAGs: out[lo:hi], TotalEntries: len(out)})
}

func (s *Server) dagByID(ctx context.Context, id string) (DAGJSON, error) {
	all, err := s.dagViews(ctx, true)
	if err != nil {
		return DAGJSON{}, err
	}
	for _, v := range all {
		if v.DAGID == id {
			return v, nil
		}
	}
	return DAGJSON{}, notFound("dag %s not found", id)
}

func (s *Server) getDAG(w http.ResponseWriter, r *http.Request) {
	v, err := s.dagByID(r.Context(), pathVar(r, "dag_id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

type patchDAGBody struct {
	IsPaused *bool `json:"is_paused"`
}

// patchDAG is PATCH /api/v1/dags/{dag_id}: pause or unpause. Pausing stops new scheduled runs;
// waiting tasks stay waiting with reason paused (§3.5).
func (s *Server) patchDAG(w http.ResponseWriter, r *http.Request) {
	id := pathVar(r, "dag_id")
	var body patchDAGBody
	if err := decodeBody(w, r, &body, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if body.IsPaused == nil {
		s.fail(w, r, badRequest("is_paused", "required"))
		return
	}
	if v := r.URL.Query().Get("update_mask"); v != "" && v != "is_paused" {
		s.fail(w, r, badRequest("update_mask", "only is_paused can be updated, got %q", v))
		return
	}
	e := s.event(r, vocab.ActionUnpause)
	if *body.IsPaused {
		e.Action = vocab.ActionPause
	}
	e.DAGID = id
	if _, err := s.dagByID(r.Context(), id); err != nil {
		s.fail(w, r, s.refused(r.Context(), e, err))
		return
	}
	d := s.findDAG(id)
	err := s.writer.WithTx(r.Context(), func(tx store.Tx) error {
		now := s.now()
		err := tx.SetPaused(id, *body.IsPaused, now)
		if errors.Is(err, store.ErrNotFound) && d != nil {
			// Loaded but not recorded yet: record it, then set the flag.
			if err := tx.UpsertDAG(d.ID, d.File, d.Schedule, now); err != nil {
				return err
			}
			err = tx.SetPaused(id, *body.IsPaused, now)
		}
		if errors.Is(err, store.ErrNotFound) {
			return notFound("dag %s not found", id)
		}
		if err != nil {
			return err
		}
		return tx.InsertEvent(&e)
	})
	if err != nil {
		s.fail(w, r, s.refused(r.Context(), e, err))
		return
	}
	s.wake()
	v, err := s.dagByID(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// rawConf returns a run's stored conf as JSON, {} when it is not valid JSON.
func rawConf(conf string) json.RawMessage {
	if conf == "" || !json.Valid([]byte(conf)) {
		return json.RawMessage("{}")
	}
	return json.RawMessage(conf)
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}
