package executor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/executor/runner"
	"github.com/poolflow/poolflow/store/storetest"
)

const soakDAG = `dag_id: soak
tasks:
  - {id: a, bash: 'true'}
  - {id: b, bash: 'true', depends_on: [a]}
`

// soakTables are the tables that grow with runs and requests; deleted_runs is counted apart.
var soakTables = []string{"dag_runs", "task_instances", "attempts", "queue_entries", "entry_requirements", "commands",
	"events", "dag_versions"}

// TestRetentionSoak (§12): ten minutes of simulated time, a run triggered every 5 s (each an
// audit event), its attempts writing their logs as a runner does, and the daemon's retention
// (runs 2m, logs 1m, events 3m) every 30 s. Once the ages have passed, the rows of every table
// and the run folders in the logs folder stay under what the ages allow, instead of growing
// with the 120 runs; the last run of the DAG and the open runs are never deleted; tombstones
// are pruned a day on.
func TestRetentionSoak(t *testing.T) {
	t.Parallel()
	b := setup(t, "retention: {runs: 2m, logs: 1m, events: 3m}\n", map[string]string{"soak.yaml": soakDAG})
	h, clock := b.harness(t, nil)
	ctx := context.Background()
	count := func(table string) int { return storetest.Count(t, b.st, "SELECT COUNT(*) FROM "+table) }
	logDirs := func() int {
		ents, err := os.ReadDir(filepath.Join(b.stateDir, "logs", "soak"))
		if os.IsNotExist(err) {
			return 0
		} else if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	// run ends the attempts as the runner would: each writes its log first.
	run := func(specs []*attempt.Spec) {
		for len(specs) > 0 {
			for _, s := range specs {
				path := runner.LogPath(b.stateDir, s.DAGID, s.RunID, s.Task.ID, s.Try)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte("ran\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			specs = h.succeed(t, specs...)
		}
	}
	const step = 5 * time.Second
	peak := map[string]int{}
	var pruned int
	for i := 1; i <= 120; i++ {
		clock.Advance(step)
		_, started := h.trigger(t, TriggerRequest{DAGID: "soak", RunID: fmt.Sprintf("r%03d", i), Who: "cli:soak@host"})
		run(started)
		if i%6 != 0 {
			continue
		}
		// The pruner's cycle, and the walk of the logs folder it does hourly.
		res, err := h.Prune(true)
		if err != nil {
			t.Fatal(err)
		}
		pruned += res.Runs
		h.settle(t) // memory reads what the pruner deleted (nothing of it was open)
		if elapsed := time.Duration(i) * step; elapsed <= 4*time.Minute {
			continue // the ages have not all passed yet
		}
		for _, tb := range soakTables {
			peak[tb] = max(peak[tb], count(tb))
		}
		peak["logs"] = max(peak["logs"], logDirs())
	}
	// A run every 5 s kept 2 min plus the 30 s between cycles: 30 runs at most, of two tasks;
	// events 3.5 min: 42; logs 1.5 min: 18 run folders.
	want := map[string]int{"dag_runs": 31, "task_instances": 62, "attempts": 62, "queue_entries": 62, "commands": 0,
		"events": 43, "dag_versions": 1, "logs": 19}
	want["entry_requirements"] = want["queue_entries"] * 3 // default, _global, _dag/<run>
	for name, bound := range want {
		if peak[name] > bound {
			t.Errorf("%s: up to %d rows after the ages passed, want at most %d", name, peak[name], bound)
		}
	}
	t.Logf("peaks after the ages passed: %v; %d runs pruned", peak, pruned)
	if pruned < 80 || count("dag_runs") > 31 || logDirs() > 19 {
		t.Fatalf("%d runs pruned, %d left, %d log folders: retention did not keep up", pruned, count("dag_runs"), logDirs())
	}
	if _, err := b.st.GetRun(ctx, "soak", "r120"); err != nil {
		t.Fatalf("the last run: %v", err)
	}
	// Tombstones: none for runs that ended over an hour ago, and those of recent deletions go
	// a day on.
	if n := count("deleted_runs"); n > pruned {
		t.Fatalf("%d tombstones for %d runs pruned", n, pruned)
	}
	clock.Advance(25 * time.Hour)
	_, started := h.trigger(t, TriggerRequest{DAGID: "soak", RunID: "later"})
	run(started)
	if _, err := h.Prune(true); err != nil {
		t.Fatal(err)
	}
	if n, runs := count("deleted_runs"), count("dag_runs"); n > 1 || runs != 1 {
		t.Fatalf("a day later: %d tombstones (want at most the highest id's), %d runs (want the last)", n, runs)
	}
	if n := logDirs(); n != 1 {
		t.Fatalf("a day later: %d log folders, want the last run's", n)
	}
}
