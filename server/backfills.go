package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/poolflow/poolflow/backfill"
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Backfills (§11): POST /api/v1/backfills (and /dry_run) with Airflow 3's body, GET the list and
// one backfill, and pause, unpause or cancel one. The API checks and stores a backfill with its
// dates; the daemon that drives it creates or clears its runs as its max_active_runs allows.

// BackfillBody is Airflow 3's body of POST /api/v1/backfills, plus max_slots.
type BackfillBody struct {
	DAGID         string          `json:"dag_id"`
	FromDate      json.RawMessage `json:"from_date"`
	ToDate        json.RawMessage `json:"to_date"`
	RunBackwards  bool            `json:"run_backwards"`
	DAGRunConf    map[string]any  `json:"dag_run_conf"`
	Reprocess     string          `json:"reprocess_behavior"`
	MaxActiveRuns *int            `json:"max_active_runs"`
	MaxSlots      map[string]int  `json:"max_slots"`
}

// BackfillJSON is a backfill in the API: Airflow 3's fields, then poolflow's.
type BackfillJSON struct {
	ID            int64          `json:"id"`
	DAGID         string         `json:"dag_id"`
	FromDate      time.Time      `json:"from_date"`
	ToDate        time.Time      `json:"to_date"`
	DAGRunConf    map[string]any `json:"dag_run_conf"`
	IsPaused      bool           `json:"is_paused"`
	Reprocess     string         `json:"reprocess_behavior"`
	MaxActiveRuns int            `json:"max_active_runs"`
	CreatedAt     time.Time      `json:"created_at"`
	CompletedAt   *time.Time     `json:"completed_at"`
	UpdatedAt     time.Time      `json:"updated_at"`
	RunBackwards  bool           `json:"run_backwards"`
	MaxSlots      map[string]int `json:"max_slots"`
	State         string         `json:"state"`
	Owner         string         `json:"owner,omitempty"`
	CreatedBy     string         `json:"created_by,omitempty"`
	Progress      ProgressJSON   `json:"progress"`
	// Warnings say what the caller should know that did not refuse it (a paused DAG).
	Warnings []string `json:"warnings,omitempty"`
}

// ProgressJSON counts a backfill's dates by what came of them.
type ProgressJSON struct {
	Total   int `json:"total"`
	Done    int `json:"done"`
	Failed  int `json:"failed"`
	Running int `json:"running"`
	Left    int `json:"left"`
	Skipped int `json:"skipped"`
}

// BackfillDateJSON is one date of a backfill and what it came to.
type BackfillDateJSON struct {
	LogicalDate time.Time `json:"logical_date"`
	Action      string    `json:"action"`
	RunID       string    `json:"dag_run_id,omitempty"`
	RunState    string    `json:"dag_run_state,omitempty"`
	Reason      string    `json:"reason,omitempty"`
}

// DryRunJSON is the answer of POST /api/v1/backfills/dry_run: Airflow's list of the dates, each
// with what the backfill would do with it, and the slot-hours each pool would need.
type DryRunJSON struct {
	Backfills    []BackfillDateJSON `json:"backfills"`
	TotalEntries int                `json:"total_entries"`
	Create       int                `json:"create"`
	Clear        int                `json:"clear"`
	Skip         int                `json:"skip"`
	SlotHours    map[string]float64 `json:"slot_hours"`
	Warnings     []string           `json:"warnings,omitempty"`
}

func backfillJSON(b store.Backfill) BackfillJSON {
	v := BackfillJSON{ID: b.ID, DAGID: b.DAGID, FromDate: b.From, ToDate: b.To, IsPaused: b.Paused, Reprocess: string(b.Reprocess),
		MaxActiveRuns: b.MaxActiveRuns, CreatedAt: b.CreatedAt, UpdatedAt: b.UpdatedAt, RunBackwards: b.Backwards,
		MaxSlots: b.MaxSlots, State: string(b.State), Owner: b.Owner, CreatedBy: b.CreatedBy,
		Progress: ProgressJSON(b.Progress)}
	if !b.CompletedAt.IsZero() {
		t := b.CompletedAt
		v.CompletedAt = &t
	}
	if v.MaxSlots == nil {
		v.MaxSlots = map[string]int{}
	}
	_ = json.Unmarshal([]byte(b.Conf), &v.DAGRunConf)
	if v.DAGRunConf == nil {
		v.DAGRunConf = map[string]any{}
	}
	return v
}

