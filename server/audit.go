package server

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The audit log of the API's requests (§10.4). A change the API writes itself (pause, pools,
// notes) writes its event in the transaction of the change; a command's event is the daemon's,
// written in the pass that applies or refuses it. A request refused here, after its body was
// read and found well formed — an unknown run or task, a DAG that is not loaded, no daemon alive
// to apply it, a conflict with the state — leaves an event with the refusal in a transaction of
// its own (it changes nothing). A malformed request (400), one without the token (401) or from
// another origin (403), and one the store could not take (503) leave none.

// commandActions are the audit actions of the commands.
var commandActions = map[vocab.CommandKind]vocab.Action{
	vocab.CommandForce: vocab.ActionForce, vocab.CommandCancel: vocab.ActionCancel, vocab.CommandFail: vocab.ActionFail,
	vocab.CommandApprove: vocab.ActionApprove, vocab.CommandReject: vocab.ActionReject, vocab.CommandClear: vocab.ActionClear,
	vocab.CommandMark: vocab.ActionMark, vocab.CommandDelete: vocab.ActionDeleteRun,
}

// event is the audit event of request r, done (outcome ok) unless told otherwise.
func (s *Server) event(r *http.Request, action vocab.Action) store.Event {
	return store.Event{At: s.now(), Actor: actorOf(r), Action: action, Outcome: "ok"}
}

// jsonParams is v as an event's parameters.
func jsonParams(v any) string {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "{}" || string(b) == "null" {
		return ""
	}
	return string(b)
}

// givenParams is a request body as an event's parameters: the fields it gave (nulls left out).
func givenParams(body any) string {
	b, err := json.Marshal(body)
	if err != nil {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	for k, v := range m {
		if v == nil {
			delete(m, k)
		}
	}
	return jsonParams(m)
}

// refused records the event of a request refused here (e with the refusal as its outcome) and
// returns err. Only refusals about the state are recorded: what classify answers 404 or 409.
func (s *Server) refused(ctx context.Context, e store.Event, err error) error {
	if status, _ := s.classify(err); status != http.StatusNotFound && status != http.StatusConflict {
		return err
	}
	_, e.Outcome = s.classify(err)
	if e.At.IsZero() {
		e.At = s.now()
	}
	if werr := s.writer.WithTx(context.WithoutCancel(ctx), func(tx store.Tx) error { return tx.InsertEvent(&e) }); werr != nil {
		s.log.Warn("api: the audit event of a refused request could not be written", "action", e.Action, "err", werr)
	}
	return err
}

// refusedCommand records the refusal of command c of run, decided here before any daemon saw
// it, and returns err.
func (s *Server) refusedCommand(ctx context.Context, run store.Run, c store.Command, err error) error {
	e := store.Event{Actor: c.Who, Action: commandActions[c.Kind], DAGID: run.DAGID, RunID: run.RunID, TaskID: c.TaskID,
		Params: c.Params}
	if e.Params == "" && c.Note != "" {
		e.Params = jsonParams(map[string]string{"note": c.Note})
	}
	return s.refused(ctx, e, err)
}

// Record writes an audit event of its own transaction: the UI's sign-ins and sign-outs.
func (s *Server) Record(ctx context.Context, e store.Event) error {
	return s.writer.WithTx(context.WithoutCancel(ctx), func(tx store.Tx) error { return tx.InsertEvent(&e) })
}
