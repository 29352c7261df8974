package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestRoutesGolden walks every read route over one scenario and compares each answer with its
// golden file: a paused DAG whose task waits for db, a quick run that succeeded, and an approval
// gate.
func TestRoutesGolden(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken, readsOpen: true})
	b.pause(t, "held")
	if rec := b.trigger(t, "held", "r1", `, "conf": {"region": "us"}, "note": "by test"`); rec.Code != http.StatusAccepted {
		t.Fatalf("trigger held: %d %s", rec.Code, rec.Body)
	}
	if rec := b.trigger(t, "quick", "q1", ""); rec.Code != http.StatusOK {
		t.Fatalf("trigger quick: %d %s", rec.Code, rec.Body)
	}
	if state := b.waitRunEnd(t, "quick", "q1"); state != "success" {
		t.Fatalf("quick ended %s", state)
	}
	if rec := b.trigger(t, "gate", "g1", ""); rec.Code != http.StatusOK {
		t.Fatalf("trigger gate: %d %s", rec.Code, rec.Body)
	}

	const run = "/api/v1/dags/held/dagRuns/r1"
	tests := []struct {
		name, path string
	}{
		{"dags", "/api/v1/dags"},
		{"dags_paused", "/api/v1/dags?paused=true"},
		{"dags_page", "/api/v1/dags?limit=1&offset=1"},
		{"dags_tags", "/api/v1/dags?tags=demo&dag_id_pattern=QUI"},
		{"dag", "/api/v1/dags/held"},
		{"dag_versions", "/api/v1/dags/quick/versions"},
		{"dag_source", "/api/v1/dagSources/quick?version_number=1"},
		{"dag_runs", "/api/v1/dags/held/dagRuns"},
		{"dag_runs_all", "/api/v1/dags/~/dagRuns?limit=2"},
		{"dag_run", run},
		{"dag_run_quick", "/api/v1/dags/quick/dagRuns/q1"},
		{"task_instances", run + "/taskInstances"},
		{"task_instance_waiting", run + "/taskInstances/load"},
		{"task_instance_upstream", run + "/taskInstances/after"},
		{"task_instance_done", "/api/v1/dags/quick/dagRuns/q1/taskInstances/only"},
		{"task_instance_gate", "/api/v1/dags/gate/dagRuns/g1/taskInstances/approve"},
		{"dependencies_waiting", run + "/taskInstances/load/dependencies"},
		{"dependencies_upstream", run + "/taskInstances/after/dependencies"},
		{"dependencies_done", "/api/v1/dags/quick/dagRuns/q1/taskInstances/only/dependencies"},
		{"dependencies_gate", "/api/v1/dags/gate/dagRuns/g1/taskInstances/approve/dependencies"},
		{"pools", "/api/v1/pools"},
		{"pool", "/api/v1/pools/db"},
		{"pool_board", "/pools"},
		{"import_errors", "/api/v1/importErrors"},
		{"health", "/api/v1/health"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := b.do(t, http.MethodGet, tt.path, "", "")
			if rec.Code != http.StatusOK {
				t.Fatalf("GET %s: %d %s", tt.path, rec.Code, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("content type %q", ct)
			}
			b.golden(t, tt.name, rec.Body.Bytes())
		})
	}
}

// TestNotFound checks that every kind of unknown resource in a path is a 404 problem.
func TestNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.pause(t, "held")
	b.trigger(t, "held", "r1", "")
	tests := []struct{ method, path string }{
		{http.MethodGet, "/api/v1/dags/nosuch"},
		{http.MethodPatch, "/api/v1/dags/nosuch"},
		{http.MethodGet, "/api/v1/dags/nosuch/dagRuns"},
		{http.MethodPost, "/api/v1/dags/nosuch/dagRuns"},
		{http.MethodGet, "/api/v1/dags/held/dagRuns/nosuch"},
		{http.MethodGet, "/api/v1/dags/held/dagRuns/nosuch/taskInstances"},
		{http.MethodGet, "/api/v1/dags/held/dagRuns/r1/taskInstances/nosuch"},
		{http.MethodGet, "/api/v1/dags/held/dagRuns/r1/taskInstances/nosuch/dependencies"},
		{http.MethodGet, "/api/v1/dags/held/dagRuns/r1/taskInstances/nosuch/logs/1"},
		{http.MethodGet, "/api/v1/dags/held/dagRuns/r1/taskInstances/load/logs/3"},
		{http.MethodPost, "/api/v1/dags/held/dagRuns/r1/taskInstances/nosuch/approve"},
		{http.MethodGet, "/api/v1/pools/nosuch"},
		{http.MethodPatch, "/api/v1/pools/nosuch"},
		{http.MethodDelete, "/api/v1/pools/nosuch"},
		{http.MethodPost, "/pools/nosuch/queue/1/cancel"},
		{http.MethodPost, "/pools/db/queue/999/cancel"},
		{http.MethodPost, "/pools/db/queue/abc/cancel"},
		{http.MethodPost, "/pools/small/queue/1/cancel"}, // entry 1 needs db, not small
		{http.MethodGet, "/api/v1/nosuch"},
		{http.MethodGet, "/nosuch"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			body := ""
			if tt.method == http.MethodPatch {
				body = `{"is_paused": true}`
				if strings.Contains(tt.path, "pools") {
					body = `{"slots": 3}`
				}
			}
			rec := b.do(t, tt.method, tt.path, body, "")
			if rec.Code != http.StatusNotFound {
				t.Fatalf("status %d, want 404: %s", rec.Code, rec.Body)
			}
			problemOf(t, rec)
		})
	}
}

