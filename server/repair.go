package server

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Repairing runs over the API (§10): clear, mark, notes and deletion, with Airflow's routes,
// bodies and defaults. A clear, a mark and a deletion are commands (sendCommand): the daemon
// that applies them writes their audit events. A note is written here, in one transaction with
// its event.

// clearBody is Airflow's ClearTaskInstances. As in Airflow, dry_run and only_failed default to
// true: a client must ask for the clear itself (dry_run: false), and for the tasks that did not
// fail (only_failed: false). only_running: true alone means only the running ones (only_failed
// then defaults to false: together they would select nothing). note is poolflow's: a note
// written on the task instances named (on the run when none is named) once the clear is applied.
type clearBody struct {
	DAGRunID          *string  `json:"dag_run_id"`
	TaskIDs           []string `json:"task_ids"`
	OnlyFailed        *bool    `json:"only_failed"`
	OnlyRunning       bool     `json:"only_running"`
	IncludeUpstream   bool     `json:"include_upstream"`
	IncludeDownstream bool     `json:"include_downstream"`
	DryRun            *bool    `json:"dry_run"`
	Note              *string  `json:"note"`
}

// clearRunBody is Airflow's ClearDagRun: dry_run defaults to true, only_failed to false.
type clearRunBody struct {
	DryRun     *bool `json:"dry_run"`
	OnlyFailed bool  `json:"only_failed"`
}

// ClearPreviewJSON is one task instance a clear would clear, as its dry run answers it
// (§10.1): its state now, the try its next attempt runs as, what that attempt will need, and
// whether it would be admitted at once or why it would wait.
type ClearPreviewJSON struct {
	TaskID        string          `json:"task_id"`
	DAGID         string          `json:"dag_id"`
	DAGRunID      string          `json:"dag_run_id"`
	ExecutionDate time.Time       `json:"execution_date"`
	State         vocab.TaskState `json:"state"`
	TryNumber     int             `json:"try_number"`
	Requirements  map[string]int  `json:"requirements"`
	Limits        []LimitJSON     `json:"limits"`
	Rule          *string         `json:"rule"`
	// RuleSkipped names the rules that matched but were skipped for the DAG's team (§15).
	RuleSkipped *string      `json:"rule_skipped,omitempty"`
	Admitted    bool         `json:"admitted"`
	WaitReason  *PreviewWait `json:"wait_reason"`
	// DAGVersion is the version of the DAG the cleared task runs: the current one, which may
	// not be RunDAGVersion, the one the run was created with (§12). null when unknown.
	DAGVersion    *int `json:"dag_version"`
	RunDAGVersion *int `json:"run_dag_version"`
}

// PreviewWait is why a cleared task would wait: the reason's code, the words (those of tasks
// explain, with the place in line), and for a pool reason the pool, the slots of it the task
// lacks and its place in the pool's line (1 = next).
type PreviewWait struct {
	Code      vocab.ReasonCode `json:"code"`
	Text      string           `json:"text"`
	Pool      string           `json:"pool,omitempty"`
	Shortfall int              `json:"shortfall,omitempty"`
	Place     int              `json:"place,omitempty"`
}

type clearPreviewCollection struct {
	TaskInstances []ClearPreviewJSON `json:"task_instances"`
	TotalEntries  int                `json:"total_entries"`
}

// PreviewView is a preview row's JSON.
func PreviewView(run store.Run, row explain.ClearRow) ClearPreviewJSON {
	reqs, limits := splitNeeds(row.Needs)
	v := ClearPreviewJSON{TaskID: row.TaskID, DAGID: run.DAGID, DAGRunID: run.RunID, ExecutionDate: run.LogicalDate.UTC(),
		State: row.State, TryNumber: row.TryNumber, Requirements: reqs, Limits: limits, Rule: strOrNil(row.Rule),
		RuleSkipped: strOrNil(row.RuleSkipped), Admitted: row.Admitted}
	if !row.Admitted {
		v.WaitReason = &PreviewWait{Code: row.Code, Text: row.Words(), Pool: row.Pool, Shortfall: row.Shortfall, Place: row.Place}
	}
	return v
}

