package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/gorilla/mux"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/notify"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// NotificationJSON is one delivery of the outbox (§13): one event for one notifier, with its
// state, tries and last error. The event is the JSON the notifier sends (no secret is in it).
type NotificationJSON struct {
	ID             int64               `json:"notification_id"`
	IdempotencyKey string              `json:"idempotency_key"`
	Event          vocab.NotifyEvent   `json:"event"`
	Notifier       string              `json:"notifier"`
	DAGID          *string             `json:"dag_id"`
	DAGRunID       *string             `json:"dag_run_id"`
	TaskID         *string             `json:"task_id"`
	TryNumber      *int                `json:"try_number"`
	State          vocab.DeliveryState `json:"state"`
	Tries          int                 `json:"tries"`
	CreatedAt      time.Time           `json:"created_at"`
	NextTryAt      *time.Time          `json:"next_try_at"`
	SentAt         *time.Time          `json:"sent_at"`
	Sender         *string             `json:"sender"`
	LastError      *string             `json:"last_error"`
	Payload        json.RawMessage     `json:"payload"`
}

type notificationCollection struct {
	Notifications []NotificationJSON `json:"notifications"`
	TotalEntries  int                `json:"total_entries"`
}

// NotificationView is a delivery's JSON.
func NotificationView(n store.Notification) NotificationJSON {
	v := NotificationJSON{ID: n.ID, IdempotencyKey: n.Key, Event: n.Event, Notifier: n.Notifier, DAGID: strOrNil(n.DAGID),
		DAGRunID: strOrNil(n.RunID), TaskID: strOrNil(n.TaskID), State: n.State, Tries: n.Tries, CreatedAt: n.CreatedAt.UTC(),
		SentAt: ts(n.SentAt), Sender: strOrNil(n.Sender), LastError: strOrNil(n.LastError), Payload: json.RawMessage("null")}
	if n.Try > 0 {
		try := n.Try
		v.TryNumber = &try
	}
	if n.State == vocab.DeliveryPending {
		v.NextTryAt = ts(n.NextAt)
	}
	if ev, err := notify.Decode(n, ""); err == nil {
		ev.URL = "" // the sender puts its base URL before the path; the reader knows where it is
		if b, err := json.Marshal(ev); err == nil {
			v.Payload = b
		}
	}
	return v
}

// notificationParams are the query parameters of GET /notifications.
var notificationParams = append(slices.Clone(pageParams), "dag_id", "run_id", "task_id", "notifier", "event", "state",
	"after", "before")

func notificationFilterOf(r *http.Request) (store.NotificationFilter, error) {
	var f store.NotificationFilter
	p, err := pageOf(r)
	if err != nil {
		return f, err
	}
	f.Limit, f.Offset = p.limit, p.offset
	q := r.URL.Query()
	f.DAGID, f.RunID, f.TaskID, f.Notifier = q.Get("dag_id"), q.Get("run_id"), q.Get("task_id"), q.Get("notifier")
	if v := q.Get("event"); v != "" {
		if !vocab.NotifyEvent(v).Valid() {
			return f, badRequest("event", "%q is not an event (one of %s)", v, joinWords(vocab.NotifyEvents()))
		}
		f.Event = vocab.NotifyEvent(v)
	}
	if v := q.Get("state"); v != "" {
		if !vocab.DeliveryState(v).Valid() {
			return f, badRequest("state", "%q is not a delivery state (one of %s)", v, joinWords(vocab.DeliveryStates()))
		}
		f.State = vocab.DeliveryState(v)
	}
	if f.After, err = timeQuery(r, "after"); err != nil {
		return f, err
	}
	if f.Before, err = timeQuery(r, "before"); err != nil {
		return f, err
	}
	return f, nil
}

