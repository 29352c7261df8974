package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/notify"
	"github.com/poolflow/poolflow/notify/notifytest"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// TestNotificationsAPI: GET /api/v1/notifications lists the outbox newest first with its
// filters and pages; a filter it does not know is a 400 naming it.
func TestNotificationsAPI(t *testing.T) {
	b := setup(t, setupOpts{readsOpen: true})
	at := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	var rows []*store.Notification
	for i, e := range []vocab.NotifyEvent{vocab.EventTaskFailed, vocab.EventTaskRetry, vocab.EventRunFailed} {
		ev := notify.Event{Event: e, DAGID: "etl", DAGRunID: "r1", TaskID: "load", TryNumber: 1, State: "x",
			Reason: "exit status 1", At: at.Add(time.Duration(i) * time.Minute), Path: notify.RunPath("etl", "r1")}
		if e == vocab.EventRunFailed {
			ev.TaskID, ev.DAGID = "", "other"
		}
		rows = append(rows, notify.Row(ev, "ops", "o"))
	}
	if err := b.st.WithTx(context.Background(), func(tx store.Tx) error {
		_, err := tx.InsertNotifications(rows)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var got notificationCollection
	get := func(q string) int {
		rec := b.do(t, http.MethodGet, "/api/v1/notifications"+q, "", "")
		got = notificationCollection{}
		if rec.Code == http.StatusOK {
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
		}
		return rec.Code
	}
	if get("") != http.StatusOK || got.TotalEntries != 3 || got.Notifications[0].Event != vocab.EventRunFailed {
		t.Fatalf("all: %+v", got)
	}
	n := got.Notifications[2]
	if n.State != vocab.DeliveryPending || n.IdempotencyKey == "" || n.Notifier != "ops" || *n.DAGID != "etl" ||
		n.NextTryAt == nil || !strings.Contains(compactJSON(n.Payload), `"reason":"exit status 1"`) {
		t.Fatalf("row %+v payload %s", n, n.Payload)
	}
	if get("?dag_id=etl&event=task_retry") != http.StatusOK || got.TotalEntries != 1 || got.Notifications[0].Event != vocab.EventTaskRetry {
		t.Fatalf("filtered: %+v", got)
	}
	if get("?state=pending&limit=1&offset=1") != http.StatusOK || got.TotalEntries != 3 || len(got.Notifications) != 1 {
		t.Fatalf("page: %+v", got)
	}
	for q, field := range map[string]string{"?state=lost": "state", "?event=boom": "event", "?limit=x": "limit",
		"?colour=red": "colour"} {
		rec := b.do(t, http.MethodGet, "/api/v1/notifications"+q, "", "")
		if rec.Code != http.StatusBadRequest || !strings.Contains(problemOf(t, rec).Detail, field) {
			t.Errorf("%s: %d %s", q, rec.Code, rec.Body)
		}
	}
}

// TestNotifiersAPI: the notifiers are listed without their secrets, and "send test" posts a
// sample to the receiver at once, recording it.
func TestNotifiersAPI(t *testing.T) {
	rcv := notifytest.New(t, "api-secret")
	t.Setenv("PF_API_HOOK_SECRET", "api-secret")
	t.Setenv("PF_API_SLACK", "https://hooks.slack.com/services/T/B/SLACKTOKEN")
	b := setup(t, setupOpts{token: testToken, readsOpen: true, config: "notifiers:\n  ops: {type: webhook, url: '" + rcv.URL +
		"/hook?token=querytoken', secret_env: PF_API_HOOK_SECRET}\n  chat: {type: slack, url_env: PF_API_SLACK}\n" +
		"  down: {type: webhook, url: 'http://127.0.0.1:1/'}\n"})
	rec := b.do(t, http.MethodGet, "/api/v1/notifiers", "", "")
	body := compactJSON(rec.Body.Bytes())
	if rec.Code != http.StatusOK || !strings.Contains(body, `"name":"ops"`) || !strings.Contains(body, `"secret":"env PF_API_HOOK_SECRET"`) {
		t.Fatalf("%d %s", rec.Code, body)
	}
	for _, secret := range []string{"api-secret", "SLACKTOKEN", "querytoken", "/hook"} {
		if strings.Contains(body, secret) {
			t.Fatalf("%q shown: %s", secret, body)
		}
	}
	if rec := b.do(t, http.MethodPost, "/api/v1/notifiers/ops/test", "", ""); rec.Code != http.StatusUnauthorized {
		t.Fatalf("test without the token: %d", rec.Code)
	}
	rec = b.do(t, http.MethodPost, "/api/v1/notifiers/ops/test", "", testToken)
	var res TestResultJSON
	_ = json.Unmarshal(rec.Body.Bytes(), &res)
	if rec.Code != http.StatusOK || !res.Delivered || res.NotificationID == 0 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	d := <-rcv.Got
	if !d.SignedOK || d.Event.Event != vocab.EventTest {
		t.Fatalf("delivery %+v", d)
	}
	rec = b.do(t, http.MethodPost, "/api/v1/notifiers/down/test", "", testToken)
	res = TestResultJSON{}
	_ = json.Unmarshal(rec.Body.Bytes(), &res)
	if rec.Code != http.StatusOK || res.Delivered || res.Error == nil || !strings.Contains(*res.Error, "connection refused") {
		t.Fatalf("down: %d %s", rec.Code, rec.Body)
	}
	if rec := b.do(t, http.MethodPost, "/api/v1/notifiers/nope/test", "", testToken); rec.Code != http.StatusNotFound {
		t.Fatalf("unknown notifier: %d", rec.Code)
	}
	// Both tests are deliveries of event test, delivered and failed.
	list, _, err := b.st.ListNotifications(context.Background(), store.NotificationFilter{Event: vocab.EventTest})
	if err != nil || len(list) != 2 || list[0].State != vocab.DeliveryFailed || list[1].State != vocab.DeliveryDelivered ||
		list[1].SentAt.IsZero() {
		t.Fatalf("recorded %+v %v", list, err)
	}
}

func compactJSON(b []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return string(b)
	}
	return buf.String()
}
