package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/owners"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// errCommandPending says a command was queued for another process that has not applied it yet.
var errCommandPending = errors.New("command queued")

// repairs are the commands that may name a run that has ended (§10: a clear or a mark reopens
// it, a deletion removes it).
func repairs(k vocab.CommandKind) bool {
	return k == vocab.CommandClear || k == vocab.CommandMark || k == vocab.CommandDelete
}

// sendCommand applies an operator command to run (c.Run is set here; c.Who is the actor). A
// run this process's daemon owns goes through its loop and the answer is immediate. A run
// another process owns (or nobody yet) gets the command through the store, as the CLI sends
// it: its owner applies it when alive, any live daemon when the owner is gone (§9); the answer
// waits up to CommandWait and is errCommandPending after that. When no live process can apply
// it, the answer is a 409 saying so. Commands tolerate replay (§4.8): a command applied twice
// is refused the second time with a conflict, never applied twice. The daemon writes the
// audit event of the command, applied or refused; the refusals decided here write theirs.
func (s *Server) sendCommand(ctx context.Context, run store.Run, c store.Command) error {
	c.Run = run.PK
	if c.Who == "" {
		c.Who = Actor(ctx)
	}
	if s.cfg.Daemon != nil && run.Owner == s.cfg.Daemon.ID() {
		d, err := s.daemon()
		if err != nil {
			return err
		}
		return d.Command(ctx, c)
	}
	if !repairs(c.Kind) && run.State != vocab.RunQueued && run.State != vocab.RunRunning {
		return s.refusedCommand(ctx, run, c, conflict("dag run %s has ended (%s)", run.RunID, run.State))
	}
	rows, err := s.cfg.Store.ListOwners(ctx)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	// Liveness is judged by the wall clock, like the owners' leases (s.now stamps records).
	who, ok, why := owners.CommandTarget(run, c.Kind, rows, time.Now(), host)
	if !ok {
		return s.refusedCommand(ctx, run, c, conflict("%s: %s", commandWords(c), why))
	}
	if err := s.writer.WithTx(ctx, func(tx store.Tx) error { return tx.InsertCommand(&c, s.now()) }); err != nil {
		return err
	}
	s.wake()
	if c.Kind == vocab.CommandDelete {
		gone, refused, err := AwaitDeletion(ctx, s.cfg.Store, run.PK, c.ID, s.cfg.CommandWait)
		switch {
		case err != nil:
			return err
		case refused != "":
			return refusal(refused)
		case !gone:
			return fmt.Errorf("%w: %s is queued for %s, which has not applied it yet", errCommandPending, commandWords(c), who)
		}
		return nil
	}
	deadline := time.NewTimer(s.cfg.CommandWait)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		done, refused, err := s.cfg.Store.CommandOutcome(ctx, c.ID)
		switch {
		case err != nil:
			// The command is stored: whatever the store says now, it will be applied; keep
			// asking until the deadline, and answer that it is queued.
		case done && refused != "":
			return refusal(refused)
		case done:
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("%w: %s is queued for %s, which has not applied it yet", errCommandPending, commandWords(c), who)
		case <-tick.C:
		}
	}
}

// refusal maps a daemon's stored refusal back to its kind: the refusals of §10 keep their
// sentinel's words (not found, invalid), every other one is a conflict.
func refusal(msg string) error {
	for _, sentinel := range []error{store.ErrNotFound, store.ErrInvalid} {
		if rest, ok := strings.CutPrefix(msg, sentinel.Error()+": "); ok {
			return fmt.Errorf("%w: %s", sentinel, rest)
		}
	}
	return conflict("%s", trimSentinel(errors.New(msg)))
}

// commandWords names a command in a message: "clear of task a", "delete".
func commandWords(c store.Command) string {
	if c.TaskID != "" {
		return fmt.Sprintf("%s of %s", c.Kind, c.TaskID)
	}
	return string(c.Kind)
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
		c := store.Command{Kind: kind, TaskID: pathVar(r, "task_id"), Who: actorOf(r)}
		if body.Note != nil {
			c.Note = *body.Note
		}
		t, err := s.taskInstanceOf(r)
		if err != nil {
			s.fail(w, r, s.refusedCommand(r.Context(), store.Run{DAGID: pathVar(r, "dag_id"), RunID: pathVar(r, "dag_run_id")}, c, err))
			return
		}
		if t.task != nil && t.task.Kind != dag.KindApproval {
			s.fail(w, r, s.refusedCommand(r.Context(), t.run, c, conflict("task %s is not an approval gate", t.ti.TaskID)))
			return
		}
		if t.ti.State != vocab.TaskAwaitingApproval {
			s.fail(w, r, s.refusedCommand(r.Context(), t.run, c,
				conflict("task %s is not awaiting approval (state %s)", t.ti.TaskID, t.ti.State)))
			return
		}
		err = s.sendCommand(r.Context(), t.run, c)
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
