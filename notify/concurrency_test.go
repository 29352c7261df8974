package notify_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/notify"
	"github.com/poolflow/poolflow/vocab"
)

// TestConcurrencyFollowsReload: notifications.concurrency bounds the tries in flight, and a
// configuration reloaded with another bound applies at the next claim (it was read only at
// start). A receiver holds every request until the end, so the tries in flight are the
// requests it holds; and each try is counted by notifier and outcome for /metrics.
func TestConcurrencyFollowsReload(t *testing.T) {
	arrived, release := make(chan struct{}, 10), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	parse := func(n int) *config.Config {
		c, err := config.Parse("poolflow.yaml", []byte(fmt.Sprintf("notifiers:\n  ops: {type: webhook, url: %s}\n"+
			"notifications: {concurrency: %d}\n", srv.URL, n)))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	b := setup(t, "  ops: {type: webhook, url: "+srv.URL+"}\n")
	var cfg atomic.Pointer[config.Config]
	cfg.Store(parse(1))
	var delivered atomic.Int64
	s := b.sender(t, "d1", func(sc *notify.SenderConfig) {
		sc.Config = cfg.Load
		sc.Settled = func(notifier string, state vocab.DeliveryState) {
			if notifier == "ops" && state == vocab.DeliveryDelivered {
				delivered.Add(1)
			}
		}
	})
	for i := range 4 {
		b.put(t, "ops", sample, fmt.Sprint("o", i))
	}
	<-arrived
	select {
	case <-arrived:
		t.Fatal("a second try in flight with concurrency 1")
	case <-time.After(100 * time.Millisecond): // twenty polls of the sender
	}
	cfg.Store(parse(3))
	s.Wake()
	for range 2 {
		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			t.Fatal("concurrency 3 after the reload: fewer than 3 tries in flight")
		}
	}
	close(release)
	for range 4 {
		if o := b.next(t); o.err != nil {
			t.Fatalf("try: %v", o.err)
		}
	}
	if n := delivered.Load(); n != 4 {
		t.Fatalf("settled delivered %d, want 4", n)
	}
}
