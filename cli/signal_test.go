package cli

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// TestInterruptStopsACommand: a command waiting on something that never comes (a daemon that
// never applies it) returns once main cancels the context on SIGTERM, with exit 128 + 15.
func TestInterruptStopsACommand(t *testing.T) {
	t.Parallel()
	p := newProject(t, poolsYAML, map[string]string{"q.yaml": "tasks:\n  - {id: a, bash: 'true'}\n"})
	if _, errOut, code := p.run("dags", "trigger", "q", "--run-id", "r1"); code != 0 {
		t.Fatal(errOut)
	}
	// A daemon that looks alive (its lease runs, on another host) but never applies anything:
	// the command waits for it.
	st, err := store.Open(context.Background(), filepath.Join(p.state, "poolflow.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	err = st.WithTx(context.Background(), func(tx store.Tx) error {
		return tx.PutOwner(&store.Owner{ID: "ghost", Kind: vocab.OwnerDaemon, Host: "elsewhere", PID: 1,
			StartedAt: now, Heartbeat: now, LeaseUntil: now.Add(time.Hour)})
	})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(200*time.Millisecond, func() { cancel(Interrupted{Signal: syscall.SIGTERM}) })
	var out, errb bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"--config", p.config, "--dags", p.dags, "--state", p.state,
			"tasks", "fail", "q", "r1", "a", "--wait", "1h"}, &out, &errb)
	}()
	select {
	case err := <-done:
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != 128+15 {
			t.Fatalf("err %v, want exit 143", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the command did not stop")
	}
}