// TestBadRequests checks that invalid bodies and queries are 400 problems naming the field.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	tests := []struct {
		name, method, path, body, field string
	}{
		{"malformed", http.MethodPost, "/api/v1/dags/quick/dagRuns", `{"conf": `, "body"},
		{"not an object", http.MethodPost, "/api/v1/dags/quick/dagRuns", `[1, 2]`, "body"},
		{"trailing data", http.MethodPost, "/api/v1/dags/quick/dagRuns", `{} {}`, "body"},
		{"unknown field", http.MethodPost, "/api/v1/dags/quick/dagRuns", `{"confx": {}}`, "confx"},
		{"conf not object", http.MethodPost, "/api/v1/dags/quick/dagRuns", `{"conf": [1]}`, "conf"},
		{"conf wrong type", http.MethodPost, "/api/v1/dags/quick/dagRuns", `{"conf": "x"}`, "conf"},
		{"queue wrong type", http.MethodPost, "/api/v1/dags/quick/dagRuns", `{"queue": "no"}`, "queue"},
		{"bad logical date", http.MethodPost, "/api/v1/dags/quick/dagRuns", `{"logical_date": "yesterday"}`, "logical_date"},
		{"logical date type", http.MethodPost, "/api/v1/dags/quick/dagRuns", `{"logical_date": 12}`, "logical_date"},
		{"bad run id", http.MethodPost, "/api/v1/dags/quick/dagRuns", `{"dag_run_id": "../x"}`, "dag_run_id"},
		{"empty run id", http.MethodPost, "/api/v1/dags/quick/dagRuns", `{"dag_run_id": ""}`, "dag_run_id"},
		{"pause missing", http.MethodPatch, "/api/v1/dags/quick", `{}`, "is_paused"},
		{"pause wrong type", http.MethodPatch, "/api/v1/dags/quick", `{"is_paused": "yes"}`, "is_paused"},
		{"pause empty body", http.MethodPatch, "/api/v1/dags/quick", ``, "body"},
		{"update mask", http.MethodPatch, "/api/v1/dags/quick?update_mask=owners", `{"is_paused": true}`, "update_mask"},
		{"pool name missing", http.MethodPost, "/api/v1/pools", `{"slots": 1}`, "name"},
		{"pool slots missing", http.MethodPost, "/api/v1/pools", `{"name": "x"}`, "slots"},
		{"pool slots type", http.MethodPost, "/api/v1/pools", `{"name": "x", "slots": "many"}`, "slots"},
		{"pool slots invalid", http.MethodPost, "/api/v1/pools", `{"name": "x", "slots": -5}`, "slots"},
		{"pool name reserved", http.MethodPost, "/api/v1/pools", `{"name": "_x", "slots": 1}`, "name"},
		{"pool ordering", http.MethodPost, "/api/v1/pools", `{"name": "x", "slots": 1, "ordering": "fifo"}`, "ordering"},
		{"pool starvation", http.MethodPost, "/api/v1/pools", `{"name": "x", "slots": 1, "starvation_after": "soon"}`, "starvation_after"},
		{"pool starvation strict", http.MethodPost, "/api/v1/pools", `{"name": "x", "slots": 1, "ordering": "strict", "starvation_after": "1m"}`, "starvation_after"},
		{"pool rename", http.MethodPatch, "/api/v1/pools/db", `{"name": "other"}`, "name"},
		{"pool force", http.MethodDelete, "/api/v1/pools/db?force=maybe", ``, "force"},
		{"rules trigger", http.MethodPost, "/api/v1/rules/test", `{"trigger": "cron"}`, "trigger"},
		{"rules kind", http.MethodPost, "/api/v1/rules/test", `{"kind": "python"}`, "kind"},
		{"rules try", http.MethodPost, "/api/v1/rules/test", `{"try_number": 0}`, "try_number"},
		{"rules tags type", http.MethodPost, "/api/v1/rules/test", `{"tags": "a,b"}`, "tags"},
		{"limit", http.MethodGet, "/api/v1/dags?limit=0", ``, "limit"},
		{"limit text", http.MethodGet, "/api/v1/pools?limit=ten", ``, "limit"},
		{"offset", http.MethodGet, "/api/v1/importErrors?offset=-1", ``, "offset"},
		{"paused", http.MethodGet, "/api/v1/dags?paused=perhaps", ``, "paused"},
		{"approve body", http.MethodPost, "/api/v1/dags/gate/dagRuns/x/taskInstances/approve/approve", `{"note": 5}`, "note"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := b.do(t, tt.method, tt.path, tt.body, "")
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", rec.Code, rec.Body)
			}
			p := problemOf(t, rec)
			if !strings.HasPrefix(p.Detail, tt.field+": ") {
				t.Errorf("detail %q does not start with the field %q", p.Detail, tt.field)
			}
		})
	}
}

