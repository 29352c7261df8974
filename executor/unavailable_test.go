package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/poolflow/poolflow/internal/testwait"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/storetest"
	"github.com/poolflow/poolflow/vocab"
)

// TestStoreUnavailable makes pool state unavailable by holding the store's writers' lock from
// outside past the 5-second bound while an attempt holds a claim and a cron fire comes due.
// The fire is dropped with "Job <name> could not enter pool <pool>: <reason>"; the daemon,
// unable to renew for longer than a lease, kills the attempt's process group; once the store is
// back the entry returns to the queue with the same try number and replays.
func TestStoreUnavailable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	b := setup(t, "pools:\n  db: 1\n", map[string]string{"tick.yaml": "schedule: '@every 1m'\npool: db\nbash: echo tick\n"})
	started := b.pipe(t, "started")
	write(t, filepath.Join(b.dagsDir, "hold.yaml"), fmt.Sprintf(`dag_id: hold
tasks:
  - id: h
    pool_requirements: {db: 1}
    bash: 'if [ -f %[1]s ]; then echo replayed; exit 0; fi; touch %[1]s; echo $$ > %[2]s; sleep 60'
`, marker, started.Path))
	logs := &testwait.Log{}
	clock := NewFakeClock(t0)
	d := b.daemon(t, func(c *Config) {
		c.Clock = clock
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	if _, err := d.Trigger(context.Background(), TriggerRequest{DAGID: "hold", RunID: "r"}); err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(line(t, started, "the attempt to start"))
	if err != nil {
		t.Fatal(err)
	}

	release := storetest.HoldWriters(t, b.st)
	clock.Advance(2 * time.Minute) // past the lease and the cron fire
	if !logs.Wait("Job tick could not enter pool db: pool state is unavailable", 30*time.Second) {
		t.Fatal("no warning that the fire was dropped")
	}
	if err := testwait.Exit(pid, 30*time.Second); err != nil {
		t.Fatalf("the attempt was not killed after its lease lapsed: %v", err)
	}
	release()
	if n := b.waitNotice(t, func(n Notice) bool { return n.Kind == NoticeRunEnded && n.RunID == "r" }); n.State != "success" {
		t.Fatalf("the replayed attempt ended the run %s (%s), want success", n.State, n.Reason)
	}
	ti := b.tis(t, b.mustRun(t, "hold", "r").PK)["h"]
	if ti.TryNumber != 1 {
		t.Errorf("try %d after the replay, want 1", ti.TryNumber)
	}
	if log := readLog(t, b, "hold", "r", "h", 1); !strings.Contains(log, "--- replay ---\nreplayed") {
		t.Errorf("log = %q", log)
	}
	for _, r := range b.runs(t, "tick") {
		if r.LogicalDate.Equal(t0.Add(time.Minute)) {
			t.Errorf("the fire at %v was not dropped", r.LogicalDate)
		}
	}
}

// failingCommits is a store whose transactions' commits fail with ErrUnavailable while fail is
// set, as a disk error at the commit does.
type failingCommits struct {
	store.Store
	fail atomic.Bool
}

func (s *failingCommits) Begin(ctx context.Context) (store.Tx, error) {
	tx, err := s.Store.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return failingTx{Tx: tx, s: s}, nil
}

type failingTx struct {
	store.Tx
	s *failingCommits
}

func (t failingTx) Commit() error {
	if t.s.fail.Load() {
		t.Tx.Rollback()
		return store.Unavailable(errors.New("injected commit failure"))
	}
	return t.Tx.Commit()
}

// TestRunCreatedOnlyOnceCommitted: a trigger whose pass cannot commit is answered with the
// store's error and its run does not exist, so nothing says "run created" (it was logged when
// the run was inserted, before the commit that failed); the next trigger's run, committed, is.
// Pass by pass (Harness).
func TestRunCreatedOnlyOnceCommitted(t *testing.T) {
	t.Parallel()
	b := setup(t, "", map[string]string{"quick.yaml": "tasks:\n  - id: a\n    command: ['true']\n"})
	st := &failingCommits{Store: b.st}
	logs := &testwait.Log{}
	h, _ := b.harness(t, func(c *Config) {
		c.Store = st
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	h.settle(t)
	st.fail.Store(true)
	ev, ch := h.Trigger(TriggerRequest{DAGID: "quick", RunID: "lost"})
	if _, err := h.Pass(ev); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("the pass while commits fail: %v", err)
	}
	if err := reply(t, ch).Err; !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("trigger while commits fail: %v", err)
	}
	if _, err := b.st.GetRun(context.Background(), "quick", "lost"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the run of a failed pass exists: %v", err)
	}
	st.fail.Store(false)
	h.trigger(t, TriggerRequest{DAGID: "quick", RunID: "kept"})
	if log := logs.String(); strings.Contains(log, "run_id=lost") || !strings.Contains(log, "msg=\"run created\" dag_id=quick run_id=kept") {
		t.Errorf("log:\n%s", log)
	}
}

// TestTestRunCreatedAgainAfterAFailedPass: a dags test process whose first pass, the one that
// inserts its run, cannot commit creates the run again at the next pass and runs it. Memory
// took the run as the test run in the decision, before the commit that failed: every pass
// after it looked for a run that did not exist and failed with "not found", for good.
func TestTestRunCreatedAgainAfterAFailedPass(t *testing.T) {
	t.Parallel()
	b := setup(t, "", map[string]string{"quick.yaml": "tasks:\n  - id: a\n    command: ['true']\n"})
	st := &failingCommits{Store: b.st}
	st.fail.Store(true)
	h, _ := b.harness(t, func(c *Config) {
		c.Store = st
		c.Test = &TestRun{DAGID: "quick"}
	})
	if _, err := h.Pass(); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("the pass while commits fail: %v", err)
	}
	st.fail.Store(false)
	p := h.mustPass(t)
	if got := started(p); len(got) != 1 || got[0] != "a" {
		t.Fatalf("the pass after the failed one starts %v, want the test run's a", got)
	}
	runs, _, err := b.st.ListRunsWhere(context.Background(), store.RunFilter{DAGID: "quick"})
	if err != nil || len(runs) != 1 || runs[0].RunType != vocab.RunTest {
		t.Fatalf("runs %+v %v, want the one test run", runs, err)
	}
}