// backfillRequest reads and checks a backfill's body: the request, its DAG and its dates.
func (s *Server) backfillRequest(w http.ResponseWriter, r *http.Request) (backfill.Request, *dag.DAG, []time.Time, error) {
	var body BackfillBody
	if err := decodeBody(w, r, &body, false); err != nil {
		return backfill.Request{}, nil, nil, err
	}
	req := backfill.Request{DAGID: body.DAGID, Reprocess: vocab.Reprocess(body.Reprocess), Backwards: body.RunBackwards,
		Conf: body.DAGRunConf, MaxSlots: body.MaxSlots}
	// The route names no DAG, so the router's team check cannot see it: an operator of finance
	// backfills only finance's DAGs (§15).
	if err := s.allowed(r.Context(), vocab.PermBackfill, s.dagTeam(req.DAGID)); err != nil {
		return req, nil, nil, err
	}
	var err error
	if req.From, err = rawTime("from_date", body.FromDate); err != nil {
		return req, nil, nil, err
	}
	if req.To, err = rawTime("to_date", body.ToDate); err != nil {
		return req, nil, nil, err
	}
	if body.MaxActiveRuns != nil {
		if *body.MaxActiveRuns < 1 {
			return req, nil, nil, badRequest("max_active_runs", "%d: want 1 or more", *body.MaxActiveRuns)
		}
		req.MaxActiveRuns = *body.MaxActiveRuns
	}
	req.Normalize()
	g := s.findDAG(req.DAGID)
	var used []string
	if g != nil && len(req.MaxSlots) > 0 {
		set, err := s.compileRules(r)
		if err != nil {
			return req, nil, nil, err
		}
		used = backfill.UsedPools(g, set.Pools())
	}
	dates, err := backfill.Check(req, g, used, s.Settings().Backfill.MaxRunsOrDefault())
	if err != nil {
		return req, g, nil, apiErrorOf(err)
	}
	return req, g, dates, nil
}

// apiErrorOf answers a backfill.Error with its status and field.
func apiErrorOf(err error) error {
	if be, ok := err.(*backfill.Error); ok {
		return &apiError{status: be.Status, detail: be.Error()}
	}
	return err
}

// backfillWarnings are what a caller of a backfill of dagID should know: its DAG is paused.
func (s *Server) backfillWarnings(ctx context.Context, dagID string) []string {
	states, err := s.cfg.Store.ListDAGStates(ctx)
	if err != nil || !states[dagID].Paused {
		return nil
	}
	return []string{fmt.Sprintf("dag %s is paused: the backfill's runs wait until it is unpaused", dagID)}
}

