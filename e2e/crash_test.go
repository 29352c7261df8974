package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/executor/runner"
)

// TestCrashRecovery kills the daemon with SIGKILL while an attempt holds a pool claim: the
// attempt dies with it. Started again, the daemon runs the attempt again with the same try
// number (its log gets a replay line); no claim stays held, and the run ends.
func TestCrashRecovery(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	marker := filepath.Join(tmp, "ran-once")
	started := pipe(t, tmp, "started")
	p := newProject(t, "pools:\n  db: 1\n", map[string]string{"crash.yaml": fmt.Sprintf(`
dag_id: crash
tasks:
  - id: hold
    pool_requirements: {db: 1}
    bash: 'if [ -f %[1]s ]; then echo replayed; exit 0; fi; touch %[1]s; echo $$ > %[2]s; echo first; sleep 60'
  - id: after
    depends_on: [hold]
    bash: echo after
`, marker, started.Path)})
	first := p.serve(t, "--daemon-id", "crashy")
	p.run(t, "dags", "trigger", "crash", "--run-id", "r1")
	oldPID := pidLine(t, started, "the first attempt to start")
	st := p.open(t)
	// The attempt's start (its process group) is written with the daemon's next pass.
	until(t, 10*time.Second, "the claim's process group to be recorded", func() bool {
		claims, err := st.ListClaims(context.Background())
		return err == nil && len(claims) > 0 && claims[0].PGID == oldPID
	}, first.logs)
	first.kill()
	// The attempt's processes die with their daemon (its watchdog kills them), before any other
	// daemon could hand their slots out again.
	exited(t, oldPID, 10*time.Second, "the attempt to die with its daemon")

	second := p.serve(t, "--daemon-id", "crashy")
	defer second.stop(30 * time.Second)
	if state := runEnded(t, 30*time.Second, "crash", "r1", second.logs); state != "success" {
		t.Fatalf("run %s", state)
	}
	if alive(oldPID) {
		t.Fatalf("process %d of the previous life survived the restart", oldPID)
	}
	run, _ := st.GetRun(context.Background(), "crash", "r1")
	if run.State != "success" {
		t.Fatalf("run %s", run.State)
	}
	tis, err := st.ListTaskInstances(context.Background(), run.PK)
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range tis {
		if ti.State != "success" || ti.TryNumber != 1 {
			t.Errorf("%s: %s try %d, want success try 1", ti.TaskID, ti.State, ti.TryNumber)
		}
	}
	log, err := os.ReadFile(runner.LogPath(p.state, "crash", "r1", "hold", 1))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "first\n--- replay ---\nreplayed") {
		t.Errorf("log = %q", log)
	}
	claims, err := st.ListClaims(context.Background())
	if err != nil || len(claims) != 0 {
		t.Fatalf("claims after the run: %v %v", claims, err)
	}
}
