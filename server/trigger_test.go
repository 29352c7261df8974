package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestTriggerStatuses covers the answers of a manual start: 200 admitted, 202 queued with the
// first waiting entry, 409 with the pool's message, and 404 for an unknown DAG.
func TestTriggerStatuses(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken, readsOpen: true})
	b.pause(t, "held")

	rec := b.trigger(t, "quick", "q1", `, "conf": {"a": [1, 2]}, "logical_date": "2026-01-01T00:00:00Z"`)
	if rec.Code != http.StatusOK {
		t.Fatalf("admitted start: %d %s", rec.Code, rec.Body)
	}
	b.golden(t, "trigger_admitted", rec.Body.Bytes())

	rec = b.trigger(t, "held", "r1", "")
	if rec.Code != http.StatusAccepted {
		t.Fatalf("queued start: %d %s", rec.Code, rec.Body)
	}
	b.golden(t, "trigger_queued", rec.Body.Bytes())
	var queued struct {
		Queued  bool   `json:"queued"`
		QueueID int64  `json:"queueId"`
		Pool    string `json:"pool"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &queued); err != nil || !queued.Queued || queued.QueueID == 0 ||
		queued.Pool != "db" {
		t.Fatalf("202 body %s (%v)", rec.Body, err)
	}

	tests := []struct {
		name, dag, runID, extra string
		want                    int
		detail                  string
	}{
		{"no queue refused", "held", "r2", `, "queue": false`, http.StatusConflict, "asked not to queue"},
		{"run id taken", "quick", "q1", "", http.StatusConflict, "already exists"},
		{"unknown dag", "nosuch", "x", "", http.StatusNotFound, "dag nosuch not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := b.trigger(t, tt.dag, tt.runID, tt.extra)
			if rec.Code != tt.want {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.want, rec.Body)
			}
			if p := problemOf(t, rec); !strings.Contains(p.Detail, tt.detail) {
				t.Errorf("detail %q lacks %q", p.Detail, tt.detail)
			}
		})
	}
}

// TestBacklogFull: a start whose entry a full backlog (max_queued) rejects answers 409 with the
// pool's message.
func TestBacklogFull(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken, readsOpen: true})
	b.pause(t, "echo")
	if rec := b.trigger(t, "echo", "e1", ""); rec.Code != http.StatusAccepted {
		t.Fatalf("first start: %d %s", rec.Code, rec.Body)
	}
	rec := b.trigger(t, "echo", "e2", "")
	if rec.Code != http.StatusConflict {
		t.Fatalf("second start: %d, want 409: %s", rec.Code, rec.Body)
	}
	if p := problemOf(t, rec); !strings.Contains(p.Detail, "small") {
		t.Errorf("detail %q does not name the pool", p.Detail)
	}
}

// TestStoreUnavailable makes the store fail (closed under the daemon and the server): the seed's
// three requests answer 503 pool state is unavailable, and so does every read of pool state.
func TestStoreUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken, readsOpen: true})
	b.pause(t, "held")
	rec := b.trigger(t, "held", "r1", "")
	if rec.Code != http.StatusAccepted {
		t.Fatalf("start: %d %s", rec.Code, rec.Body)
	}
	if err := b.st.Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ method, path, body string }{
		{http.MethodGet, "/pools", ""},
		{http.MethodPost, "/pools/db/queue/1/cancel", ""},
		{http.MethodPost, "/api/v1/dags/quick/dagRuns", `{"dag_run_id": "q9"}`},
		{http.MethodGet, "/api/v1/pools", ""},
		{http.MethodGet, "/api/v1/dags/held/dagRuns/r1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			rec := b.do(t, tt.method, tt.path, tt.body, testToken)
			if rec.Code != http.StatusServiceUnavailable {
				t.Fatalf("status %d, want 503: %s", rec.Code, rec.Body)
			}
			if p := problemOf(t, rec); p.Detail != "pool state is unavailable" {
				t.Errorf("detail %q", p.Detail)
			}
		})
	}
	rec = b.do(t, http.MethodGet, "/api/v1/health", "", "")
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"unhealthy"`) {
		t.Errorf("health with a closed store: %d %s", rec.Code, rec.Body)
	}
	rec = b.do(t, http.MethodGet, "/metrics", "", "")
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "poolflow_pool_state_available 0") {
		t.Errorf("metrics with a closed store: %d", rec.Code)
	}
}

// TestNoDaemon: without a scheduler in the process, reads work and starts answer 503.
func TestNoDaemon(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	srv := New(Config{Store: b.st, StateDir: b.stateDir, Settings: b.cfg})
	t.Cleanup(func() { srv.Close() })
	b.srv = srv
	if rec := b.do(t, http.MethodGet, "/pools", "", ""); rec.Code != http.StatusOK {
		t.Fatalf("board: %d", rec.Code)
	}
	rec := b.do(t, http.MethodPost, "/api/v1/dags/quick/dagRuns", "{}", "")
	// 409 "not loaded now" once the bundle's daemon has recorded the DAG, 404 before.
	if rec.Code != http.StatusNotFound && rec.Code != http.StatusServiceUnavailable && rec.Code != http.StatusConflict {
		t.Fatalf("start without daemon: %d %s", rec.Code, rec.Body)
	}
}
