package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/owners"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// commandWho is recorded as the author of decisions made over the API.
const commandWho = "api"

// errCommandPending says a command was queued for another process that has not applied it yet.
var errCommandPending = errors.New("command queued")

// sendCommand applies an operator command to a task instance. A run this process's daemon owns
// goes through its loop and the answer is immediate. A run another process owns (or nobody yet)
// gets the command through the store, as the CLI sends it: its owner applies it when alive,
// any live daemon when the owner is gone (§9); the answer waits up to CommandWait and is
// errCommandPending after that. When no live process can apply it, the answer is a 409 saying
// so. Commands tolerate replay (§4.8): a command applied twice is refused the second time with
// a conflict, never applied twice.
func (s *Server) sendCommand(ctx context.Context, run store.Run, kind vocab.CommandKind, taskID, note string) error {
	c := store.Command{Kind: kind, Run: run.PK, TaskID: taskID, Who: commandWho, Note: note}
	if s.cfg.Daemon != nil && run.Owner == s.cfg.Daemon.ID() {
		d, err := s.daemon()
		if err != nil {
			return err
		}
		return d.Command(ctx, c)
	}
	if run.State != vocab.RunQueued && run.State != vocab.RunRunning {
		return conflict("dag run %s has ended (%s)", run.RunID, run.State)
	}
	rows, err := s.cfg.Store.ListOwners(ctx)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	// Liveness is judged by the wall clock, like the owners' leases (s.now stamps records).
	who, ok, why := owners.CommandTarget(run, rows, time.Now(), host)
	if !ok {
		return conflict("%s of %s: %s", kind, taskID, why)
	}
	if err := s.writer.WithTx(ctx, func(tx store.Tx) error { return tx.InsertCommand(&c, s.now()) }); err != nil {
		return err
	}
	s.wake()
	deadline := time.NewTimer(s.cfg.CommandWait)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		done, refused, err := s.cfg.Store.CommandOutcome(ctx, c.ID)
		switch {
		case err != nil:
			return err
		case done && refused != "":
			return conflict("%s", trimSentinel(errors.New(refused)))
		case done:
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("%w: %s of %s is queued for %s, which has not applied it yet", errCommandPending, kind,
				taskID, who)
		case <-tick.C:
		}
	}
}

// pendingJSON answers 202 for a command another process will apply.
type pendingJSON struct {
	Queued bool   `json:"queued"`
	Detail string `json:"detail"`
}

type gateBody struct {
	Note *string `json:"note"`
}

// decideGate is POST .../approve and .../reject with an optional {"note"} (§5.2). It answers
// with the task instance after the decision.
func (s *Server) decideGate(kind vocab.CommandKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body gateBody
		if err := decodeBody(w, r, &body, true); err != nil {
			s.fail(w, r, err)
			return
		}
		t, err := s.taskInstanceOf(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if t.task != nil && t.task.Kind != dag.KindApproval {
			s.fail(w, r, conflict("task %s is not an approval gate", t.ti.TaskID))
			return
		}
		if t.ti.State != vocab.TaskAwaitingApproval {
			s.fail(w, r, conflict("task %s is not awaiting approval (state %s)", t.ti.TaskID, t.ti.State))
			return
		}
		note := ""
		if body.Note != nil {
			note = *body.Note
		}
		err = s.sendCommand(r.Context(), t.run, kind, t.ti.TaskID, note)
		if errors.Is(err, errCommandPending) {
			writeJSON(w, http.StatusAccepted, pendingJSON{Queued: true, Detail: err.Error()})
			return
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		t, err = s.taskInstanceOf(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, t.view())
	}
}
