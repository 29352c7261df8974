package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// fuzzRoutes are the routes that read a request body.
var fuzzRoutes = []struct{ method, path string }{
	{http.MethodPost, "/api/v1/dags/held/dagRuns"},
	{http.MethodPatch, "/api/v1/dags/held"},
	{http.MethodPost, "/api/v1/pools"},
	{http.MethodPatch, "/api/v1/pools/fuzz"},
	{http.MethodPost, "/api/v1/rules/test"},
	{http.MethodPost, "/api/v1/dags/gate/dagRuns/g1/taskInstances/approve/approve"},
	{http.MethodPost, "/api/v1/dags/gate/dagRuns/g1/taskInstances/approve/reject"},
	{http.MethodPost, "/pools/db/queue/1/cancel"},
	{http.MethodPost, "/api/v1/dags/gate/clearTaskInstances"},
	{http.MethodPost, "/api/v1/dags/gate/dagRuns/g1/clear"},
	{http.MethodPatch, "/api/v1/dags/gate/dagRuns/g1/taskInstances/approve"},
	{http.MethodPatch, "/api/v1/dags/gate/dagRuns/g1"},
}

// FuzzRequestBodies sends arbitrary bodies to every route that reads one and asserts the server
// never answers 5xx (bad input is a 4xx problem naming what is wrong) and never panics.
func FuzzRequestBodies(f *testing.F) {
	b := setup(f, setupOpts{})
	b.pause(f, "held")
	b.must(f, http.StatusOK, http.MethodPost, "/api/v1/pools", `{"name": "fuzz", "slots": 2}`)
	b.must(f, http.StatusOK, http.MethodPost, "/api/v1/dags/gate/dagRuns", `{"dag_run_id": "g1"}`)
	seeds := []string{
		``, `{}`, `null`, `[]`, `"x"`, `{"conf": {"a": 1}}`, `{"conf": null, "queue": false}`, `{"dag_run_id": "a/b"}`,
		`{"logical_date": "2026-13-01T00:00:00Z"}`, `{"is_paused": true}`, `{"is_paused": 1}`,
		`{"name": "p", "slots": 2147483648}`, `{"name": "p", "slots": 1, "starvation_after": 9223372036854775807}`,
		`{"name": "p", "slots": 1, "starvation_after": "-5m"}`, `{"slots": -1, "on_resize": "drain"}`,
		`{"params": {"a": [1, {"b": null}]}, "try_number": 2, "kind": "sensor", "trigger": "catchup"}`,
		`{"note": "` + strings.Repeat("n", 1000) + `"}`, `{"a":` + strings.Repeat("[", 20000) + `}`, `{"x": 1e999}`,
		"{\"note\": \"\xff\xfe\"}", `{"conf": {"a": 1}} trailing`, `{"slots": 1.5}`, `{"dag_run_id": "` + strings.Repeat("r", 300) + `"}`,
		`{"dag_run_id": "g1", "task_ids": ["approve"], "include_downstream": true, "dry_run": false}`,
		`{"dag_run_id": "g1", "task_ids": [1]}`, `{"dag_run_id": "g1", "task_ids": ["nosuch"], "only_running": true}`,
		`{"dry_run": false, "only_failed": "yes"}`, `{"new_state": "success", "include_upstream": true, "dry_run": true}`,
		`{"new_state": "queued"}`, `{"new_state": null, "note": null}`, `{"state": "queued", "note": ""}`, `{"state": 7}`,
	}
	for i := range fuzzRoutes {
		for _, s := range seeds {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		rec := b.do(t, rt.method, rt.path, string(body), "")
		if rec.Code >= 500 {
			t.Fatalf("%s %s with %q: status %d: %s", rt.method, rt.path, body, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			var p problem
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p.Status != rec.Code || p.Detail == "" {
				t.Fatalf("%s %s: error answer is not a problem: %s", rt.method, rt.path, rec.Body)
			}
		}
	})
}