// ClearPreview is the dry run of a clear of run with p (§10.1), as the API answers it; the UI's
// confirmation shows it. An unknown task is a 404 error, a task gone from the DAG or a DAG that
// is not loaded a 409.
func (s *Server) ClearPreview(ctx context.Context, run store.Run, p store.ClearParams) ([]ClearPreviewJSON, error) {
	d, err := s.loadedDAG(run)
	if err != nil {
		return nil, err
	}
	rows, err := explain.ClearPreview(ctx, s.cfg.Store, s.effective(ctx), d, run, p, s.now())
	if err != nil {
		return nil, err
	}
	version := intOrNil(s.loadedVersion(ctx, d))
	out := make([]ClearPreviewJSON, 0, len(rows))
	for _, row := range rows {
		v := PreviewView(run, row)
		v.DAGVersion, v.RunDAGVersion = version, intOrNil(run.Version)
		out = append(out, v)
	}
	return out, nil
}

// effective is the configuration in force: the daemon's, else the server's file with the
// stored pools.
func (s *Server) effective(ctx context.Context) *config.Effective {
	if s.cfg.Daemon != nil {
		if eff := s.cfg.Daemon.Effective(); eff != nil {
			return eff
		}
	}
	eff, err := config.ReadEffective(ctx, s.cfg.Store, s.Settings())
	if err != nil {
		return config.NewEffective(s.Settings(), nil)
	}
	return eff
}

// loadedDAG is the loaded definition of run's DAG, which a clear runs its tasks under; 409 when
// it is not loaded (removed, or invalid).
func (s *Server) loadedDAG(run store.Run) (*dag.DAG, error) {
	d := s.findDAG(run.DAGID)
	if d == nil {
		return nil, conflict("dag %s of run %s is not loaded now (removed, or invalid: see /api/v1/importErrors)",
			run.DAGID, run.RunID)
	}
	return d, nil
}

// clearTaskInstances is POST /api/v1/dags/{dag_id}/clearTaskInstances.
func (s *Server) clearTaskInstances(w http.ResponseWriter, r *http.Request) {
	var body clearBody
	if err := decodeBody(w, r, &body, false); err != nil {
		s.fail(w, r, err)
		return
	}
	if body.DAGRunID == nil || *body.DAGRunID == "" {
		s.fail(w, r, badRequest("dag_run_id", "required: poolflow clears the task instances of one run"))
		return
	}
	for i, id := range body.TaskIDs {
		if id == "" {
			s.fail(w, r, badRequest("task_ids", "item %d is empty", i))
			return
		}
	}
	p := store.ClearParams{TaskIDs: body.TaskIDs, Downstream: body.IncludeDownstream, Upstream: body.IncludeUpstream,
		OnlyRunning: body.OnlyRunning, OnlyFailed: !body.OnlyRunning}
	if body.OnlyFailed != nil {
		p.OnlyFailed = *body.OnlyFailed
	}
	s.clear(w, r, pathVar(r, "dag_id"), *body.DAGRunID, p, body.DryRun == nil || *body.DryRun, body.Note, false)
}

// clearRun is POST /api/v1/dags/{dag_id}/dagRuns/{dag_run_id}/clear: every task instance of
// the run (only the failed ones with only_failed). A dry run answers the preview; a clear
// answers the run after it.
func (s *Server) clearRun(w http.ResponseWriter, r *http.Request) {
	var body clearRunBody
	if err := decodeBody(w, r, &body, true); err != nil {
		s.fail(w, r, err)
		return
	}
	s.clear(w, r, pathVar(r, "dag_id"), pathVar(r, "dag_run_id"), store.ClearParams{OnlyFailed: body.OnlyFailed},
		body.DryRun == nil || *body.DryRun, nil, true)
}

