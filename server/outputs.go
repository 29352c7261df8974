package server

import (
	"encoding/json"
	"net/http"
)

// OutputJSON is a task instance's output (§14), Airflow's XCom entry in spirit: the JSON object
// its successful attempt published, under value.
type OutputJSON struct {
	DAGID     string          `json:"dag_id"`
	DAGRunID  string          `json:"dag_run_id"`
	TaskID    string          `json:"task_id"`
	TryNumber int             `json:"try_number"`
	Value     json.RawMessage `json:"value"`
}

// getOutput is GET .../taskInstances/{task_id}/output: the task instance's output, 404 while it
// has none (it has not succeeded, or its successful attempt wrote none). Outputs are data the
// task produced, as its logs are, so the route takes the bearer token as the logs' does.
func (s *Server) getOutput(w http.ResponseWriter, r *http.Request) {
	t, err := s.taskInstanceOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if t.ti.Output == "" {
		s.fail(w, r, notFound("task %s of dag run %s has no output (state %s)", t.ti.TaskID, t.run.RunID, t.ti.State))
		return
	}
	writeJSON(w, http.StatusOK, OutputJSON{DAGID: t.run.DAGID, DAGRunID: t.run.RunID, TaskID: t.ti.TaskID,
		TryNumber: t.ti.TryNumber, Value: json.RawMessage(t.ti.Output)})
}
