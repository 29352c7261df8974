package server

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/notify"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/storetest"
	"github.com/poolflow/poolflow/vocab"
)

// TestNotificationMetrics: each try is counted by notifier and outcome, and the outbox's
// pending rows are a gauge read from the store at scrape time (§13).
func TestNotificationMetrics(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, filepath.Join(t.TempDir(), "p.db"), store.Options{})
	m := NewMetrics()
	m.watch(st)
	for _, s := range []vocab.DeliveryState{vocab.DeliveryDelivered, vocab.DeliveryDelivered, vocab.DeliveryPending, vocab.DeliveryFailed} {
		m.NotificationSettled("ops", s)
	}
	m.NotificationSettled("mail", vocab.DeliveryPending)
	ev := notify.Event{Event: vocab.EventTaskFailed, DAGID: "etl", DAGRunID: "r", TaskID: "t", TryNumber: 1, At: time.Now()}
	if err := st.WithTx(context.Background(), func(tx store.Tx) error {
		_, err := tx.InsertNotifications([]*store.Notification{notify.Row(ev, "ops", "a"), notify.Row(ev, "ops", "b"), notify.Row(ev, "mail", "a")})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	body := serve(m.Handler(), "/metrics")
	for _, want := range []string{
		`poolflow_notification_deliveries_total{notifier="ops",outcome="delivered"} 2`,
		`poolflow_notification_deliveries_total{notifier="ops",outcome="retried"} 1`,
		`poolflow_notification_deliveries_total{notifier="ops",outcome="failed"} 1`,
		`poolflow_notification_deliveries_total{notifier="mail",outcome="retried"} 1`,
		`poolflow_notification_outbox_pending 3`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}
