package ui

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/poolflow/poolflow/notify"
	"github.com/poolflow/poolflow/notify/notifytest"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// notifyBundle is a UI over a configuration with a webhook to a real receiver and one whose
// receiver is down, and an outbox with a delivered, a failed and a pending delivery.
func notifyBundle(t *testing.T) (*bundle, *notifytest.Receiver) {
	t.Helper()
	rcv := notifytest.New(t, "ui-secret")
	t.Setenv("PF_UI_HOOK_SECRET", "ui-secret")
	b := setup(t, setupOpts{config: "notifiers:\n  ops: {type: webhook, url: '" + rcv.URL + "/hook', secret_env: PF_UI_HOOK_SECRET}\n" +
		"  down: {type: webhook, url: 'http://127.0.0.1:1/'}\n"})
	at := time.Now().Add(-time.Minute)
	mk := func(e vocab.NotifyEvent, task string, st vocab.DeliveryState, tries int, lastErr string) *store.Notification {
		n := notify.Row(notify.Event{Event: e, DAGID: "quick", DAGRunID: "r1", TaskID: task, TryNumber: 1,
			Reason: "exit status 1 <b>", At: at, Path: notify.RunPath("quick", "r1")}, "ops", task+string(st))
		n.State, n.Tries, n.LastError = st, tries, lastErr
		if st.Terminal() {
			n.SentAt = at.Add(40 * time.Millisecond)
		}
		return n
	}
	rows := []*store.Notification{mk(vocab.EventTaskFailed, "a", vocab.DeliveryDelivered, 1, ""),
		mk(vocab.EventTaskRetry, "b", vocab.DeliveryFailed, 8, "HTTP 500: <script>x</script>"),
		mk(vocab.EventRunFailed, "", vocab.DeliveryPending, 2, "connection refused")}
	if err := b.st.WithTx(context.Background(), func(tx store.Tx) error {
		_, err := tx.InsertNotifications(rows)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return b, rcv
}

// TestNotificationsPage: each delivery with its state, tries and last error (escaped), the
// filters, and the notifiers without their secrets.
func TestNotificationsPage(t *testing.T) {
	b, _ := notifyBundle(t)
	body := b.page(t, http.StatusOK, "/ui/notifications")
	for _, want := range []string{"1–3 of 3 deliveries", `data-state="delivered"`, `data-state="failed"`, `data-state="pending"`,
		"HTTP 500: &lt;script&gt;x&lt;/script&gt;", "exit status 1 &lt;b&gt;", `id="test-ops"`, `id="test-down"`,
		"env PF_UI_HOOK_SECRET", `href="/ui/dags/quick/runs/r1/tasks/b"`, ">Notifications</a>"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, "ui-secret") || strings.Contains(body, "/hook") {
		t.Error("a secret or the webhook's path is on the page")
	}
	body = b.page(t, http.StatusOK, "/ui/notifications?state=failed")
	if !strings.Contains(body, "1–1 of 1 delivery") || strings.Contains(body, `data-state="delivered"`) {
		t.Error("the state filter does not filter")
	}
	b.page(t, http.StatusBadRequest, "/ui/notifications?event=boom")
}

// TestBrowserNotifications: the page in a browser; Send test reaches the receiver and says so,
// a notifier whose receiver is down says why.
func TestBrowserNotifications(t *testing.T) {
	b, rcv := notifyBundle(t)
	ctx := tab(t)
	base := serve(t, b)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(base+"/ui/notifications")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the deliveries", `document.querySelectorAll('tr[data-notification]').length == 3`)
	shot(t, ctx, "notifications")
	if _, err := chromedp.Run(ctx, chromedp.Click(chromedp.CSS(`#test-ops`))); err != nil {
		t.Fatal(err)
	}
	// The daemon's sender delivers the pending fixture too; the test comes besides it.
	for got := false; !got; {
		select {
		case d := <-rcv.Got:
			if !d.SignedOK {
				t.Fatalf("bad signature %+v", d)
			}
			got = d.Event.Event == vocab.EventTest
		case <-time.After(30 * time.Second):
			t.Fatal("the test notification did not arrive")
		}
	}
	waitFor(t, ctx, "the test's outcome", `document.body.innerText.includes('took the test notification')`)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(base+"/ui/notifications")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the test listed", `document.querySelectorAll('tr[data-notification]').length == 4`)
	if _, err := chromedp.Run(ctx, chromedp.Click(chromedp.CSS(`#test-down`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the refusal", `document.body.innerText.includes('did not take the test') && document.body.innerText.includes('connection refused')`)
	shot(t, ctx, "notifications-test-failed")
}
