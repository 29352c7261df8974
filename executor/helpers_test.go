package executor

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/executor/runner"
	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/storetest"
)

// bundle is the fixtures of one executor test: a temporary DAGs folder, state folder and
// SQLite database (a real file, not a mock).
type bundle struct {
	dir      string
	dagsDir  string
	stateDir string
	st       store.Store
	cfg      *config.Config
	notices  chan Notice
	clock    Clock // the daemons' clock when a test injects one; nil = the real clock
}

// latest reads a task instance's newest queue entry with its wait reason computed as a reader
// sees it (Explain), at the bundle's clock.
func (b *bundle) latest(run int64, taskID string) (store.Entry, error) {
	e, err := b.st.LatestEntry(context.Background(), run, taskID)
	if err != nil {
		return e, err
	}
	now := time.Now()
	if b.clock != nil {
		now = b.clock.Now()
	}
	return e, explain.Fill(context.Background(), b.st, now, &e)
}

func setup(t testing.TB, cfgYAML string, dags map[string]string) *bundle {
	t.Helper()
	dir := t.TempDir()
	b := &bundle{dir: dir, dagsDir: filepath.Join(dir, "dags"), stateDir: filepath.Join(dir, "state"),
		notices: make(chan Notice, 10000)}
	if err := os.MkdirAll(b.dagsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range dags {
		if err := os.WriteFile(filepath.Join(b.dagsDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(b.stateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	if cfgYAML != "" {
		var err error
		cfg, err = config.Parse("poolflow.yaml", []byte(cfgYAML))
		if err != nil {
			t.Fatal(err)
		}
	}
	b.cfg = cfg
	b.st = storetest.Open(t, filepath.Join(b.stateDir, "poolflow.db"), store.Options{})
	return b
}

// daemon builds a daemon over the bundle; mod adjusts its config.
func (b *bundle) daemon(t testing.TB, mod func(*Config)) *Daemon {
	t.Helper()
	cfg := Config{Store: b.st, Settings: b.cfg, DAGsDir: b.dagsDir, StateDir: b.stateDir, DaemonID: "test-daemon-" + t.Name(),
		KillGrace: 200 * time.Millisecond, ShutdownGrace: 2 * time.Second,
		Notify: func(n Notice) {
			select {
			case b.notices <- n:
			default:
			}
		}}
	if mod != nil {
		mod(&cfg)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// testRun runs one DAG run in test mode (dags test) and returns the ended run.
func (b *bundle) testRun(t testing.TB, dagID string, mod func(*Config)) store.Run {
	t.Helper()
	d := b.daemon(t, func(c *Config) {
		c.Test = &TestRun{DAGID: dagID}
		if mod != nil {
			mod(c)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.Done():
	case <-ctx.Done():
		d.Stop()
		t.Fatal("test run did not end")
	}
	run, ok := d.TestRunResult()
	if !ok {
		t.Fatal("no test run result")
	}
	return run
}

// tis reads a run's task instances by task id.
func (b *bundle) tis(t testing.TB, run int64) map[string]store.TaskInstance {
	t.Helper()
	list, err := b.st.ListTaskInstances(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.TaskInstance{}
	for _, ti := range list {
		out[ti.TaskID] = ti
	}
	return out
}

// waitNotice waits for the first notice matching ok.
func (b *bundle) waitNotice(t testing.TB, ok func(Notice) bool) Notice {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case n := <-b.notices:
			if ok(n) {
				return n
			}
		case <-timeout:
			t.Fatal("notice not seen")
		}
	}
}

func readLog(t testing.TB, b *bundle, dagID, runID, taskID string, try int) string {
	t.Helper()
	data, err := os.ReadFile(runner.LogPath(b.stateDir, dagID, runID, taskID, try))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func storedPool(name string, slots int) store.Pool {
	return store.Pool{Name: name, Slots: slots, TargetSlots: store.NoTarget, Ordering: "backfill", OnResize: "immediate", Source: "store"}
}
