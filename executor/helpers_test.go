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
	"github.com/poolflow/poolflow/internal/testwait"
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
	// runFor bounds testRun (60 s when zero): a benchmark of 10,000 tasks may take longer.
	runFor time.Duration
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
	limit := b.runFor
	if limit == 0 {
		limit = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
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
	n, seen := b.noticeWithin(30*time.Second, ok)
	if !seen {
		t.Fatal("notice not seen")
	}
	return n
}

// untilPass checks cond after each pass a daemon of the bundle commits, until it holds: for
// what a daemon changes off its loop (the registry's watcher) and then passes for.
func (b *bundle) untilPass(t testing.TB, what string, cond func() bool) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for !cond() {
		select {
		case n := <-b.notices:
			_ = n // a pass, or another notice of one: look again
		case <-timeout:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// noticeWithin waits up to limit for the first notice matching ok, and reports whether it came.
func (b *bundle) noticeWithin(limit time.Duration, ok func(Notice) bool) (Notice, bool) {
	timeout := time.After(limit)
	for {
		select {
		case n := <-b.notices:
			if ok(n) {
				return n, true
			}
		case <-timeout:
			return Notice{}, false
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

// pipe makes a named pipe in the bundle's folder for a task's script to write to (`echo
// started > PIPE`), so the test waits for the process itself instead of polling for a file.
func (b *bundle) pipe(t testing.TB, name string) *testwait.Pipe {
	t.Helper()
	p, err := testwait.NewPipe(filepath.Join(b.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// line waits for the next line a task writes to p.
func line(t testing.TB, p *testwait.Pipe, what string) string {
	t.Helper()
	s, err := p.Line(30 * time.Second)
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
	return s
}
