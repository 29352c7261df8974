package executor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/storetest"
)

// lockedBuffer is a log sink shared by the loop and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStoreUnavailable makes pool state unavailable by holding the store's writers' lock from
// outside past the 5-second bound while an attempt holds a claim and a cron fire comes due.
// The fire is dropped with "Job <name> could not enter pool <pool>: <reason>"; the daemon,
// unable to renew for longer than a lease, kills the attempt's process group; once the store is
// back the entry returns to the queue with the same try number and replays.
func TestStoreUnavailable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker, pidFile := filepath.Join(dir, "ran"), filepath.Join(dir, "pid")
	b := setup(t, "pools:\n  db: 1\n", map[string]string{
		"hold.yaml": fmt.Sprintf(`dag_id: hold
tasks:
  - id: h
    pool_requirements: {db: 1}
    bash: 'if [ -f %[1]s ]; then echo replayed; exit 0; fi; touch %[1]s; echo $$ > %[2]s.tmp; mv %[2]s.tmp %[2]s; sleep 60'
`, marker, pidFile),
		"tick.yaml": "schedule: '@every 1m'\npool: db\nbash: echo tick\n",
	})
	logs := &lockedBuffer{}
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
	eventually(t, "the attempt to start", func() bool { _, err := os.Stat(pidFile); return err == nil })
	data, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))

	release := storetest.HoldWriters(t, b.st)
	clock.Advance(2 * time.Minute) // past the lease and the cron fire
	eventually(t, "the dropped fire's warning", func() bool {
		return strings.Contains(logs.String(), "Job tick could not enter pool db: pool state is unavailable")
	})
	eventually(t, "the attempt to be killed after its lease lapsed", func() bool {
		return syscall.Kill(pid, 0) != nil
	})
	release()
	eventually(t, "the replayed attempt to finish the run", func() bool {
		return b.mustRun(t, "hold", "r").State == "success"
	})
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
func TestRunCreatedOnlyOnceCommitted(t *testing.T) {
	t.Parallel()
	b := setup(t, "", map[string]string{"quick.yaml": "tasks:\n  - id: a\n    command: ['true']\n"})
	st := &failingCommits{Store: b.st}
	logs := &lockedBuffer{}
	d := b.daemon(t, func(c *Config) {
		c.Store = st
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	b.waitNotice(t, func(n Notice) bool { return n.Kind == NoticePass })
	st.fail.Store(true)
	_, err := d.Trigger(context.Background(), TriggerRequest{DAGID: "quick", RunID: "lost"})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("trigger while commits fail: %v", err)
	}
	if _, err := b.st.GetRun(context.Background(), "quick", "lost"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the run of a failed pass exists: %v", err)
	}
	st.fail.Store(false)
	eventually(t, "the store to be usable again", func() bool {
		_, err := d.Trigger(context.Background(), TriggerRequest{DAGID: "quick", RunID: "kept"})
		return err == nil
	})
	if log := logs.String(); strings.Contains(log, "run_id=lost") || !strings.Contains(log, "msg=\"run created\" dag_id=quick run_id=kept") {
		t.Errorf("log:\n%s", log)
	}
}
