package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/executor/runner"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The read models and the action path the web UI (package ui) shares with the API: the same
// view builders, with a context instead of a request, and Call, which sends an action through
// the API's own handler so a click in the UI and a request to the API are one code path.

// Store is the store the server reads.
func (s *Server) Store() store.Store { return s.cfg.Store }

// Now is the server's clock in UTC.
func (s *Server) Now() time.Time { return s.now() }

// Settings is the poolflow.yaml in force: the daemon's, which changes when it reloads the file,
// else the one the server was given.
func (s *Server) Settings() *config.Config {
	if s.cfg.Daemon != nil {
		return s.cfg.Daemon.Settings()
	}
	return s.cfg.Settings
}

// ConfigStatus is the daemon's configuration status (which file is in force, and why a newer
// one is not); the zero value without a daemon.
func (s *Server) ConfigStatus() executor.ConfigStatus {
	if s.cfg.Daemon == nil {
		return executor.ConfigStatus{File: s.cfg.Settings.File}
	}
	return s.cfg.Daemon.ConfigStatus()
}

// DAGs lists every DAG, loaded or only remembered by the store, by id.
func (s *Server) DAGs(ctx context.Context) ([]DAGJSON, error) { return s.dagViews(ctx, true) }

// DAG is one DAG's view (404 error when unknown) and its loaded definition (nil when it is not
// loaded now).
func (s *Server) DAG(ctx context.Context, id string) (DAGJSON, *dag.DAG, error) {
	v, err := s.dagByID(ctx, id)
	if err != nil {
		return v, nil, err
	}
	return v, s.findDAG(id), nil
}

// Run reads one run; a 404 error when unknown.
func (s *Server) Run(ctx context.Context, dagID, runID string) (store.Run, error) {
	return s.runByID(ctx, dagID, runID)
}

// RunView is a run's API view.
func RunView(r store.Run) DAGRunJSON { return runView(r) }

// TaskInstances lists a run's task instances in DAG order, as GET .../taskInstances does.
func (s *Server) TaskInstances(ctx context.Context, run store.Run) ([]TaskInstanceJSON, error) {
	tis, entries, d, err := s.runTasks(ctx, run)
	if err != nil {
		return nil, err
	}
	weights := weightsOf(d)
	out := make([]TaskInstanceJSON, 0, len(tis))
	for _, ti := range tis {
		out = append(out, tiView(run, ti, taskOf(d, ti.TaskID), weights[ti.TaskID], entryOf(entries, ti.TaskID)))
	}
	return out, nil
}

// TaskInstanceDetail is one task instance with what the API says about it.
type TaskInstanceDetail struct {
	Run          store.Run
	View         TaskInstanceJSON
	Task         *dag.Task        // nil when its DAG or task is not loaded now
	Entry        *store.Entry     // its newest queue entry
	Dependencies []DependencyJSON // what holds it back, as GET .../dependencies
	Rendered     *RenderedView    // its templates evaluated (§14); nil for a task without any
}

// DependencyJSON is one unmet dependency of a task instance.
type DependencyJSON = dependencyJSON

// TaskInstance reads one task instance; a 404 error for an unknown run or task.
func (s *Server) TaskInstance(ctx context.Context, dagID, runID, taskID string) (TaskInstanceDetail, error) {
	t, err := s.taskInstanceByID(ctx, dagID, runID, taskID)
	if err != nil {
		return TaskInstanceDetail{}, err
	}
	return TaskInstanceDetail{Run: t.run, View: t.view(), Task: t.task, Entry: t.entry, Dependencies: t.dependencies(),
		Rendered: t.rendered()}, nil
}

// PoolBoard is GET /pools.
func (s *Server) PoolBoard(ctx context.Context) (BoardJSON, error) { return s.board(ctx) }

// LogPath is the file of an attempt's log.
func (s *Server) LogPath(run store.Run, taskID string, try int) string {
	return runner.LogPath(s.cfg.StateDir, run.DAGID, run.RunID, taskID, try)
}

// StatusOf maps an error of these reads to its HTTP status and message, as the API answers.
func (s *Server) StatusOf(err error) (int, string) { return s.classify(err) }

// Call sends one request to the API's router in process, with the JSON body and the token, and
// returns the status and body of its answer. The UI's actions go through it.
func (s *Server) Call(ctx context.Context, method, path string, body any, token string) (int, []byte) {
	var rd *bytes.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return http.StatusInternalServerError, nil
		}
		rd = bytes.NewReader(data)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, rd)
	if err != nil {
		return http.StatusBadRequest, nil
	}
	req.RemoteAddr = remoteOf(ctx) // the browser's, when ctx is the UI's request's (actor.go)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	s.router.ServeHTTP(rec, req)
	return rec.status, rec.body.Bytes()
}

// recorder keeps an in-process answer.
type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}

// ProblemDetail is the detail of an API error answer, or the body itself when it is not one.
func ProblemDetail(body []byte) string {
	var p problem
	if json.Unmarshal(body, &p) == nil && p.Detail != "" {
		return p.Detail
	}
	return string(bytes.TrimSpace(body))
}

// ErrCommandPending says a command was queued for the process that owns the run, which has not
// applied it yet.
var ErrCommandPending = errCommandPending

// Command sends an operator command (fail, cancel, force, approve, reject) on a task instance,
// the way the API's routes do: through this daemon's loop, or through the store to the process
// that owns the run. It refuses an unknown run or task with a 404 error. The actor is ctx's
// (Actor).
func (s *Server) Command(ctx context.Context, dagID, runID, taskID string, kind vocab.CommandKind, note string) error {
	t, err := s.taskInstanceByID(ctx, dagID, runID, taskID)
	if err != nil {
		return err
	}
	return s.sendCommand(ctx, t.run, store.Command{Kind: kind, TaskID: taskID, Who: Actor(ctx), Note: note})
}
