package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestChaosShort runs the chaos harness of cmd/poolflow-chaos briefly against the race-built
// binary: two daemons and a dags test slot on one store, random kill -9 and restarts, DAG files
// deleted and restored, pools resized, for 20 s; then the quiet period (past the 30 s lease)
// and every check: no pool over capacity and no attempt running twice (from the intervals the
// tasks really ran), every run final, no claim held and no orphan process. CHAOS_SEED replays
// another run; `make chaos` is the long version.
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos harness runs about a minute")
	}
	dir := t.TempDir()
	harness := filepath.Join(dir, "poolflow-chaos")
	build := exec.Command("go", "build", "-o", harness, "github.com/poolflow/poolflow/cmd/poolflow-chaos")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the harness: %v\n%s", err, out)
	}
	seed := os.Getenv("CHAOS_SEED")
	if seed == "" {
		seed = "2"
	}
	c := exec.Command(harness, "-binary", binary, "-dir", filepath.Join(dir, "run"), "-seed", seed, "-time", "20s",
		"-daemons", "2", "-tests", "1", "-kill-every", "3s", "-long-task", "0", "-quiet-max", "2m", "-keep=false")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("chaos harness (seed %s): %v\n%s", seed, err, out)
	}
	t.Logf("%s", out)
}
