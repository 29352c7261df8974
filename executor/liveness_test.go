package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/owners"
	"github.com/poolflow/poolflow/store"
)

// TestOwnerIDHeldOnce: a second daemon with the id of a running one refuses to start, naming
// it; once the first stops, the id is free.
func TestOwnerIDHeldOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, "", nil)
	d1 := b.daemon(t, nil)
	if err := d1.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	d2 := b.daemon(t, nil)
	err := d2.Start(context.Background())
	var live *owners.LiveError
	if !errors.As(err, &live) || live.Owner.PID != os.Getpid() {
		t.Fatalf("second start: %v, want an OwnerLiveError naming pid %d", err, os.Getpid())
	}
	if err := d1.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := d2.Start(context.Background()); err != nil {
		t.Fatalf("start after the first stopped: %v", err)
	}
	d2.Stop()
}

// TestStopAbandonsStubbornGoTask: Stop returns within the shutdown grace plus a short bound
// when a Go task ignores its cancellation; the task's entry waits to replay.
func TestStopAbandonsStubbornGoTask(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	d := dag.New("stubborn")
	d.Go("ignore", func(ctx context.Context, ti *dag.TaskContext) error {
		close(started)
		select {} // ignores ctx; the goroutine is abandoned with the test process
	})
	b := setup(t, "", nil)
	dm := b.daemon(t, func(c *Config) { c.GoDAGs = []*dag.DAG{d}; c.ShutdownGrace = 200 * time.Millisecond })
	if err := dm.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := dm.Trigger(context.Background(), TriggerRequest{DAGID: "stubborn", RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	began := time.Now()
	if err := dm.Stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("Stop took %v", took)
	}
	e, err := b.st.LatestEntry(context.Background(), res.Run.PK, "ignore")
	if err != nil || e.State != "waiting" || !e.Replay {
		t.Fatalf("entry after abandoning the task: %+v %v", e, err)
	}
}

// TestMaxRunningIsPerDaemon: max_running limits each daemon (§9): two daemons with
// max_running 1 on one store run one task each at the same time.
func TestMaxRunningIsPerDaemon(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "go")
	b := setup(t, "max_running: 1\n", map[string]string{"w.yaml": fmt.Sprintf(
		"dag_id: w\ntasks:\n  - {id: a, bash: 'while [ ! -f %s ]; do sleep 0.02; done'}\n", gate)})
	var ds []*Daemon
	for _, id := range []string{"d1", "d2"} {
		d := b.daemon(t, func(c *Config) { c.DaemonID = id })
		if err := d.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Stop() })
		ds = append(ds, d)
	}
	for i, d := range ds {
		if _, err := d.Trigger(context.Background(), TriggerRequest{DAGID: "w", RunID: fmt.Sprint("r", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		b.waitNotice(t, func(n Notice) bool { return n.Kind == NoticeAdmitted })
	}
	touch(t, gate)
	for i := range ds {
		eventually(t, "both runs to succeed", func() bool { return b.mustRun(t, "w", fmt.Sprint("r", i)).State == "success" })
	}
}

// TestMarkFailedWaitsForTheProcess: tasks fail on a running attempt kills it, and the task fails
// with no retry when its end comes back; its claim is held until then.
func TestMarkFailedWaitsForTheProcess(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	b := setup(t, "pools:\n  db: 1\n", map[string]string{"f.yaml": fmt.Sprintf(
		"dag_id: f\ntasks:\n  - {id: a, retries: 3, pool_requirements: {db: 1}, bash: 'echo $$ > %s; trap \"\" TERM; sleep 60'}\n", pidFile)})
	d := b.daemon(t, nil)
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop() })
	res, err := d.Trigger(context.Background(), TriggerRequest{DAGID: "f", RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the attempt to start", func() bool { _, err := os.Stat(pidFile); return err == nil })
	if err := d.Command(context.Background(), store.Command{Kind: "fail", Run: res.Run.PK, TaskID: "a"}); err != nil {
		t.Fatal(err)
	}
	b.waitNotice(t, func(n Notice) bool { return n.Kind == NoticeAttemptEnded && n.TaskID == "a" })
	ti := b.tis(t, res.Run.PK)["a"]
	if ti.State != "failed" || ti.Reason != "marked failed by operator" || ti.TryNumber != 1 {
		t.Fatalf("a after tasks fail: %s %q try %d", ti.State, ti.Reason, ti.TryNumber)
	}
	if claims, _ := b.st.ListClaims(context.Background()); len(claims) != 0 {
		t.Fatalf("claims after the end: %+v", claims)
	}
	eventually(t, "the run to fail", func() bool { return b.mustRun(t, "f", "r").State == "failed" })
}
