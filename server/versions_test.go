package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// waitVersion waits until a daemon's pass recorded version n of a DAG as its current one.
func (b *bundle) waitVersion(t testing.TB, dagID string, n int) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		if v, err := b.st.GetDAGVersion(context.Background(), dagID, 0); err == nil && v.Version == n {
			return
		}
		select {
		case <-b.notices:
		case <-timeout:
			t.Fatalf("dag %s: version %d not recorded", dagID, n)
		}
	}
}

// TestDAGSource (§12): a DAG's source as JSON and as text, the current version by default;
// a changed file is version 2, listed first, and version 1 keeps its text; a version that is
// not stored and a DAG that is not known are 404s, a bad number a 400.
func TestDAGSource(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.waitVersion(t, "quick", 1)
	req := func(path, accept string) (int, string, string) {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		rec := httptest.NewRecorder()
		b.srv.ServeHTTP(rec, r)
		return rec.Code, rec.Header().Get("Content-Type"), rec.Body.String()
	}
	code, ct, body := req("/api/v1/dagSources/quick", "text/plain")
	if code != http.StatusOK || !strings.HasPrefix(ct, "text/plain") || body != testDAGs["quick.yaml"] {
		t.Fatalf("text: %d %s\n%q", code, ct, body)
	}
	code, _, body = req("/api/v1/dagSources/quick", "application/json, text/plain")
	if code != http.StatusOK || !strings.Contains(body, `"version_number": 1`) || !strings.Contains(body, `"is_current": true`) {
		t.Fatalf("json: %d\n%s", code, body)
	}
	if rec := b.trigger(t, "quick", "q1", ""); rec.Code != http.StatusOK {
		t.Fatalf("trigger quick: %d %s", rec.Code, rec.Body)
	}
	b.waitRunEnd(t, "quick", "q1")
	changed := testDAGs["quick.yaml"] + "# changed\n"
	b.writeDAG(t, "quick.yaml", changed)
	b.waitVersion(t, "quick", 2)
	if _, _, body := req("/api/v1/dagSources/quick?version_number=1", "text/plain"); body != testDAGs["quick.yaml"] {
		t.Fatalf("version 1 after the change: %q", body)
	}
	if _, _, body := req("/api/v1/dagSources/quick", "text/plain"); body != changed {
		t.Fatalf("the current version after the change: %q", body)
	}
	code, _, body = req("/api/v1/dags/quick/versions?limit=1", "")
	if code != http.StatusOK || !strings.Contains(body, `"version_number": 2`) || strings.Contains(body, `"version_number": 1`) ||
		!strings.Contains(body, `"total_entries": 2`) {
		t.Fatalf("versions: %d\n%s", code, body)
	}
	// A clear runs the current version: its preview says which, and which the run has.
	rec := b.do(t, http.MethodPost, "/api/v1/dags/quick/clearTaskInstances",
		`{"dag_run_id": "q1", "only_failed": false, "dry_run": true}`, "")
	if body := rec.Body.String(); rec.Code != http.StatusOK || !strings.Contains(body, `"dag_version": 2`) ||
		!strings.Contains(body, `"run_dag_version": 1`) {
		t.Fatalf("clear preview: %d\n%s", rec.Code, body)
	}
	run := b.must(t, http.StatusOK, http.MethodGet, "/api/v1/dags/quick/dagRuns/q1", "")
	if !strings.Contains(string(run), `"dag_version": 1`) {
		t.Fatalf("run: %s", run)
	}
	for path, want := range map[string]int{
		"/api/v1/dagSources/quick?version_number=3":   http.StatusNotFound,
		"/api/v1/dagSources/nope":                     http.StatusNotFound,
		"/api/v1/dagSources/quick?version_number=one": http.StatusBadRequest,
		"/api/v1/dagSources/quick?version_number=0":   http.StatusBadRequest,
		"/api/v1/dags/nope/versions":                  http.StatusNotFound,
		"/api/v1/dags/quick/versions?limit=0":         http.StatusBadRequest,
	} {
		if code, _, body := req(path, ""); code != want {
			t.Errorf("GET %s: %d, want %d\n%s", path, code, want, body)
		}
	}
}
