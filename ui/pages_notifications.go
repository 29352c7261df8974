package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The notifications page (§13): each delivery of the outbox with its state, tries and last
// error, filtered by the names of GET /api/v1/notifications; and the notifiers of
// poolflow.yaml, each with a "send test" button.

const notificationsPage = 50

// notificationRow is one delivery as the page shows it.
type notificationRow struct {
	server.NotificationJSON
	DAGID, RunID, TaskID, LastError string
	Try                             int
	Reason                          string
	Latency                         time.Duration // created → delivered
}

type notificationsData struct {
	Notifiers []server.NotifierJSON
	Filter    notificationQuery
	Events    []vocab.NotifyEvent
	States    []vocab.DeliveryState
	Rows      []notificationRow
	Now       time.Time
	Total     int
	From, To  int
	Prev      string
	Next      string
	API       string
	Error     string
}

type notificationQuery struct {
	DAGID, RunID, Notifier, Event, State string
	Offset                               int
}

func (q notificationQuery) values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"dag_id": q.DAGID, "run_id": q.RunID, "notifier": q.Notifier, "event": q.Event,
		"state": q.State} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Offset > 0 {
		v.Set("offset", strconv.Itoa(q.Offset))
	}
	return v
}

// Filtered says whether any filter is set.
func (q notificationQuery) Filtered() bool {
	q.Offset = 0
	return len(q.values()) > 0
}

func notificationsPath(q notificationQuery) string {
	if v := q.values(); len(v) > 0 {
		return "/ui/notifications?" + v.Encode()
	}
	return "/ui/notifications"
}

func (u *UI) notificationsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	fq := notificationQuery{DAGID: q.Get("dag_id"), RunID: q.Get("run_id"), Notifier: q.Get("notifier"),
		Event: q.Get("event"), State: q.Get("state")}
	fq.Offset, _ = strconv.Atoi(q.Get("offset"))
	fq.Offset = max(fq.Offset, 0)
	data := notificationsData{Filter: fq, Events: vocab.NotifyEvents(), States: vocab.DeliveryStates(), Now: u.api.Now(),
		Notifiers: u.api.Notifiers()}
	f := store.NotificationFilter{DAGID: fq.DAGID, RunID: fq.RunID, Notifier: fq.Notifier, Limit: notificationsPage,
		Offset: fq.Offset}
	var bad []string
	if fq.Event != "" {
		if e := vocab.NotifyEvent(fq.Event); e.Valid() {
			f.Event = e
		} else {
			bad = append(bad, fmt.Sprintf("event: %q is not an event", fq.Event))
		}
	}
	if fq.State != "" {
		if s := vocab.DeliveryState(fq.State); s.Valid() {
			f.State = s
		} else {
			bad = append(bad, fmt.Sprintf("state: %q is not a delivery state", fq.State))
		}
	}
	if len(bad) > 0 {
		data.Error = strings.Join(bad, "; ")
		u.render(w, r, http.StatusBadRequest, "notifications", "Notifications", "notifications", data)
		return
	}
	list, total, err := u.api.Notifications(r.Context(), f)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	data.Total = total
	for _, n := range list {
		row := notificationRow{NotificationJSON: n, DAGID: deref(n.DAGID), RunID: deref(n.DAGRunID), TaskID: deref(n.TaskID),
			LastError: deref(n.LastError)}
		if n.TryNumber != nil {
			row.Try = *n.TryNumber
		}
		var ev struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(n.Payload, &ev)
		row.Reason = ev.Reason
		if n.State == vocab.DeliveryDelivered && n.SentAt != nil {
			row.Latency = n.SentAt.Sub(n.CreatedAt).Round(time.Millisecond)
		}
		data.Rows = append(data.Rows, row)
	}
	if len(list) > 0 {
		data.From, data.To = fq.Offset+1, fq.Offset+len(list)
	}
	if fq.Offset > 0 {
		p := fq
		p.Offset = max(fq.Offset-notificationsPage, 0)
		data.Prev = notificationsPath(p)
	}
	if fq.Offset+len(list) < total {
		p := fq
		p.Offset += notificationsPage
		data.Next = notificationsPath(p)
	}
	api := fq.values()
	api.Set("limit", strconv.Itoa(notificationsPage))
	data.API = "/api/v1/notifications?" + api.Encode()
	u.render(w, r, http.StatusOK, "notifications", "Notifications", "notifications", data)
}

// testNotifier is the page's "send test" button: POST /api/v1/notifiers/{name}/test.
func (u *UI) testNotifier(w http.ResponseWriter, r *http.Request) {
	name := mux.Vars(r)["name"]
	if !u.mayAct(w, r) {
		return
	}
	status, data, ok := u.callAPI(w, r, http.MethodPost, apiPath("notifiers", name, "test"), nil)
	if !ok {
		return
	}
	var res server.TestResultJSON
	_ = json.Unmarshal(data, &res)
	if !res.Delivered {
		u.actionError(w, r, http.StatusBadGateway, fmt.Sprintf("Notifier %s did not take the test: %s", name, deref(res.Error)))
		return
	}
	u.done(w, r, status, fmt.Sprintf("Notifier %s took the test notification.", name), "/ui/notifications")
}
