package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// EventLogJSON is Airflow's EventLog object for one audit event (§10.4): owner is the actor,
// event the action, extra the request's parameters and outcome as JSON text (Airflow's extra is
// a string); poolflow adds the pool, and the parameters and outcome as fields of their own.
type EventLogJSON struct {
	EventLogID    int64           `json:"event_log_id"`
	When          time.Time       `json:"when"`
	DAGID         *string         `json:"dag_id"`
	TaskID        *string         `json:"task_id"`
	RunID         *string         `json:"run_id"`
	MapIndex      int             `json:"map_index"`
	TryNumber     *int            `json:"try_number"`
	Event         vocab.Action    `json:"event"`
	ExecutionDate *time.Time      `json:"execution_date"`
	Owner         string          `json:"owner"`
	Extra         *string         `json:"extra"`
	Pool          *string         `json:"pool"`
	Params        json.RawMessage `json:"params"`
	Outcome       string          `json:"outcome"`
}

type eventLogCollection struct {
	EventLogs    []EventLogJSON `json:"event_logs"`
	TotalEntries int            `json:"total_entries"`
}

// EventView is an audit event's JSON.
func EventView(e store.Event) EventLogJSON {
	v := EventLogJSON{EventLogID: e.ID, When: e.At.UTC(), DAGID: strOrNil(e.DAGID), TaskID: strOrNil(e.TaskID),
		RunID: strOrNil(e.RunID), MapIndex: -1, Event: e.Action, Owner: e.Actor, Pool: strOrNil(e.Pool),
		Params: json.RawMessage("null"), Outcome: e.Outcome}
	if e.Try > 0 {
		try := e.Try
		v.TryNumber = &try
	}
	if e.Params != "" && json.Valid([]byte(e.Params)) {
		v.Params = json.RawMessage(e.Params)
	}
	extra, _ := json.Marshal(struct {
		Params  json.RawMessage `json:"params"`
		Outcome string          `json:"outcome"`
	}{v.Params, e.Outcome})
	s := string(extra)
	v.Extra = &s
	return v
}

// eventParams are the query parameters of GET /eventLogs: Airflow's (owner is the actor) and
// actor, the same filter under §10.4's name.
var eventParams = append(slices.Clone(pageParams), "dag_id", "run_id", "task_id", "event", "owner", "actor", "after",
	"before")

// eventFilterOf reads the filters of GET /eventLogs.
func eventFilterOf(r *http.Request) (store.EventFilter, error) {
	var f store.EventFilter
	p, err := pageOf(r)
	if err != nil {
		return f, err
	}
	f.Limit, f.Offset = p.limit, p.offset
	q := r.URL.Query()
	f.DAGID, f.RunID, f.TaskID = q.Get("dag_id"), q.Get("run_id"), q.Get("task_id")
	if v := q.Get("event"); v != "" {
		if !vocab.Action(v).Valid() {
			return f, badRequest("event", "%q is not an event (one of %s)", v, joinWords(vocab.Actions()))
		}
		f.Action = vocab.Action(v)
	}
	owner, actor := q.Get("owner"), q.Get("actor")
	if owner != "" && actor != "" && owner != actor {
		return f, badRequest("actor", "owner and actor are the same filter; give one")
	}
	f.Actor = actor
	if f.Actor == "" {
		f.Actor = owner
	}
	if f.After, err = timeQuery(r, "after"); err != nil {
		return f, err
	}
	if f.Before, err = timeQuery(r, "before"); err != nil {
		return f, err
	}
	return f, nil
}

func joinWords[S ~string](vs []S) string {
	out := ""
	for i, v := range vs {
		if i > 0 {
			out += ", "
		}
		out += string(v)
	}
	return out
}

// listEvents is GET /api/v1/eventLogs: the audit events, newest first, filtered by dag_id,
// run_id, task_id, event (the action), actor (or owner, Airflow's name), after (inclusive) and
// before (exclusive), paged with limit and offset.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	f, err := eventFilterOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	views, total, err := s.Events(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, eventLogCollection{EventLogs: views, TotalEntries: total})
}

// Events lists the audit events f selects, newest first, and how many it selects in all: the
// events page, and the events of a DAG, a run (DAGID and RunID) or a task instance (and TaskID)
// on theirs.
func (s *Server) Events(ctx context.Context, f store.EventFilter) ([]EventLogJSON, int, error) {
	evs, total, err := s.cfg.Store.ListEvents(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	out := make([]EventLogJSON, 0, len(evs))
	for _, e := range evs {
		out = append(out, EventView(e))
	}
	return out, total, nil
}