// clear answers a clear of run runID of dagID with p: the preview when dryRun; else the clear is
// sent and the answer is the task instances it took as they are after it (or the run, for
// wholeRun), 202 when another process has not applied it yet.
func (s *Server) clear(w http.ResponseWriter, r *http.Request, dagID, runID string, p store.ClearParams, dryRun bool,
	note *string, wholeRun bool) {
	ctx := r.Context()
	params := jsonParams(p)
	refuse := func(run store.Run, err error) {
		s.fail(w, r, s.refusedCommand(ctx, run, store.Command{Kind: vocab.CommandClear, Who: actorOf(r), Params: params}, err))
	}
	run, err := s.runByID(ctx, dagID, runID)
	if err != nil {
		if dryRun {
			s.fail(w, r, err)
		} else {
			refuse(store.Run{DAGID: dagID, RunID: runID}, err)
		}
		return
	}
	if dryRun {
		rows, err := s.ClearPreview(ctx, run, p)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, clearPreviewCollection{TaskInstances: rows, TotalEntries: len(rows)})
		return
	}
	d, err := s.loadedDAG(run)
	if err != nil {
		refuse(run, err)
		return
	}
	tis, err := s.cfg.Store.ListTaskInstances(ctx, run.PK)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ids, err := explain.ClearSelection(d, run.RunID, tis, p)
	if err != nil {
		refuse(run, err)
		return
	}
	c := store.Command{Kind: vocab.CommandClear, Who: actorOf(r), Params: params}
	if note != nil {
		c.Note = *note
	}
	if !s.command(w, r, run, c) {
		return
	}
	if note != nil {
		if err := s.notes(r, run, p.TaskIDs, *note); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	if wholeRun {
		s.answerRun(w, r, run)
		return
	}
	s.answerTaskInstances(w, r, run, ids)
}

// command sends c and answers its failure: false when the handler is done (an error, or 202
// for a command another process has not applied yet).
func (s *Server) command(w http.ResponseWriter, r *http.Request, run store.Run, c store.Command) bool {
	err := s.sendCommand(r.Context(), run, c)
	if errors.Is(err, errCommandPending) {
		writeJSON(w, http.StatusAccepted, pendingJSON{Queued: true, Detail: err.Error()})
		return false
	}
	if err != nil {
		s.fail(w, r, err)
		return false
	}
	return true
}

