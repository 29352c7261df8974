package retention

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/executor/runner"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/storetest"
	"github.com/poolflow/poolflow/vocab"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// setup is a store with runs of DAG d ended the given ages ago (0: open), each with a log
// file, and a state folder holding them.
func setup(t *testing.T, ages map[string]time.Duration) (*Cleaner, func(run string) bool) {
	t.Helper()
	dir := t.TempDir()
	st := storetest.Open(t, filepath.Join(dir, "poolflow.db"), store.Options{})
	ctx := context.Background()
	ids := make([]string, 0, len(ages))
	for id := range ages {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	err := st.WithTx(ctx, func(tx store.Tx) error {
		if err := tx.UpsertDAG("d", "d.yaml", "", now); err != nil {
			return err
		}
		for i, id := range ids {
			queued := now.Add(-30 * 24 * time.Hour).Add(time.Duration(i) * time.Second)
			r := &store.Run{DAGID: "d", RunID: id, RunType: vocab.RunManual, LogicalDate: queued, State: vocab.RunSuccess, QueuedAt: queued}
			if ages[id] == 0 {
				r.State = vocab.RunRunning
			} else {
				r.EndDate = now.Add(-ages[id])
			}
			if err := tx.InsertRun(r); err != nil {
				return err
			}
			path := runner.LogPath(dir, "d", id, "t", 1)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(path, []byte("log\n"), 0o644); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	hasLogs := func(run string) bool {
		_, err := os.Stat(runner.RunLogDir(dir, "d", run))
		return err == nil
	}
	return &Cleaner{Store: st, StateDir: dir}, hasLogs
}

// A batch removes the log folders of the runs it deleted, and only those.
func TestStepRemovesTheLogsOfDeletedRuns(t *testing.T) {
	t.Parallel()
	c, hasLogs := setup(t, map[string]time.Duration{"a-old": 48 * time.Hour, "b-new": time.Minute, "c-last": 47 * time.Hour})
	res, more, err := c.Step(context.Background(), Cutoffs{Runs: now.Add(-24 * time.Hour)}, now)
	if err != nil || more || res.Runs != 1 || res.LogDirs != 1 {
		t.Fatalf("step %+v more %v err %v", res, more, err)
	}
	if hasLogs("a-old") || !hasLogs("b-new") || !hasLogs("c-last") {
		t.Fatalf("logs: a-old %v, b-new %v, c-last %v", hasLogs("a-old"), hasLogs("b-new"), hasLogs("c-last"))
	}
}

// The walk removes the folders of runs the store no longer has and of runs that ended before
// the logs' age; it keeps an open run's, a recent run's, an unknown DAG's folder and files.
func TestWalk(t *testing.T) {
	t.Parallel()
	c, hasLogs := setup(t, map[string]time.Duration{"old": 10 * time.Hour, "recent": time.Hour, "open": 0})
	ctx := context.Background()
	gone := runner.RunLogDir(c.StateDir, "d", "gone")
	other := runner.RunLogDir(c.StateDir, "not-a-dag", "r")
	for _, d := range []string{gone, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stray := filepath.Join(c.StateDir, "logs", "d", "notes.txt")
	if err := os.WriteFile(stray, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := c.Walk(ctx, now.Add(-5*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("walk removed %d (%v), want gone's and old's", n, err)
	}
	_, errGone := os.Stat(gone)
	_, errOther := os.Stat(other)
	_, errStray := os.Stat(stray)
	if errGone == nil || hasLogs("old") || !hasLogs("recent") || !hasLogs("open") || errOther != nil || errStray != nil {
		t.Fatalf("after the walk: gone %v, old %v, recent %v, open %v, other DAG %v, file %v", errGone, hasLogs("old"),
			hasLogs("recent"), hasLogs("open"), errOther, errStray)
	}
	// Without a logs age, only the deleted runs' folders go.
	if n, err := c.Walk(ctx, time.Time{}); err != nil || n != 0 {
		t.Fatalf("second walk removed %d (%v)", n, err)
	}
}

// Each age is its own cutoff; without a logs age, logs go with their runs only.
func TestCutoffsAt(t *testing.T) {
	t.Parallel()
	d := 24 * time.Hour
	c := CutoffsAt(config.Retention{Runs: 10 * d, Logs: 30 * d}, now)
	if !c.Runs.Equal(now.Add(-10*d)) || !c.Logs.Equal(now.Add(-30*d)) || !c.Events.IsZero() {
		t.Fatalf("cutoffs %+v", c)
	}
	if c := CutoffsAt(config.Retention{Runs: 10 * d}, now); !c.Logs.IsZero() {
		t.Fatalf("runs only %+v", c)
	}
	if c := CutoffsAt(config.Retention{Logs: 3 * d}, now); !c.Runs.IsZero() || !c.Logs.Equal(now.Add(-3*d)) {
		t.Fatalf("logs only %+v", c)
	}
	if c := CutoffsAt(config.Retention{}, now); c.Any() {
		t.Fatalf("keep everything %+v", c)
	}
}
