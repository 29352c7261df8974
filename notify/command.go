package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// command runs argv (no shell) with the event as JSON on its stdin, and the event's kind, DAG,
// run and task in POOLFLOW_EVENT, POOLFLOW_DAG_ID, POOLFLOW_RUN_ID and POOLFLOW_TASK_ID. Exit 0
// is a delivery. It runs in its own process group, killed whole when the notifier's timeout
// passes.
type command struct{ argv []string }

// keptOutput is how much of a failed command's output last_error keeps.
const keptOutput = 200

func (c *command) Send(ctx context.Context, ev Event) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, c.argv[0], c.argv[1:]...)
	cmd.Stdin = bytes.NewReader(body)
	out := &limited{&bytes.Buffer{}, keptOutput}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(cmd.Environ(), "POOLFLOW_EVENT="+string(ev.Event), "POOLFLOW_DAG_ID="+ev.DAGID,
		"POOLFLOW_RUN_ID="+ev.DAGRunID, "POOLFLOW_TASK_ID="+ev.TaskID, "POOLFLOW_IDEMPOTENCY_KEY="+ev.IdempotencyKey)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second // a grandchild holding the pipes does not hold the try
	err = cmd.Run()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("killed: %w", ctx.Err())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		err = errors.New(ee.ProcessState.String())
	}
	if msg := strings.TrimSpace(out.b.String()); msg != "" {
		return fmt.Errorf("%w: %s", err, msg)
	}
	return err
}
