package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// DAGRunJSON is Airflow's DAGRun object plus queued_at (Airflow 2.1+) and our reason.
type DAGRunJSON struct {
	DAGRunID          string          `json:"dag_run_id"`
	DAGID             string          `json:"dag_id"`
	LogicalDate       time.Time       `json:"logical_date"`
	ExecutionDate     time.Time       `json:"execution_date"`
	QueuedAt          *time.Time      `json:"queued_at"`
	StartDate         *time.Time      `json:"start_date"`
	EndDate           *time.Time      `json:"end_date"`
	DataIntervalStart *time.Time      `json:"data_interval_start"`
	DataIntervalEnd   *time.Time      `json:"data_interval_end"`
	RunType           string          `json:"run_type"`
	State             vocab.RunState  `json:"state"`
	ExternalTrigger   bool            `json:"external_trigger"`
	Conf              json.RawMessage `json:"conf"`
	Note              *string         `json:"note"`
	// NoteBy and NoteAt say who wrote the note (the actor of §10.4) and when.
	NoteBy *string    `json:"note_by"`
	NoteAt *time.Time `json:"note_at"`
	// ReasonCode is the code of Reason when it has one (rejected: a start that asked not to
	// queue could not start at once).
	ReasonCode *vocab.ReasonCode `json:"reason_code"`
	Reason     *string           `json:"reason"`
	// Daemon is the owner that holds the run: the daemon that took a manual start or fired an
	// every_node run (bound to it), the one that leads a scheduled run, a dags test process.
	Daemon *string `json:"daemon"`
	// DAGVersion is the version of its DAG the run was created with (§12); null when unknown.
	DAGVersion *int `json:"dag_version"`
	// BackfillID is the backfill the run belongs to (§11): one it created or cleared.
	BackfillID *int64 `json:"backfill_id,omitempty"`
}

// TriggerJSON is the answer to a manual start: the run, and when something must wait for a
// pool, the seed's queued, queueId and pool naming the first waiting entry.
type TriggerJSON struct {
	DAGRunJSON
	Queued  bool   `json:"queued"`
	QueueID int64  `json:"queueId,omitempty"`
	Pool    string `json:"pool,omitempty"`
}

type dagRunCollection struct {
	DAGRuns      []DAGRunJSON `json:"dag_runs"`
	TotalEntries int          `json:"total_entries"`
}

func runView(r store.Run) DAGRunJSON {
	return DAGRunJSON{DAGRunID: r.RunID, DAGID: r.DAGID, LogicalDate: r.LogicalDate.UTC(), ExecutionDate: r.LogicalDate.UTC(),
		QueuedAt: ts(r.QueuedAt), StartDate: ts(r.StartDate), EndDate: ts(r.EndDate), RunType: r.RunType.Word(),
		State: r.State, ExternalTrigger: r.RunType == vocab.RunManual, Conf: rawConf(r.Conf), Note: strOrNil(r.Note),
		NoteBy: strOrNil(r.NoteBy), NoteAt: ts(r.NoteAt),
		ReasonCode: codeOrNil(r.ReasonCode), Reason: strOrNil(r.ReasonCode.Say(r.Reason)), Daemon: strOrNil(r.Owner),
		DAGVersion: intOrNil(r.Version), BackfillID: id64OrNil(r.Backfill)}
}

func id64OrNil(v int64) *int64 {
	if v == 0 {
		return nil
	}
	return &v
}

// listRuns is GET /api/v1/dags/{dag_id}/dagRuns, newest first; dag_id "~" lists every DAG's
// runs, as in Airflow. Filters: state, run_type (repeated or comma-separated), the
// execution_date / logical_date (the same date), start_date and end_date ranges (_gte, _lte),
// order_by (a field, - for descending; default -queued_at), limit and offset.
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	f, err := runFilterOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	id := pathVar(r, "dag_id")
	if id != "~" {
		if _, err := s.dagByID(r.Context(), id); err != nil {
			s.fail(w, r, err)
			return
		}
		f.DAGID = id
	}
	runs, total, err := s.cfg.Store.ListRunsWhere(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := dagRunCollection{DAGRuns: []DAGRunJSON{}, TotalEntries: total}
	for _, run := range runs {
		out.DAGRuns = append(out.DAGRuns, runView(run))
	}
	writeJSON(w, http.StatusOK, out)
}

// runTypeWords are the run types the filters accept in the API's words (Airflow's scheduled and
// backfill), with the stored value each stands for; the stored values are accepted too.
var runTypeWords = func() map[string]string {
	m := map[string]string{}
	for _, t := range vocab.RunTypes() {
		if t.Word() != string(t) {
			m[t.Word()] = string(t)
		}
	}
	return m
}()

var (
	runOrders = []string{"queued_at", "logical_date", "execution_date", "start_date", "end_date", "run_id", "dag_id",
		"state", "run_type"}
)

