package executor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/dag"
)

// TestGoTasks: Go functions run as attempts; an error or a panic fails the attempt, the panic's
// stack lands in the attempt log, and params reach the function.
func TestGoTasks(t *testing.T) {
	t.Parallel()
	d := dag.New("go_dag", dag.Params(map[string]any{"n": 3}))
	d.Go("ok", func(ctx context.Context, ti *dag.TaskContext) error {
		ti.Log("n=%v try=%d", ti.Params["n"], ti.TryNumber)
		return nil
	})
	d.Go("errs", func(context.Context, *dag.TaskContext) error { return errors.New("no rows") })
	d.Go("panics", func(context.Context, *dag.TaskContext) error { panic("boom") })
	b := setup(t, "", nil)
	run := b.testRun(t, "go_dag", func(c *Config) { c.GoDAGs = []*dag.DAG{d} })
	tis := b.tis(t, run.PK)
	if tis["ok"].State != "success" || tis["errs"].Reason != "no rows" || tis["panics"].Reason != "panic: boom" {
		t.Fatalf("%+v", tis)
	}
	if log := readLog(t, b, "go_dag", run.RunID, "ok", 1); !strings.Contains(log, "n=3 try=1") {
		t.Errorf("ok log = %q", log)
	}
	if log := readLog(t, b, "go_dag", run.RunID, "panics", 1); !strings.Contains(log, "panic: boom") || !strings.Contains(log, "goroutine") {
		t.Errorf("panic log lacks the stack: %q", log)
	}
}

// TestShutdownRequeues: stopping the daemon terminates running attempts' groups and puts their
// entries back in the queue with the same try number; nothing stays held.
func TestShutdownRequeues(t *testing.T) {
	t.Parallel()
	b := setup(t, "pools:\n  db: 1\n", nil)
	started := b.pipe(t, "started")
	if err := os.WriteFile(filepath.Join(b.dagsDir, "s.yaml"), []byte("dag_id: s\ntasks:\n  - {id: a, pool_requirements: {db: 1}, bash: 'echo started > "+
		started.Path+"; sleep 60'}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := b.daemon(t, nil)
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := d.Trigger(context.Background(), TriggerRequest{DAGID: "s", RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	line(t, started, "the attempt to start")
	stopped := time.Now()
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	if time.Since(stopped) > 10*time.Second {
		t.Errorf("shutdown took %v: SIGTERM should end sleep at once", time.Since(stopped))
	}
	ti := b.tis(t, res.Run.PK)["a"]
	e, err := b.st.LatestEntry(context.Background(), res.Run.PK, "a")
	if err != nil {
		t.Fatal(err)
	}
	claims, _ := b.st.ListClaims(context.Background())
	if ti.State != "scheduled" || e.State != "waiting" || e.TryNumber != 1 || !e.Replay || len(claims) != 0 {
		t.Fatalf("after shutdown: ti %s, entry %s try %d replay %v, claims %v", ti.State, e.State, e.TryNumber, e.Replay, claims)
	}
	// A new life runs it again, with the same try number.
	d2 := b.daemon(t, nil)
	if err := d2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer d2.Stop()
	line(t, started, "the attempt to run again")
	if ti := b.tis(t, res.Run.PK)["a"]; ti.State != "running" || ti.TryNumber != 1 {
		t.Fatalf("%s try %d after the restart, want running try 1", ti.State, ti.TryNumber)
	}
}
