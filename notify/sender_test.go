package notify_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/notify"
	"github.com/poolflow/poolflow/notify/notifytest"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/storetest"
	"github.com/poolflow/poolflow/vocab"
)

// bundle is one sender test's fixtures: a real store, a configuration with notifiers, and the
// tries' outcomes as they happen (signalled, not polled).
type bundle struct {
	st    store.Store
	cfg   *config.Config
	tries chan tryOutcome
}

type tryOutcome struct {
	n   store.Notification
	err error
}

func setup(t *testing.T, notifiers string) *bundle {
	t.Helper()
	cfg, err := config.Parse("poolflow.yaml", []byte("notifiers:\n"+notifiers+
		"notifications: {retry_delay: 5ms, max_retry_delay: 20ms, max_tries: 3, concurrency: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{st: storetest.Open(t, filepath.Join(t.TempDir(), "p.db"), store.Options{}), cfg: cfg,
		tries: make(chan tryOutcome, 1000)}
}

func (b *bundle) sender(t *testing.T, id string, mod func(*notify.SenderConfig)) *notify.Sender {
	t.Helper()
	sc := notify.SenderConfig{Store: b.st, DaemonID: id, Config: func() *config.Config { return b.cfg },
		BaseURL: func() string { return "http://ui" }, Poll: 5 * time.Millisecond,
		Sent: func(n store.Notification, err error) { b.tries <- tryOutcome{n, err} }}
	if mod != nil {
		mod(&sc)
	}
	s := notify.NewSender(sc)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// put writes an event for notifier into the outbox, as a pass does.
func (b *bundle) put(t *testing.T, notifier string, ev notify.Event, occurrence string) *store.Notification {
	t.Helper()
	row := notify.Row(ev, notifier, occurrence)
	if err := b.st.WithTx(context.Background(), func(tx store.Tx) error {
		_, err := tx.InsertNotifications([]*store.Notification{row})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return row
}

func (b *bundle) next(t *testing.T) tryOutcome {
	t.Helper()
	select {
	case o := <-b.tries:
		return o
	case <-time.After(20 * time.Second):
		t.Fatal("no try")
	}
	return tryOutcome{}
}

func (b *bundle) row(t *testing.T, id int64) store.Notification {
	t.Helper()
	list, _, err := b.st.ListNotifications(context.Background(), store.NotificationFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range list {
		if n.ID == id {
			return n
		}
	}
	t.Fatalf("no notification %d", id)
	return store.Notification{}
}

// settled waits until row id's outcome is recorded (the try's outcome is signalled just after).
func (b *bundle) settled(t *testing.T, id int64, want vocab.DeliveryState) store.Notification {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := b.row(t, id)
		if n.State == want {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("notification %d is %s, want %s", id, n.State, want)
		}
		time.Sleep(2 * time.Millisecond) // the outcome is written right after the try is signalled
	}
}

var sample = notify.Event{Event: vocab.EventTaskFailed, DAGID: "etl", DAGRunID: "r1", TaskID: "load", TryNumber: 2,
	State: string(vocab.TaskFailed), Reason: "exit status 1", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	Path: notify.TaskPath("etl", "r1", "load")}

// TestWebhookSignedAndDelivered: the receiver gets the documented JSON with a valid signature
// and the idempotency key; the row is delivered after one try.
func TestWebhookSignedAndDelivered(t *testing.T) {
	t.Setenv("PF_SENDER_SECRET", "topsecret")
	rcv := notifytest.New(t, "topsecret")
	b := setup(t, "  ops: {type: webhook, url: "+rcv.URL+"/x, secret_env: PF_SENDER_SECRET, headers: {X-Team: data}}\n")
	b.sender(t, "d1", nil)
	row := b.put(t, "ops", sample, "o1")
	d := <-rcv.Got
	if !d.SignedOK || !strings.HasPrefix(d.Signature, "sha256=") {
		t.Fatalf("signature %q does not verify", d.Signature)
	}
	if d.Key != row.Key || d.Event.IdempotencyKey != row.Key {
		t.Fatalf("key %q, want %q", d.Key, row.Key)
	}
	for _, field := range []string{`"event":"task_failed"`, `"dag_id":"etl"`, `"dag_run_id":"r1"`, `"task_id":"load"`,
		`"map_index":-1`, `"try_number":2`, `"state":"failed"`, `"reason":"exit status 1"`, `"logical_date":`,
		`"url":"http://ui/ui/dags/etl/runs/r1/tasks/load"`, `"at":"2026-01-02T03:04:05Z"`} {
		if !strings.Contains(string(d.Body), field) {
			t.Errorf("body lacks %s: %s", field, d.Body)
		}
	}
	if o := b.next(t); o.err != nil {
		t.Fatal(o.err)
	}
	if n := b.settled(t, row.ID, vocab.DeliveryDelivered); n.Tries != 1 || n.LastError != "" {
		t.Fatalf("row %+v", n)
	}
	// A wrong secret does not verify.
	if notify.Verify([]byte("other"), d.Body, d.Signature) {
		t.Fatal("a wrong secret verified")
	}
}

// TestWebhookFailures: a receiver answering 500, hanging past the timeout, or closing the
// connection is tried again with back-off, then marked failed with the last error; a 10 MB
// answer is cut, not read whole.
func TestWebhookFailures(t *testing.T) {
	hang := make(chan struct{})
	var mu sync.Mutex
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // read whole, the server notices the client going away
		mu.Lock()
		calls[r.URL.Path]++
		mu.Unlock()
		switch r.URL.Path {
		case "/500":
			http.Error(w, "database is down", http.StatusInternalServerError)
		case "/hang":
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		case "/close":
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		case "/big":
			w.WriteHeader(http.StatusOK)
			chunk := make([]byte, 1<<20)
			for i := 0; i < 50; i++ { // 50 MB offered, 10 MB read
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(hang) }) // before srv.Close, which waits for the handlers
	b := setup(t, "  e500: {type: webhook, url: "+srv.URL+"/500}\n"+
		"  hang: {type: webhook, url: "+srv.URL+"/hang, timeout: 50ms}\n"+
		"  close: {type: webhook, url: "+srv.URL+"/close}\n"+
		"  big: {type: webhook, url: "+srv.URL+"/big}\n")
	b.sender(t, "d1", nil)
	rows := map[string]*store.Notification{}
	for _, name := range []string{"e500", "hang", "close", "big"} {
		rows[name] = b.put(t, name, sample, name)
	}
	want := map[string]string{
		"e500":  "HTTP 500: database is down",
		"hang":  "no answer within 50ms",
		"close": "EOF",
	}
	for name, msg := range want {
		n := b.settled(t, rows[name].ID, vocab.DeliveryFailed)
		if n.Tries != 3 || !strings.Contains(n.LastError, msg) || n.SentAt.IsZero() {
			t.Errorf("%s: %+v, want 3 tries and %q", name, n, msg)
		}
		if strings.Contains(n.LastError, srv.URL) {
			t.Errorf("%s: the URL is in the error %q", name, n.LastError)
		}
	}
	if n := b.settled(t, rows["big"].ID, vocab.DeliveryDelivered); n.Tries != 1 {
		t.Fatalf("big answer: %+v", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["/500"] != 3 || calls["/close"] != 3 {
		t.Fatalf("calls %v, want 3 tries each", calls)
	}
}

// TestLeaseTakeover: a sender that claimed a row and died (it never settles) leaves it to
// another sender once its lease lapses; the dead sender's late outcome writes nothing.
func TestLeaseTakeover(t *testing.T) {
	rcv := notifytest.New(t, "")
	b := setup(t, "  ops: {type: webhook, url: "+rcv.URL+", timeout: 1s}\n")
	row := b.put(t, "ops", sample, "o1")
	now := time.Now()
	var claimed []store.Notification
	if err := b.st.WithTx(context.Background(), func(tx store.Tx) error {
		var err error
		claimed, err = tx.ClaimNotifications("dead", now, now.Add(300*time.Millisecond), 10)
		return err
	}); err != nil || len(claimed) != 1 {
		t.Fatalf("claim %v %v", claimed, err)
	}
	start := time.Now()
	b.sender(t, "live", nil)
	d := <-rcv.Got
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Fatalf("taken over after %v, before the lease lapsed", waited)
	}
	if d.Key != row.Key {
		t.Fatal("another key")
	}
	n := b.settled(t, row.ID, vocab.DeliveryDelivered)
	if n.Sender != "live" || n.Tries != 2 {
		t.Fatalf("row %+v", n)
	}
	var ok bool
	if err := b.st.WithTx(context.Background(), func(tx store.Tx) error {
		var err error
		ok, err = tx.SettleNotification(row.ID, "dead", 1, store.NotificationOutcome{State: vocab.DeliveryFailed, At: time.Now()})
		return err
	}); err != nil || ok {
		t.Fatalf("the dead sender settled: %v %v", ok, err)
	}
}

// TestUnknownNotifierFailsAtOnce: a row whose notifier left poolflow.yaml fails without retries.
func TestUnknownNotifierFailsAtOnce(t *testing.T) {
	b := setup(t, "  ops: {type: command, command: ['true']}\n")
	b.sender(t, "d1", nil)
	row := b.put(t, "gone", sample, "o1")
	n := b.settled(t, row.ID, vocab.DeliveryFailed)
	if n.Tries != 1 || !strings.Contains(n.LastError, "notifier gone is not in poolflow.yaml") {
		t.Fatalf("row %+v", n)
	}
}

func TestBackoff(t *testing.T) {
	d := config.Delivery{RetryDelay: time.Second, MaxRetryDelay: 10 * time.Second}
	for tries, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second,
		5: 10 * time.Second, 40: 10 * time.Second} {
		if got := notify.Backoff(d, tries); got != want {
			t.Errorf("Backoff(%d) = %v, want %v", tries, got, want)
		}
	}
}

func TestOrdinal(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st",
		22: "22nd", 103: "103rd", 111: "111th", 112: "112th"} {
		if got := notify.Ordinal(n); got != want {
			t.Errorf("Ordinal(%d) = %s, want %s", n, got, want)
		}
	}
}
