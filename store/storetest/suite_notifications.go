package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The outbox of notifications (§13, issue 24): an event is stored once per key, claimed by one
// sender under a lease, taken over when that lease lapses, settled only by its holder, and
// listed by the API's filters.

func notification(key, notifier string, ev vocab.NotifyEvent, at time.Time) *store.Notification {
	return &store.Notification{Key: key, Event: ev, Notifier: notifier, DAGID: "etl", RunID: "r1", TaskID: "load", Try: 1,
		Payload: `{"event":"` + string(ev) + `"}`, CreatedAt: at}
}

func testNotifications(t *testing.T, h Harness) {
	st := h.New(t)
	t0 := day
	var ins int
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		var err error
		ins, err = tx.InsertNotifications([]*store.Notification{
			notification("k1", "ops", vocab.EventTaskFailed, t0),
			notification("k2", "chat", vocab.EventTaskFailed, t0.Add(time.Second)),
			notification("k1", "ops", vocab.EventTaskFailed, t0), // the same occurrence again: dropped
		})
		return err
	}))
	if ins != 2 {
		t.Fatalf("inserted %d, want 2 (a key stored twice is dropped)", ins)
	}
	// An event word the binary does not know is refused before the schema sees it.
	err := st.WithTx(bg(), func(tx store.Tx) error {
		_, err := tx.InsertNotifications([]*store.Notification{notification("k9", "ops", "exploded", t0)})
		return err
	})
	if !errors.Is(err, store.ErrConstraint) {
		t.Fatalf("unknown event: err = %v, want ErrConstraint", err)
	}
	if at, ok, err := st.NextNotification(bg()); err != nil || !ok || !at.Equal(t0) {
		t.Fatalf("NextNotification = %v %v %v, want %v", at, ok, err, t0)
	}

	claim := func(sender string, now time.Time, limit int) []store.Notification {
		t.Helper()
		var got []store.Notification
		must(t, st.WithTx(bg(), func(tx store.Tx) error {
			var err error
			got, err = tx.ClaimNotifications(sender, now, now.Add(time.Minute), limit)
			return err
		}))
		return got
	}
	settle := func(n store.Notification, sender string, o store.NotificationOutcome) bool {
		t.Helper()
		var ok bool
		must(t, st.WithTx(bg(), func(tx store.Tx) error {
			var err error
			ok, err = tx.SettleNotification(n.ID, sender, n.Tries, o)
			return err
		}))
		return ok
	}

	// Only what is due is claimed, oldest first, one try begun each.
	if got := claim("d1", t0.Add(-time.Second), 10); len(got) != 0 {
		t.Fatalf("claimed %d before they were due", len(got))
	}
	got := claim("d1", t0, 10)
	if len(got) != 1 || got[0].Key != "k1" || got[0].State != vocab.DeliverySending || got[0].Tries != 1 || got[0].Sender != "d1" {
		t.Fatalf("claim at t0 = %+v, want k1 sending by d1, try 1", got)
	}
	k1 := got[0]
	// A claimed row under a running lease is nobody else's.
	if got := claim("d2", t0.Add(30*time.Second), 10); len(got) != 1 || got[0].Key != "k2" {
		t.Fatalf("d2 claimed %+v, want only k2", got)
	}
	// d1 died: its lease lapses and d2 takes k1 over, with the next try.
	got = claim("d2", t0.Add(70*time.Second), 10) // k1 lapsed at 60 s, k2 runs to 90 s
	if len(got) != 1 || got[0].Key != "k1" || got[0].Tries != 2 || got[0].Sender != "d2" {
		t.Fatalf("takeover = %+v, want k1 by d2, try 2", got)
	}
	// The late answer of d1's try writes nothing.
	if settle(k1, "d1", store.NotificationOutcome{State: vocab.DeliveryDelivered, At: t0.Add(3 * time.Minute)}) {
		t.Fatal("a sender whose lease lapsed settled the row")
	}
	// d2's try failed: pending again until its next try.
	retryAt := t0.Add(5 * time.Minute)
	if !settle(got[0], "d2", store.NotificationOutcome{State: vocab.DeliveryPending, NextAt: retryAt,
		Error: "HTTP 500", At: t0.Add(71 * time.Second)}) {
		t.Fatal("the holder could not settle its try")
	}
	if at, _, _ := st.NextNotification(bg()); !at.Equal(t0.Add(30*time.Second + time.Minute)) {
		t.Fatalf("NextNotification = %v, want k2's lease end", at)
	}
	got = claim("d2", retryAt, 10)
	var k1b store.Notification
	for _, n := range got {
		if n.Key == "k1" {
			k1b = n
		}
	}
	if k1b.Tries != 3 || k1b.LastError != "HTTP 500" {
		t.Fatalf("retry claim = %+v, want k1 try 3 with the last error", got)
	}
	delivered := retryAt.Add(time.Second)
	if !settle(k1b, "d2", store.NotificationOutcome{State: vocab.DeliveryDelivered, At: delivered}) {
		t.Fatal("settle delivered refused")
	}
	// A delivered row is never claimed again.
	for _, n := range claim("d3", retryAt.Add(time.Hour), 10) {
		if n.Key == "k1" {
			t.Fatal("a delivered notification was claimed again")
		}
	}

	// The API's reads: newest first, filtered, paginated.
	list, total, err := st.ListNotifications(bg(), store.NotificationFilter{})
	must(t, err)
	if total != 2 || len(list) != 2 || list[0].Key != "k2" {
		t.Fatalf("list = %d %+v, want 2, newest (k2) first", total, list)
	}
	list, total, err = st.ListNotifications(bg(), store.NotificationFilter{State: vocab.DeliveryDelivered})
	must(t, err)
	if total != 1 || list[0].Key != "k1" || !list[0].SentAt.Equal(delivered) || list[0].Tries != 3 {
		t.Fatalf("delivered = %+v, want k1 sent at %v after 3 tries", list, delivered)
	}
	list, total, err = st.ListNotifications(bg(), store.NotificationFilter{Notifier: "chat", Limit: 1, Offset: 0})
	must(t, err)
	if total != 1 || list[0].Notifier != "chat" {
		t.Fatalf("by notifier = %+v", list)
	}
	if list, total, _ = st.ListNotifications(bg(), store.NotificationFilter{Limit: 1, Offset: 1}); total != 2 || len(list) != 1 || list[0].Key != "k1" {
		t.Fatalf("page 2 = %d %+v, want k1", total, list)
	}
	// Retention (events:) deletes settled notifications past its age, never one still to send;
	// a dry run (db clean --dry-run) counts them first.
	if c, err := st.CountPrunable(bg(), time.Time{}, t0.Add(time.Hour)); err != nil || c.Notifications != 1 || c.Events != 0 {
		t.Fatalf("prunable %+v %v, want 1 notification", c, err)
	}
	var pruned int
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		var err error
		pruned, err = tx.PruneEvents(t0.Add(time.Hour), 100)
		return err
	}))
	if list, total, _ = st.ListNotifications(bg(), store.NotificationFilter{}); pruned != 1 || total != 1 || list[0].Key != "k2" {
		t.Fatalf("pruned %d, left %+v; want k1 (delivered) gone and k2 (sending) kept", pruned, list)
	}
}