// TestLogRoute reads an attempt's log, with conf reaching the attempt as POOLFLOW_PARAMS, and
// checks a range request.
func TestLogRoute(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken, readsOpen: true})
	if rec := b.trigger(t, "echo", "e1", `, "conf": {"name": "log-test"}`); rec.Code != http.StatusOK {
		t.Fatalf("trigger: %d %s", rec.Code, rec.Body)
	}
	if state := b.waitRunEnd(t, "echo", "e1"); state != "success" {
		t.Fatalf("run ended %s", state)
	}
	path := "/api/v1/dags/echo/dagRuns/e1/taskInstances/say/logs/1"
	if rec := b.do(t, http.MethodGet, path, "", ""); rec.Code != http.StatusUnauthorized {
		t.Fatalf("log without token: %d", rec.Code)
	}
	rec := b.do(t, http.MethodGet, path, "", testToken)
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
		t.Fatalf("log: %d %q %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	if !strings.Contains(rec.Body.String(), `"name":"log-test"`) {
		t.Fatalf("log lacks the conf: %q", rec.Body)
	}
	ranged := b.rangeGet(t, path, "bytes=0-4")
	if ranged.Code != http.StatusPartialContent || ranged.Body.Len() != 5 {
		t.Fatalf("range: %d %q", ranged.Code, ranged.Body)
	}
	for _, bad := range []string{"0", "x", "-1"} {
		if rec := b.do(t, http.MethodGet, strings.TrimSuffix(path, "1")+bad, "", testToken); rec.Code != http.StatusBadRequest {
			t.Errorf("try %q: %d, want 400", bad, rec.Code)
		}
	}
}

// TestRulesTest asks which pool an attempt gets (no rules configured: the default pool).
func TestRulesTest(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken, readsOpen: true})
	rec := b.do(t, http.MethodPost, "/api/v1/rules/test",
		`{"dag_id": "etl_x", "tags": ["heavy"], "params": {"n": 1}, "logical_date": "2026-01-01T00:00:00Z"}`, "")
	if rec.Code != http.StatusOK {
		t.Fatalf("rules test: %d %s", rec.Code, rec.Body)
	}
	b.golden(t, "rules_test", rec.Body.Bytes())
	var res map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || res["pool"] != "default" {
		t.Fatalf("rules test answer %v (%v)", res, err)
	}
}

// TestPoolFullReason: a poking sensor holds db, so the next task needing db waits with reason
// pool_full naming the holder, in the task instance, its dependencies and the pool board.
func TestPoolFullReason(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	if rec := b.trigger(t, "sensor", "s1", ""); rec.Code != http.StatusOK {
		t.Fatalf("sensor start: %d %s", rec.Code, rec.Body)
	}
	rec := b.trigger(t, "urgent", "u1", "")
	if rec.Code != http.StatusAccepted {
		t.Fatalf("urgent start: %d %s", rec.Code, rec.Body)
	}
	const ti = "/api/v1/dags/urgent/dagRuns/u1/taskInstances/fix"
	b.golden(t, "task_instance_pool_full", b.must(t, http.StatusOK, http.MethodGet, ti, ""))
	b.golden(t, "dependencies_pool_full", b.must(t, http.StatusOK, http.MethodGet, ti+"/dependencies", ""))
	b.golden(t, "pool_db_busy", b.must(t, http.StatusOK, http.MethodGet, "/api/v1/pools/db", ""))
}
