package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/poolflow/poolflow/executor"
)

// TestMetrics checks the pool gauges read at scrape time and the counters fed by the daemon's
// notices.
func TestMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.pause(t, "held")
	b.trigger(t, "held", "r1", "")
	if rec := b.trigger(t, "quick", "q1", ""); rec.Code != http.StatusOK {
		t.Fatalf("start: %d %s", rec.Code, rec.Body)
	}
	b.waitRunEnd(t, "quick", "q1")
	rec := b.do(t, http.MethodGet, "/metrics", "", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("metrics: %d", rec.Code)
	}
	body := rec.Body.String()
	for _, want := range []string{
		`poolflow_pool_slots{pool="db"} 1`,
		`poolflow_pool_slots{pool="default"} 4`,
		`poolflow_pool_occupied_slots{pool="db"} 0`,
		`poolflow_pool_queued_entries{pool="db"} 1`,
		`poolflow_pool_state_available 1`,
		`poolflow_admissions_total{pool="default"} 1`,
		`poolflow_admission_wait_seconds_count{pool="default"} 1`,
		`poolflow_attempts_total{dag_id="quick",state="success"} 1`,
		`poolflow_attempt_duration_seconds_count{dag_id="quick",state="success"} 1`,
		`poolflow_dag_runs_total{dag_id="quick",state="success"} 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestMetricsObserve feeds notices of every kind straight in.
func TestMetricsObserve(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	for _, n := range []executorNotice{
		{kind: "expired", pool: "db"}, {kind: "rejected", pool: "small"}, {kind: "rejected", pool: "small"},
	} {
		m.Observe(n.notice())
	}
	rec := serve(m.Handler(), "/metrics")
	for _, want := range []string{`poolflow_expirations_total{pool="db"} 1`, `poolflow_rejections_total{pool="small"} 2`} {
		if !strings.Contains(rec, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

type executorNotice struct{ kind, pool string }

func (n executorNotice) notice() executor.Notice {
	return executor.Notice{Kind: executor.NoticeKind(n.kind), Pool: n.pool}
}

func serve(h http.Handler, path string) string {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Body.String()
}