// answerTaskInstances answers the task instances ids of run as they are now, in DAG order.
func (s *Server) answerTaskInstances(w http.ResponseWriter, r *http.Request, run store.Run, ids []string) {
	run, err := s.runByID(r.Context(), run.DAGID, run.RunID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	views, err := s.TaskInstances(r.Context(), run)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	views = slices.DeleteFunc(views, func(v TaskInstanceJSON) bool { return !slices.Contains(ids, v.TaskID) })
	writeJSON(w, http.StatusOK, taskInstanceCollection{TaskInstances: views, TotalEntries: len(views)})
}

func (s *Server) answerRun(w http.ResponseWriter, r *http.Request, run store.Run) {
	run, err := s.runByID(r.Context(), run.DAGID, run.RunID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, runView(run))
}

// patchTIBody is Airflow's PATCH of a task instance: new_state (success, failed or skipped)
// with the task instances downstream or upstream of it, or only a note (a note edit). dry_run
// answers the task instances a mark would change, changing nothing.
type patchTIBody struct {
	NewState          *string `json:"new_state"`
	Note              *string `json:"note"`
	IncludeUpstream   bool    `json:"include_upstream"`
	IncludeDownstream bool    `json:"include_downstream"`
	DryRun            bool    `json:"dry_run"`
}

// markStates are the states a task instance is marked with (§10.2).
var markStates = vocab.Strings([]vocab.TaskState{vocab.TaskSuccess, vocab.TaskFailed, vocab.TaskSkipped})

// patchTaskInstance is PATCH /api/v1/dags/{dag_id}/dagRuns/{dag_run_id}/taskInstances/{task_id}.
// It answers the task instances the mark changed (or would, with dry_run), or the one whose
// note was edited, as they are after it.
func (s *Server) patchTaskInstance(w http.ResponseWriter, r *http.Request) {
	var body patchTIBody
	if err := decodeBody(w, r, &body, false); err != nil {
		s.fail(w, r, err)
		return
	}
	switch {
	case body.NewState == nil && body.Note == nil:
		s.fail(w, r, badRequest("new_state", "required (success, failed or skipped), unless the request only edits the note"))
		return
	case body.NewState != nil && !slices.Contains(markStates, *body.NewState):
		s.fail(w, r, badRequest("new_state", "%q is not one of success, failed, skipped", *body.NewState))
		return
	case body.NewState == nil && (body.IncludeDownstream || body.IncludeUpstream):
		s.fail(w, r, badRequest("new_state", "required with include_downstream or include_upstream"))
		return
	}
	ctx := r.Context()
	taskID := pathVar(r, "task_id")
	var p store.MarkParams
	c := store.Command{Kind: vocab.CommandMark, Who: actorOf(r)}
	if body.NewState != nil {
		p = store.MarkParams{State: *body.NewState, TaskIDs: []string{taskID}, Downstream: body.IncludeDownstream,
			Upstream: body.IncludeUpstream}
		c.Params = jsonParams(p)
	}
	refuse := func(run store.Run, err error) {
		if body.DryRun {
			s.fail(w, r, err)
			return
		}
		if body.NewState == nil { // a note edit
			e := s.event(r, vocab.ActionNote)
			e.DAGID, e.RunID, e.TaskID, e.Params = run.DAGID, run.RunID, taskID, jsonParams(map[string]string{"note": *body.Note})
			s.fail(w, r, s.refused(ctx, e, err))
			return
		}
		s.fail(w, r, s.refusedCommand(ctx, run, c, err))
	}
	t, err := s.taskInstanceOf(r)
	if err != nil {
		refuse(store.Run{DAGID: pathVar(r, "dag_id"), RunID: pathVar(r, "dag_run_id")}, err)
		return
	}
	if body.NewState == nil {
		if body.DryRun {
			writeJSON(w, http.StatusOK, taskInstanceCollection{TaskInstances: []TaskInstanceJSON{t.view()}, TotalEntries: 1})
			return
		}
		if err := s.notes(r, t.run, []string{taskID}, *body.Note); err != nil {
			s.fail(w, r, err)
			return
		}
		s.answerTaskInstances(w, r, t.run, []string{taskID})
		return
	}
	d, err := s.loadedDAG(t.run)
	if err != nil {
		refuse(t.run, err)
		return
	}
	ids, err := explain.MarkSelection(d, t.run.RunID, t.all, p)
	if err != nil {
		refuse(t.run, err)
		return
	}
	if body.DryRun {
		views, err := s.TaskInstances(ctx, t.run)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		views = slices.DeleteFunc(views, func(v TaskInstanceJSON) bool { return !slices.Contains(ids, v.TaskID) })
		writeJSON(w, http.StatusOK, taskInstanceCollection{TaskInstances: views, TotalEntries: len(views)})
		return
	}
	if body.Note != nil {
		c.Note = *body.Note
	}
	if !s.command(w, r, t.run, c) {
		return
	}
	if body.Note != nil {
		if err := s.notes(r, t.run, []string{taskID}, *body.Note); err != nil {
			s.fail(w, r, err)
			return
		}
		ids = append(ids, taskID)
	}
	s.answerTaskInstances(w, r, t.run, ids)
}

// patchRunBody is Airflow's PATCH of a DAG run: state (success, failed, or queued: clear the
// whole run) and, or only, note.
type patchRunBody struct {
	State *string `json:"state"`
	Note  *string `json:"note"`
}

var runMarkStates = vocab.Strings([]vocab.RunState{vocab.RunSuccess, vocab.RunFailed, vocab.RunQueued})

// patchRun is PATCH /api/v1/dags/{dag_id}/dagRuns/{dag_run_id}: a mark of the whole run
// (§10.2: success marks its unfinished tasks success; failed marks the running and waiting ones
// failed and those not yet ready skipped; queued clears it) and, or only, its note. It answers
// the run after.
func (s *Server) patchRun(w http.ResponseWriter, r *http.Request) {
	var body patchRunBody
	if err := decodeBody(w, r, &body, false); err != nil {
		s.fail(w, r, err)
		return
	}
	switch {
	case body.State == nil && body.Note == nil:
		s.fail(w, r, badRequest("state", "required (success, failed or queued), unless the request only edits the note"))
		return
	case body.State != nil && !slices.Contains(runMarkStates, *body.State):
		s.fail(w, r, badRequest("state", "%q is not one of success, failed, queued", *body.State))
		return
	}
	ctx := r.Context()
	run, err := s.runOf(r)
	if err != nil {
		run = store.Run{DAGID: pathVar(r, "dag_id"), RunID: pathVar(r, "dag_run_id")}
		if body.State == nil {
			e := s.event(r, vocab.ActionNote)
			e.DAGID, e.RunID, e.Params = run.DAGID, run.RunID, jsonParams(map[string]string{"note": *body.Note})
			s.fail(w, r, s.refused(ctx, e, err))
			return
		}
		s.fail(w, r, s.refusedCommand(ctx, run, store.Command{Kind: vocab.CommandMark, Who: actorOf(r),
			Params: jsonParams(store.MarkParams{State: *body.State})}, err))
		return
	}
	if body.State != nil {
		c := store.Command{Kind: vocab.CommandMark, Who: actorOf(r), Params: jsonParams(store.MarkParams{State: *body.State})}
		if body.Note != nil {
			c.Note = *body.Note
		}
		if !s.command(w, r, run, c) {
			return
		}
	}
	if body.Note != nil {
		if err := s.notes(r, run, nil, *body.Note); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	s.answerRun(w, r, run)
}

// deleteRun is DELETE /api/v1/dags/{dag_id}/dagRuns/{dag_run_id} (§10.3): 204 once the run is
// gone with everything it held; 409 while an attempt of it runs, unless ?force=true, which
// stops them first (202 while they stop: the run goes once they ended).
func (s *Server) deleteRun(w http.ResponseWriter, r *http.Request) {
	force, _, err := boolQuery(r, "force")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c := store.Command{Kind: vocab.CommandDelete, Who: actorOf(r), Params: jsonParams(store.DeleteParams{Force: force})}
	run, err := s.runOf(r)
	if err != nil {
		s.fail(w, r, s.refusedCommand(r.Context(), store.Run{DAGID: pathVar(r, "dag_id"), RunID: pathVar(r, "dag_run_id")}, c, err))
		return
	}
	if !s.command(w, r, run, c) {
		return
	}
	gone, err := s.awaitDeletion(r.Context(), run)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !gone {
		writeJSON(w, http.StatusAccepted, pendingJSON{Queued: true,
			Detail: "the run's attempts are being stopped; the run is deleted once they ended"})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// awaitDeletion waits up to CommandWait for run to be gone after its deletion was accepted
// (AwaitDeletion).
func (s *Server) awaitDeletion(ctx context.Context, run store.Run) (bool, error) {
	gone, _, err := AwaitDeletion(ctx, s.cfg.Store, run.PK, 0, s.cfg.CommandWait)
	return gone, err
}

// AwaitDeletion waits up to wait for run pk to be gone after its deletion was sent (as stored
// command cmd, or 0 for one sent through a daemon's loop), and says whether it is, or why the
// daemon refused it. A forced deletion first stops the run's attempts; the daemon applies it
// once they ended. The API and the CLI both wait with it.
func AwaitDeletion(ctx context.Context, st store.Store, pk, cmd int64, wait time.Duration) (gone bool, refused string, err error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := st.GetRunByPK(ctx, pk); errors.Is(err, store.ErrNotFound) {
			return true, "", nil
		} else if err != nil {
			return false, "", err
		}
		if cmd != 0 {
			// Gone with the run (a success), or done with a refusal.
			if done, msg, err := st.CommandOutcome(ctx, cmd); err == nil && done && msg != "" {
				return false, msg, nil
			}
		}
		select {
		case <-ctx.Done():
			return false, "", ctx.Err()
		case <-deadline.C:
			return false, "", nil
		case <-tick.C:
		}
	}
}

// notes writes note on the task instances taskIDs of run (on the run itself when none), each
// with its audit event, in one transaction: who wrote it (the actor) and when (§10.3).
func (s *Server) notes(r *http.Request, run store.Run, taskIDs []string, note string) error {
	targets := taskIDs
	if len(targets) == 0 {
		targets = []string{""}
	}
	err := s.writer.WithTx(r.Context(), func(tx store.Tx) error {
		for _, id := range targets {
			e := s.event(r, vocab.ActionNote)
			e.DAGID, e.RunID, e.TaskID, e.Params = run.DAGID, run.RunID, id, jsonParams(map[string]string{"note": note})
			if err := tx.SetNote(run.PK, id, note, e.Actor, e.At); err != nil {
				if errors.Is(err, store.ErrNotFound) {
					if id == "" {
						return notFound("dag run %s of dag %s not found", run.RunID, run.DAGID)
					}
					return notFound("task %s not found in dag run %s of dag %s", id, run.RunID, run.DAGID)
				}
				return err
			}
			if err := tx.InsertEvent(&e); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		s.wake()
	}
	return err
}
