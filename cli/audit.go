package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/poolflow/poolflow/owners"
	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The audit log of the commands (§10.4): the actor of a command run by a person is
// cli:<os user>@<host>. A change the CLI writes itself (pause, pools, notes) writes its event in
// the transaction of the change; a command to the daemon (clear, mark, delete, fail, …) has its
// event written by the daemon's pass that applies or refuses it; a command refused here for
// what it names (an unknown run or task, a DAG that is not loaded, no live daemon to apply it)
// leaves an event with the refusal. A usage error leaves none.

// osActor is cli:<os user>@<host>.
func osActor() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = fmt.Sprintf("uid%d", os.Getuid())
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return "cli:" + name + "@" + host
}

// event is an audit event of this command, done (outcome ok) unless told otherwise.
func (e *env) event(action vocab.Action) store.Event {
	return store.Event{At: time.Now().UTC(), Actor: e.actor(), Action: action, Outcome: "ok"}
}

// params is v as an event's parameters ("" for none).
func params(v any) string {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "{}" || string(b) == "null" {
		return ""
	}
	return string(b)
}

// errNobody is a command no live daemon can apply now.
var errNobody = errors.New("no daemon can apply it")

// refusal is a refusal decided here: its words, and the kind it is (errors.Is).
type refusal struct {
	kind error
	msg  string
}

func (r *refusal) Error() string { return r.msg }
func (r *refusal) Unwrap() error { return r.kind }

func refusalf(kind error, format string, args ...any) error {
	return &refusal{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// refused records the event of a command refused here (e, with the refusal as its outcome)
// when the refusal is about what it names (not found, conflict, nobody to apply it), and
// returns err.
func refused(ctx context.Context, st store.Store, e store.Event, err error) error {
	if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict) && !errors.Is(err, errNobody) {
		return err
	}
	e.Outcome = err.Error()
	_ = st.WithTx(context.WithoutCancel(ctx), func(tx store.Tx) error { return tx.InsertEvent(&e) })
	return err
}

// commandActions are the audit actions of the commands.
var commandActions = map[vocab.CommandKind]vocab.Action{
	vocab.CommandForce: vocab.ActionForce, vocab.CommandCancel: vocab.ActionCancel, vocab.CommandFail: vocab.ActionFail,
	vocab.CommandApprove: vocab.ActionApprove, vocab.CommandReject: vocab.ActionReject, vocab.CommandClear: vocab.ActionClear,
	vocab.CommandMark: vocab.ActionMark, vocab.CommandDelete: vocab.ActionDeleteRun,
}

// refusedCommand records the refusal of command c of run dagID/runID decided here.
func refusedCommand(ctx context.Context, st store.Store, dagID, runID string, c store.Command, err error) error {
	e := store.Event{At: time.Now().UTC(), Actor: c.Who, Action: commandActions[c.Kind], Outcome: "ok"}
	e.DAGID, e.RunID, e.TaskID, e.Params = dagID, runID, c.TaskID, c.Params
	if e.Params == "" && c.Note != "" {
		e.Params = params(map[string]string{"note": c.Note})
	}
	return refused(ctx, st, e, err)
}

// repairs are the commands that may name a run that has ended (§10).
func repairs(k vocab.CommandKind) bool {
	return k == vocab.CommandClear || k == vocab.CommandMark || k == vocab.CommandDelete
}

// sendCommand queues c (c.Run, c.Who set) for the daemon that applies it — the run's owner when
// it is alive, else any live daemon (§9) — and waits up to wait for its outcome: applied, or
// still queued for target after wait. A refusal, the daemon's or decided here, is the error.
func sendCommand(ctx context.Context, st store.Store, run store.Run, c *store.Command, wait time.Duration) (applied bool, target string, err error) {
	refuse := func(err error) (bool, string, error) {
		return false, "", refusedCommand(ctx, st, run.DAGID, run.RunID, *c, err)
	}
	if !repairs(c.Kind) && !run.State.Open() {
		return refuse(refusalf(store.ErrConflict, "dag run %s has ended (%s)", run.RunID, run.State))
	}
	rows, err := st.ListOwners(ctx)
	if err != nil {
		return false, "", err
	}
	host, _ := os.Hostname()
	target, ok, why := owners.CommandTarget(run, c.Kind, rows, time.Now(), host)
	if !ok {
		return refuse(refusalf(errNobody, "%s", why))
	}
	if err := st.WithTx(ctx, func(tx store.Tx) error { return tx.InsertCommand(c, time.Now().UTC()) }); err != nil {
		return false, "", err
	}
	if c.Kind == vocab.CommandDelete {
		gone, msg, err := server.AwaitDeletion(ctx, st, run.PK, c.ID, wait)
		switch {
		case err != nil:
			return false, "", err
		case msg != "":
			return false, "", errors.New(msg)
		}
		return gone, target, nil
	}
	done, msg, err := awaitCommand(ctx, st, c.ID, wait)
	switch {
	case err != nil:
		return false, "", err
	case done && msg != "":
		return false, "", errors.New(msg)
	}
	return done, target, nil
}