// createBackfill is POST /api/v1/backfills: the backfill and its dates are stored, pending,
// with its audit event; the daemon takes them from its next pass. Another open backfill of the
// DAG whose range meets this one's is a 409 naming it.
func (s *Server) createBackfill(w http.ResponseWriter, r *http.Request) {
	e := s.event(r, vocab.ActionBackfill)
	req, _, dates, err := s.backfillRequest(w, r)
	e.DAGID = req.DAGID
	if err != nil {
		s.fail(w, r, s.refused(r.Context(), e, err))
		return
	}
	b, err := backfill.Create(r.Context(), s.writer, req, dates, e.Actor, s.now())
	if err != nil {
		err = apiErrorOf(err)
		e.Params = backfill.Event(e.Actor, e.At, req).Params
		s.fail(w, r, s.refused(r.Context(), e, err))
		return
	}
	s.wake()
	got, err := s.cfg.Store.GetBackfill(r.Context(), b.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := backfillJSON(got)
	v.Warnings = s.backfillWarnings(r.Context(), req.DAGID)
	writeJSON(w, http.StatusOK, v)
}

// dryRunBackfill is POST /api/v1/backfills/dry_run: the same body, nothing written. It answers
// every date with what the backfill would do with it as things stand, and per pool the
// slot-hours the runs it would create or clear need by their tasks' past durations.
func (s *Server) dryRunBackfill(w http.ResponseWriter, r *http.Request) {
	req, g, dates, err := s.backfillRequest(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	def := "default"
	if set, err := s.compileRules(r); err == nil && set != nil {
		def = set.DefaultPool()
	}
	dry, err := backfill.Dry(ctx, s.cfg.Store, g, req, dates, def)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := DryRunJSON{TotalEntries: len(dry.Plan), Backfills: make([]BackfillDateJSON, len(dry.Plan)), Create: dry.Create,
		Clear: dry.Clear, Skip: dry.Skip, SlotHours: dry.SlotHours}
	for i, p := range dry.Plan {
		out.Backfills[i] = BackfillDateJSON{LogicalDate: p.LogicalDate, Action: string(p.Action), RunID: p.RunID,
			RunState: string(p.RunState), Reason: p.Reason}
	}
	out.Warnings = s.backfillWarnings(ctx, req.DAGID)
	if len(dry.NoHistory) > 0 {
		out.Warnings = append(out.Warnings, "slot-hours leave out the tasks that never ran: "+strings.Join(dry.NoHistory, ", "))
	}
	if o := dry.Overlaps; o != nil {
		out.Warnings = append(out.Warnings, fmt.Sprintf("backfill %d of dag %s overlaps this range: creating it would be refused",
			o.ID, o.DAGID))
	}
	writeJSON(w, http.StatusOK, out)
}

// BackfillListJSON is a page of backfills.
type BackfillListJSON struct {
	Backfills    []BackfillJSON `json:"backfills"`
	TotalEntries int            `json:"total_entries"`
}

// listBackfills is GET /api/v1/backfills?dag_id=: newest first, with their progress.
func (s *Server) listBackfills(w http.ResponseWriter, r *http.Request) {
	p, err := pageOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	list, total, err := s.cfg.Store.ListBackfills(r.Context(), r.URL.Query().Get("dag_id"), p.limit, p.offset)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := BackfillListJSON{Backfills: make([]BackfillJSON, len(list)), TotalEntries: total}
	for i, b := range list {
		out.Backfills[i] = backfillJSON(b)
	}
	writeJSON(w, http.StatusOK, out)
}

// backfillID reads the {backfill_id} of the path.
func backfillID(r *http.Request) (int64, error) {
	v := pathVar(r, "backfill_id")
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 1 {
		return 0, badRequest("backfill_id", "want a whole number of at least 1, got %q", v)
	}
	return id, nil
}

// getBackfill is GET /api/v1/backfills/{backfill_id}.
func (s *Server) getBackfill(w http.ResponseWriter, r *http.Request) {
	id, err := backfillID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	b, err := s.cfg.Store.GetBackfill(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, backfillJSON(b))
}

// BackfillDatesJSON is a page of a backfill's dates.
type BackfillDatesJSON struct {
	Dates        []BackfillDateJSON `json:"dates"`
	TotalEntries int                `json:"total_entries"`
}

// listBackfillDates is GET /api/v1/backfills/{backfill_id}/dates: its dates in the order it
// takes them, each with what came of it.
func (s *Server) listBackfillDates(w http.ResponseWriter, r *http.Request) {
	id, err := backfillID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := pageOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if _, err := s.cfg.Store.GetBackfill(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	dates, total, err := s.cfg.Store.ListBackfillDates(r.Context(), id, p.limit, p.offset)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := BackfillDatesJSON{Dates: make([]BackfillDateJSON, len(dates)), TotalEntries: total}
	for i, d := range dates {
		out.Dates[i] = BackfillDateJSON{LogicalDate: d.LogicalDate, Action: string(d.Action), RunID: d.RunID,
			RunState: string(d.RunState), Reason: d.Reason}
	}
	writeJSON(w, http.StatusOK, out)
}

// changeBackfill is POST /api/v1/backfills/{backfill_id}/pause, /unpause and /cancel. Pausing
// stops new runs; cancelling fails its runs' waiting work and lets running attempts finish
// (the daemon that drives it does that at its next pass). A backfill that is over is a 409.
func (s *Server) changeBackfill(verb string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		e := s.event(r, vocab.ActionBackfill)
		id, err := backfillID(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		e.Params = jsonParams(map[string]any{"backfill_id": id, "verb": verb})
		err = s.writer.WithTx(r.Context(), func(tx store.Tx) error {
			b, err := tx.BackfillByID(id)
			if err != nil {
				return err
			}
			e.DAGID = b.DAGID
			if err := s.allowed(r.Context(), vocab.PermBackfill, s.dagTeam(b.DAGID)); err != nil {
				return err // another team's backfill (§15)
			}
			now := s.now()
			switch verb {
			case "pause", "unpause":
				err = tx.SetBackfillPaused(id, verb == "pause", now)
			default:
				err = tx.CancelBackfill(id, now)
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
		b, err := s.cfg.Store.GetBackfill(r.Context(), id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, backfillJSON(b))
	}
}
