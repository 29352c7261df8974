package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

// TestSensorsShareATaskLimit is issue 25's reproduction on a real daemon: two runs of a DAG
// whose reschedule sensor has max_active_tis_per_dag: 1 take turns on that limit, half a poke
// interval apart. Once the file exists, the run whose sensor pokes first ends while the other
// sensor waits for its next poke; that one must then poke and succeed too. The daemon used to
// forget the limit with the first run, and the second sensor stayed scheduled ("queued for the
// next admission pass") while every pool it needs was free, until a restart.
func TestSensorsShareATaskLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	goFile := filepath.Join(dir, "go")
	p := newProject(t, "state: {path: ./state}\n", map[string]string{"sens.yaml": fmt.Sprintf(`
dag_id: sens
tasks: [{id: s, max_active_tis_per_dag: 1, sensor: {file_exists: %s, mode: reschedule, poke_interval: 2s, timeout: 60s}}]
`, goFile)})
	s := p.serve(t)
	state := func(runID string) string {
		status, body := s.get("/api/v1/dags/sens/dagRuns/" + runID + "/taskInstances/s")
		var ti struct{ State string }
		if status != http.StatusOK || json.Unmarshal([]byte(body), &ti) != nil {
			t.Fatalf("task instance of %s: %d %s", runID, status, body)
		}
		return ti.State
	}
	// A sensor's reschedule has no notice of its own: its state is read again after each pass.
	s.trigger("sens", "r1")
	until(t, 20*time.Second, "r1's sensor to wait for its next poke", func() bool { return state("r1") == "up_for_reschedule" }, s.logs)
	// A phase, not a wait for a condition: r2 pokes half an interval after r1 from now on, so
	// either run ends while the other's sensor waits for its next poke. Nothing but the clock
	// marks that moment (executor's TestTaskLimitOutlivesARun steps the same on a fake clock).
	time.Sleep(time.Second)
	s.trigger("sens", "r2")
	until(t, 20*time.Second, "r2's sensor to wait for its next poke", func() bool { return state("r2") == "up_for_reschedule" }, s.logs)
	touch(t, goFile)
	for _, run := range []string{"r1", "r2"} {
		if !s.logs.waitLine(`msg="run ended" dag_id=sens run_id=`+run+` state=success`, 20*time.Second) {
			t.Fatalf("run %s did not succeed within 20s of the file's creation; its sensor is %s", run, state(run))
		}
	}
}