func runFilterOf(r *http.Request) (store.RunFilter, error) {
	var f store.RunFilter
	p, err := pageOf(r)
	if err != nil {
		return f, err
	}
	f.Limit, f.Offset = p.limit, p.offset
	states, err := listQuery(r, "state", vocab.Strings(vocab.RunStates()), nil)
	if err != nil {
		return f, err
	}
	types, err := listQuery(r, "run_type", vocab.Strings(vocab.RunTypes()), runTypeWords)
	if err != nil {
		return f, err
	}
	for _, s := range states {
		f.States = append(f.States, vocab.RunState(s))
	}
	for _, t := range types {
		f.RunTypes = append(f.RunTypes, vocab.RunType(t))
	}
	if f.Owners, err = listQuery(r, "daemon", nil, nil); err != nil {
		return f, err
	}
	// execution_date is Airflow 2's name of the logical date: both narrow the same range.
	for _, name := range []string{"execution_date", "logical_date"} {
		from, to, err := timeRange(r, name)
		if err != nil {
			return f, err
		}
		if !from.IsZero() && from.After(f.LogicalFrom) {
			f.LogicalFrom = from
		}
		if !to.IsZero() && (f.LogicalTo.IsZero() || to.Before(f.LogicalTo)) {
			f.LogicalTo = to
		}
	}
	if f.StartFrom, f.StartTo, err = timeRange(r, "start_date"); err != nil {
		return f, err
	}
	if f.EndFrom, f.EndTo, err = timeRange(r, "end_date"); err != nil {
		return f, err
	}
	if f.Text = r.URL.Query().Get("q"); len(f.Text) > 200 {
		return f, badRequest("q", "at most 200 characters, got %d", len(f.Text))
	}
	field, desc, err := orderQuery(r, runOrders, "-queued_at")
	if err != nil {
		return f, err
	}
	if field == "execution_date" {
		field = "logical_date"
	}
	f.OrderBy, f.Desc = field, desc
	return f, nil
}

// runOf reads the run named in the path; an unknown one is 404.
func (s *Server) runOf(r *http.Request) (store.Run, error) {
	return s.runByID(r.Context(), pathVar(r, "dag_id"), pathVar(r, "dag_run_id"))
}

func (s *Server) runByID(ctx context.Context, dagID, runID string) (store.Run, error) {
	run, err := s.cfg.Store.GetRun(ctx, dagID, runID)
	if errors.Is(err, store.ErrNotFound) {
		return run, notFound("dag run %s of dag %s not found", runID, dagID)
	}
	return run, err
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	run, err := s.runOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, runView(run))
}

// triggerBody is Airflow's DAGRun creation body plus queue (default true): false asks not to
// wait, so the start is refused unless its ready tasks are admitted at once (§4.6).
type triggerBody struct {
	DAGRunID    *string         `json:"dag_run_id"`
	LogicalDate json.RawMessage `json:"logical_date"`
	Conf        json.RawMessage `json:"conf"`
	Note        *string         `json:"note"`
	Queue       *bool           `json:"queue"`
}

func (b *triggerBody) request(dagID string) (executor.TriggerRequest, error) {
	req := executor.TriggerRequest{DAGID: dagID}
	if b.DAGRunID != nil {
		if err := executor.CheckRunID(*b.DAGRunID); err != nil {
			return req, err
		}
		req.RunID = *b.DAGRunID
	}
	t, err := rawTime("logical_date", b.LogicalDate)
	if err != nil {
		return req, err
	}
	req.LogicalDate = t
	if !isNull(b.Conf) {
		if err := executor.CheckConf(len(b.Conf)); err != nil {
			return req, err
		}
		if c := firstByte(b.Conf); c != '{' {
			return req, badRequest("conf", "want a JSON object")
		}
		if err := json.Unmarshal(b.Conf, &req.Conf); err != nil {
			return req, badRequest("conf", "want a JSON object")
		}
	}
	if b.Note != nil {
		req.Note = *b.Note
	}
	req.NoQueue = b.Queue != nil && !*b.Queue
	return req, nil
}

func firstByte(raw json.RawMessage) byte {
	for _, c := range raw {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c
		}
	}
	return 0
}

// triggerRun is POST /api/v1/dags/{dag_id}/dagRuns. It answers after the run's first pass:
// 200 when every ready task was admitted, 202 when something waits for a pool, 409 when a pool
// refuses the start, 503 when pool state is unavailable.
func (s *Server) triggerRun(w http.ResponseWriter, r *http.Request) {
	dagID := pathVar(r, "dag_id")
	var body triggerBody
	if err := decodeBody(w, r, &body, true); err != nil {
		s.fail(w, r, err)
		return
	}
	req, err := body.request(dagID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	req.Who = actorOf(r)
	if s.findDAG(dagID) == nil {
		e := s.event(r, vocab.ActionTrigger)
		e.DAGID, e.RunID = dagID, req.RunID
		if _, err := s.dagByID(r.Context(), dagID); err == nil {
			s.fail(w, r, s.refused(r.Context(), e, conflict("dag %s is not loaded now (see /api/v1/importErrors)", dagID)))
			return
		}
		s.fail(w, r, s.refused(r.Context(), e, notFound("dag %s not found", dagID)))
		return
	}
	d, err := s.daemon()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := d.Trigger(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if msg, err := s.rejection(r, res.Run); err != nil {
		s.fail(w, r, err)
		return
	} else if msg != "" {
		s.fail(w, r, conflict("%s", msg))
		return
	}
	out := TriggerJSON{DAGRunJSON: runView(res.Run), Queued: res.Queued}
	status := http.StatusOK
	if res.Queued {
		out.QueueID, out.Pool, status = res.QueueID, res.Pool, http.StatusAccepted
	}
	w.Header().Set("Location", "/api/v1/dags/"+url.PathEscape(res.Run.DAGID)+"/dagRuns/"+url.PathEscape(res.Run.RunID))
	writeJSON(w, status, out)
}

// rejection finds a task of a just-started run whose entry a pool rejected in the first pass
// (backlog full, over capacity, draining, §4.6): the daemon records that as a failed attempt
// rather than refusing the start, but to the caller the pool refused it, so the answer is 409
// with the pool's message.
func (s *Server) rejection(r *http.Request, run store.Run) (string, error) {
	tis, err := s.cfg.Store.ListTaskInstances(r.Context(), run.PK)
	if err != nil {
		return "", err
	}
	for _, ti := range tis {
		if ti.ReasonCode == vocab.ReasonRejected {
			return ti.Reason, nil
		}
	}
	return "", nil
}