// listNotifications is GET /api/v1/notifications: the outbox's deliveries, newest first,
// filtered by dag_id, run_id, task_id, notifier, event, state, after (inclusive) and before
// (exclusive), paged with limit and offset.
func (s *Server) listNotifications(w http.ResponseWriter, r *http.Request) {
	f, err := notificationFilterOf(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	views, total, err := s.Notifications(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, notificationCollection{Notifications: views, TotalEntries: total})
}

// Notifications lists the deliveries f selects, newest first, and how many it selects in all.
func (s *Server) Notifications(ctx context.Context, f store.NotificationFilter) ([]NotificationJSON, int, error) {
	ns, total, err := s.cfg.Store.ListNotifications(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	out := make([]NotificationJSON, 0, len(ns))
	for _, n := range ns {
		out = append(out, NotificationView(n))
	}
	return out, total, nil
}

// NotifierJSON describes a configured notifier without its secrets: where it sends (a
// webhook's host, a Slack notifier's nothing: its URL is the credential), and where each secret
// comes from.
type NotifierJSON struct {
	Name    string            `json:"name"`
	Type    string            `json:"type"`
	Target  string            `json:"target"`
	Signed  bool              `json:"signed"`
	Secrets map[string]string `json:"secrets"` // secret → "env NAME" or "file PATH"
	Timeout string            `json:"timeout"`
}

type notifierCollection struct {
	Notifiers    []NotifierJSON `json:"notifiers"`
	TotalEntries int            `json:"total_entries"`
}

// NotifierView is a notifier's JSON.
func NotifierView(n config.Notifier) NotifierJSON {
	v := NotifierJSON{Name: n.Name, Type: n.Type, Signed: n.Secret.Reveal() != "", Secrets: map[string]string{},
		Timeout: n.Timeout.String()}
	for k, src := range n.SourceOf {
		v.Secrets[k] = src
	}
	switch n.Type {
	case config.NotifierWebhook:
		if u, err := url.Parse(n.URL.Reveal()); err == nil {
			v.Target = u.Scheme + "://" + u.Host // the path and query may carry a token
		}
	case config.NotifierSlack:
		v.Target = "Slack incoming webhook"
	case config.NotifierEmail:
		v.Target = "smtp://" + n.SMTP.Host + " to " + joinWords(n.To)
	case config.NotifierCommand:
		if len(n.Command) > 0 {
			v.Target = n.Command[0]
		}
	}
	return v
}

// Notifiers lists the notifiers of the configuration in force, by name.
func (s *Server) Notifiers() []NotifierJSON {
	cfg := s.Settings()
	out := []NotifierJSON{}
	for _, name := range cfg.NotifierNames() {
		n, _ := cfg.Notifier(name)
		out = append(out, NotifierView(*n))
	}
	return out
}

// listNotifiers is GET /api/v1/notifiers.
func (s *Server) listNotifiers(w http.ResponseWriter, r *http.Request) {
	list := s.Notifiers()
	writeJSON(w, http.StatusOK, notifierCollection{Notifiers: list, TotalEntries: len(list)})
}

// TestResultJSON answers POST /notifiers/{name}/test.
type TestResultJSON struct {
	Notifier  string  `json:"notifier"`
	Delivered bool    `json:"delivered"`
	Error     *string `json:"error"`
	// NotificationID is the outbox row that records the test (the notifications page shows it).
	NotificationID int64 `json:"notification_id"`
}

// SendTest sends a sample event to notifier name at once, from this process (which holds the
// notifier's secrets), and records the outcome as a delivery of event test.
func (s *Server) SendTest(ctx context.Context, name, base string) (TestResultJSON, error) {
	cfg := s.Settings()
	if _, ok := cfg.Notifier(name); !ok {
		return TestResultJSON{}, notFound("no notifier %s in poolflow.yaml (notifiers: %s)", name, joinWords(cfg.NotifierNames()))
	}
	if cfg.BaseURL != "" {
		base = cfg.BaseURL
	}
	res := TestResultJSON{Notifier: name, Delivered: true}
	err := notify.SendTest(ctx, cfg, name, base, notify.Options{})
	now := s.now()
	row := notify.Row(notify.Event{Event: vocab.EventTest, At: now, Reason: "a test notification",
		Path: "/ui/notifications"}, name, now.Format(time.RFC3339Nano))
	row.State, row.Tries, row.SentAt, row.Sender = vocab.DeliveryDelivered, 1, now, "api"
	if err != nil {
		msg := err.Error()
		res.Delivered, res.Error = false, &msg
		row.State, row.LastError = vocab.DeliveryFailed, msg
	}
	if werr := s.writer.WithTx(context.WithoutCancel(ctx), func(tx store.Tx) error {
		_, err := tx.InsertNotifications([]*store.Notification{row})
		return err
	}); werr == nil {
		res.NotificationID = row.ID
	} else if !errors.Is(werr, store.ErrUnavailable) {
		return res, werr
	}
	return res, nil
}

// testNotifier is POST /api/v1/notifiers/{name}/test: 200 with delivered true or false and
// the receiver's refusal.
func (s *Server) testNotifier(w http.ResponseWriter, r *http.Request) {
	res, err := s.SendTest(r.Context(), mux.Vars(r)["name"], "http://"+r.Host)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
