package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestOutputRoute: GET .../output answers the JSON object the task instance's successful
// attempt wrote, under value; a task instance without one is a 404 naming it; the route takes
// the token as the logs' does.
func TestOutputRoute(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken})
	b.writeDAG(t, "emits.yaml", `
tasks:
  - id: emit
    bash: 'echo "{\"files\": [\"a.csv\"], \"n\": 1}" > "$POOLFLOW_OUTPUT"'
  - id: quiet
    command: ["true"]
`)
	b.waitDAG(t, "emits")
	if rec := b.trigger(t, "emits", "e1", ""); rec.Code != http.StatusOK && rec.Code != http.StatusAccepted {
		t.Fatalf("trigger: %d %s", rec.Code, rec.Body)
	}
	if state := b.waitRunEnd(t, "emits", "e1"); state != "success" {
		t.Fatalf("run ended %s", state)
	}
	const base = "/api/v1/dags/emits/dagRuns/e1/taskInstances/"
	rec := b.do(t, http.MethodGet, base+"emit/output", "", testToken)
	var got OutputJSON
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &got) != nil || got.TaskID != "emit" ||
		got.TryNumber != 1 || compact(got.Value) != `{"files":["a.csv"],"n":1}` {
		t.Fatalf("output: %d %s", rec.Code, rec.Body)
	}
	rec = b.do(t, http.MethodGet, base+"quiet/output", "", testToken)
	if p := problemOf(t, rec); rec.Code != http.StatusNotFound || !strings.Contains(p.Detail, "task quiet of dag run e1 has no output") {
		t.Fatalf("no output: %d %s", rec.Code, rec.Body)
	}
	if rec := b.do(t, http.MethodGet, base+"emit/output", "", ""); rec.Code != http.StatusUnauthorized {
		t.Fatalf("without the token: %d", rec.Code)
	}
}
