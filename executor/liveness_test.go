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
	"github.com/poolflow/poolflow/executor/attempt"
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
// max_running 1 on one store run one task each at the same time. Pass by pass (Harness).
func TestMaxRunningIsPerDaemon(t *testing.T) {
	t.Parallel()
	b := setup(t, "max_running: 1\n", map[string]string{"w.yaml": "dag_id: w\ntasks:\n  - {id: a, bash: 'true'}\n"})
	var hs []*Harness
	for _, id := range []string{"d1", "d2"} {
		h, _ := b.harness(t, func(c *Config) { c.DaemonID = id })
		hs = append(hs, h)
	}
	var running []*attempt.Spec
	for i, h := range hs {
		_, started := h.trigger(t, TriggerRequest{DAGID: "w", RunID: fmt.Sprint("r", i)})
		running = append(running, specOf(t, started, "w", "a"))
	}
	if held := heldBy(t, b.st); held["d1"] != 1 || held["d2"] != 1 {
		t.Fatalf("admissions per daemon %v, want one each at once", held)
	}
	for i, h := range hs {
		h.drain(t, running[i])
	}
	for i := range hs {
		if r := b.mustRun(t, "w", fmt.Sprint("r", i)); r.State != "success" {
			t.Errorf("run r%d %s, want success", i, r.State)
		}
	}
}

// TestMarkFailedWaitsForTheProcess: tasks fail on a running attempt kills it, and the task fails
// with no retry when its end comes back; its claim is held until then.
func TestMarkFailedWaitsForTheProcess(t *testing.T) {
	t.Parallel()
	b := setup(t, "pools:\n  db: 1\n", nil)
	started := b.pipe(t, "started")
	if err := os.WriteFile(filepath.Join(b.dagsDir, "f.yaml"), []byte(fmt.Sprintf(
		"dag_id: f\ntasks:\n  - {id: a, retries: 3, pool_requirements: {db: 1}, bash: 'echo $$ > %s; trap \"\" TERM; sleep 60'}\n",
		started.Path)), 0o644); err != nil {
		t.Fatal(err)
	}
	d := b.daemon(t, nil)
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop() })
	res, err := d.Trigger(context.Background(), TriggerRequest{DAGID: "f", RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	line(t, started, "the attempt to start")
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
	if n := b.waitNotice(t, func(n Notice) bool { return n.Kind == NoticeRunEnded && n.RunID == "r" }); n.State != "failed" {
		t.Fatalf("run %s, want failed", n.State)
	}
	if r := b.mustRun(t, "f", "r"); r.State != "failed" {
		t.Fatalf("run %s, want failed", r.State)
	}
}
