package runner

import (
	"strconv"
	"strings"
	"testing"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/attempt"
)

// TestAttemptEnvironment: each name appears once in an attempt's environment; the task's env
// wins over the daemon's, poolflow's variables over both, and the daemon's own poolflow
// variables (a daemon started from a task) are not passed on. os.StartProcess does not dedupe,
// and a child's getenv takes the first entry.
func TestAttemptEnvironment(t *testing.T) {
	t.Parallel()
	r := New(Config{DaemonID: "d1", StorePath: "/s.db"})
	r.SetEpoch(3)
	r.envOnce.Do(func() {}) // the daemon's environment, as if read at its start:
	r.envBase = withoutAttemptVars([]string{"HOME=/home/d", "PATH=/daemon/bin", "POOLFLOW_TASK_ID=outer", envEpoch + "=7"})
	a := &attemptRun{spec: &attempt.Spec{DAGID: "d", RunID: "r", Task: &dag.Task{ID: "t", Env: map[string]string{"PATH": "/task/bin",
		"POOLFLOW_TRY_NUMBER": "99", "MINE": "x"}}, Try: 2}, tag: "tag1"}
	env := r.env(a)
	got := map[string][]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = append(got[k], v)
	}
	want := map[string]string{"HOME": "/home/d", "PATH": "/task/bin", "MINE": "x", "POOLFLOW_TASK_ID": "t",
		"POOLFLOW_TRY_NUMBER": "2", "POOLFLOW_PARAMS": "{}", envAttempt: "tag1", envEpoch: strconv.Itoa(3),
		envDaemonID: "d1", envStore: "/s.db"}
	for k, v := range want {
		if len(got[k]) != 1 || got[k][0] != v {
			t.Errorf("%s = %q, want once %q", k, got[k], v)
		}
	}
	for k, vs := range got {
		if len(vs) != 1 {
			t.Errorf("%s appears %d times: %q", k, len(vs), vs)
		}
	}
}
