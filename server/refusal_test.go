package server

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/executor"
)

// TestRefusalNamesTheRefusingPool: a start whose task needs {default: 1, small: 1} while small's
// backlog is full answers 409 with small's message, and the rejection is counted under small,
// the pool that refused, not default, the first pool the task needs (§4.6).
func TestRefusalNamesTheRefusingPool(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken, readsOpen: true})
	b.writeDAG(t, "pair.yaml", "tasks:\n  - id: t\n    command: [\"true\"]\n    pool_requirements: {default: 1, small: 1}\n")
	b.waitDAG(t, "pair")
	b.pause(t, "echo")
	if rec := b.trigger(t, "echo", "e1", ""); rec.Code != http.StatusAccepted { // fills small's backlog
		t.Fatalf("first start: %d %s", rec.Code, rec.Body)
	}
	rec := b.trigger(t, "pair", "p1", "")
	if rec.Code != http.StatusConflict {
		t.Fatalf("start: %d, want 409: %s", rec.Code, rec.Body)
	}
	if p := problemOf(t, rec); p.Detail != "pool small: backlog full (max_queued 1)" {
		t.Errorf("detail %q", p.Detail)
	}
	// The notice that feeds the metrics follows the answer.
	timeout := time.After(20 * time.Second)
	for n := (executor.Notice{}); n.Kind != executor.NoticeRejected; {
		select {
		case n = <-b.notices:
		case <-timeout:
			t.Fatal("no rejection notice")
		}
	}
	metrics := string(b.must(t, http.StatusOK, http.MethodGet, "/metrics", ""))
	if !strings.Contains(metrics, `poolflow_rejections_total{pool="small"} 1`) || strings.Contains(metrics, `poolflow_rejections_total{pool="default"}`) {
		var lines []string
		for _, l := range strings.Split(metrics, "\n") {
			if strings.HasPrefix(l, "poolflow_rejections_total") {
				lines = append(lines, l)
			}
		}
		t.Errorf("rejections counted as %q, want under small", lines)
	}
}
