package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/notify/notifytest"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Notifications with real `poolflow serve` processes and a real receiver in the test process
// (§13, issue 24).

const notifySecret = "e2e-hook-secret"

func notifyConfig(url, extra string) string {
	return fmt.Sprintf("max_running: 16\npools:\n  p: 1\nnotifiers:\n"+
		"  ops: {type: webhook, url: %q, secret_env: PF_E2E_HOOK_SECRET, timeout: 2s}\n"+
		"notifications: {retry_delay: 200ms, max_retry_delay: 1s, max_tries: 100, concurrency: 2}\n%s", url+"/hook", extra)
}

// identity names one occurrence of an event: kind, DAG, run, task and try.
func identity(d notifytest.Delivery) string {
	e := d.Event
	return fmt.Sprintf("%s %s/%s/%s#%d", e.Event, e.DAGID, e.DAGRunID, e.TaskID, e.TryNumber)
}

// collect takes deliveries until want distinct occurrences arrived, checking each signature.
func collect(t *testing.T, rcv *notifytest.Receiver, want int, limit time.Duration, logs ...*logBuf) map[string][]notifytest.Delivery {
	t.Helper()
	got := map[string][]notifytest.Delivery{}
	deadline := time.After(limit)
	for len(got) < want {
		select {
		case d := <-rcv.Got:
			if !d.SignedOK {
				t.Fatalf("bad signature on %s", d.Body)
			}
			got[identity(d)] = append(got[identity(d)], d)
		case <-deadline:
			var keys []string
			for k := range got {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, l := range logs {
				t.Logf("log:\n%s", l.String())
			}
			t.Fatalf("%d of %d events arrived: %v", len(got), want, keys)
		}
	}
	return got
}

// allDelivered waits until every outbox row is delivered.
func allDelivered(t *testing.T, st store.Store, limit time.Duration, logs ...*logBuf) []store.Notification {
	t.Helper()
	var list []store.Notification
	until(t, limit, "every notification delivered", func() bool {
		var err error
		list, _, err = st.ListNotifications(context.Background(), store.NotificationFilter{Limit: 1000})
		if err != nil {
			return false
		}
		for _, n := range list {
			if n.State != vocab.DeliveryDelivered {
				return false
			}
		}
		return len(list) > 0
	}, logs...)
	return list
}

// TestNotificationHandlers: failure, success, retry and queue-wait handlers each deliver
// exactly one event per occurrence, signed, to a real receiver; the latency from the state
// change to the receiver is reported.
func TestNotificationHandlers(t *testing.T) {
	t.Setenv("PF_E2E_HOOK_SECRET", notifySecret)
	rcv := notifytest.New(t, notifySecret)
	hold := filepath.Join(t.TempDir(), "release")
	p := newProject(t, notifyConfig(rcv.URL, ""), map[string]string{
		"fails.yaml": "dag_id: fails\non_failure: [ops]\ntasks:\n" +
			"  - {id: a, bash: 'exit 3', retries: 1, retry_delay: 0, on_failure: [ops], on_retry: [ops]}\n",
		"works.yaml": "dag_id: works\non_success: [ops]\ntasks:\n  - {id: b, bash: 'true', on_success: [ops]}\n",
		"waits.yaml": "dag_id: waits\ntasks:\n" +
			"  - {id: hog, bash: 'while [ ! -f " + hold + " ]; do sleep 0.05; done', pool_requirements: {p: 1}}\n" +
			"  - {id: w, bash: 'true', pool_requirements: {p: 1}, depends_on: [], on_queue_wait: {after: 1s, notify: [ops]}}\n",
	})
	d := p.serve(t)
	d.trigger("fails", "f1")
	d.trigger("works", "w1")
	d.trigger("waits", "q1")
	want := []string{"task_retry fails/f1/a#1", "task_failed fails/f1/a#2", "run_failed fails/f1/#0",
		"task_succeeded works/w1/b#1", "run_succeeded works/w1/#0", "queue_wait waits/q1/w#1"}
	got := collect(t, rcv, len(want), 60*time.Second, d.logs)
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	runEnded(t, 30*time.Second, "waits", "q1", d.logs)
	st := p.open(t)
	list := allDelivered(t, st, 30*time.Second, d.logs)
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Fatalf("events %v\nwant   %v", keys, want)
	}
	if len(list) != len(want) {
		t.Fatalf("%d outbox rows, want %d", len(list), len(want))
	}
	var lat []time.Duration
	for k, ds := range got {
		if len(ds) != 1 {
			t.Errorf("%s arrived %d times", k, len(ds))
		}
		lat = append(lat, ds[0].At.Sub(ds[0].Event.At))
		if k == "queue_wait waits/q1/w#1" && !strings.Contains(ds[0].Event.Reason, "pool p is full") {
			t.Errorf("queue wait reason %q", ds[0].Event.Reason)
		}
		if !strings.HasPrefix(ds[0].Event.URL, d.base+"/ui/dags/") {
			t.Errorf("%s: url %q", k, ds[0].Event.URL)
		}
	}
	slices.Sort(lat)
	t.Logf("delivery latency (state change → receiver), %d events: min %v, median %v, max %v", len(lat), lat[0],
		lat[len(lat)/2], lat[len(lat)-1])
}

// TestNotificationsThreeDaemonsKill: three daemons on one store deliver the outbox; one is
// killed with -9 while it sends. Every event arrives at least once, and the idempotency keys
// show that no event was produced twice (one key per occurrence; a repeat carries the same key).
func TestNotificationsThreeDaemonsKill(t *testing.T) {
	t.Setenv("PF_E2E_HOOK_SECRET", notifySecret)
	rcv := notifytest.New(t, notifySecret)
	var b strings.Builder
	b.WriteString("dag_id: fan\nmax_active_tasks: 100\non_success: [ops]\ntasks:\n")
	const n = 24
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - {id: t%02d, bash: 'true', on_success: [ops]}\n", i)
	}
	p := newProject(t, notifyConfig(rcv.URL, ""), map[string]string{"fan.yaml": b.String()})
	p.initStore(t)
	st := p.open(t)
	daemons := map[string]*serveProc{}
	for _, id := range []string{"d1", "d2", "d3"} {
		daemons[id] = p.startServe(t, "", "--daemon-id", id)
	}
	for _, d := range daemons {
		d.waitServing(30 * time.Second)
	}
	// The receiver holds every request: the senders' claims stay open while the test looks.
	rcv.Hold()
	daemons["d1"].trigger("fan", "r1")
	var victim string
	until(t, 60*time.Second, "a daemon other than the run's sending", func() bool {
		list, _, _ := st.ListNotifications(context.Background(), store.NotificationFilter{State: vocab.DeliverySending, Limit: 1000})
		for _, n := range list {
			if n.Sender != "d1" {
				victim = n.Sender
				return true
			}
		}
		return false
	}, logs(daemons)...)
	daemons[victim].kill()
	t.Logf("killed %s while it was sending", victim)
	rcv.Release()
	want := n + 1
	got := collect(t, rcv, want, 90*time.Second, logs(daemons)...)
	list := allDelivered(t, st, 60*time.Second, logs(daemons)...)
	if len(list) != want {
		t.Fatalf("%d outbox rows, want %d", len(list), want)
	}
	takenOver := 0
	for _, row := range list {
		if row.Tries > 1 {
			takenOver++
		}
	}
	repeats := 0
	for k, ds := range got {
		for _, d := range ds[1:] {
			if d.Key != ds[0].Key {
				t.Errorf("%s arrived under two keys: %s and %s (produced twice)", k, ds[0].Key, d.Key)
			}
			repeats++
		}
	}
	if seen := rcv.Seen(); len(seen) != want {
		t.Errorf("%d distinct keys, want %d", len(seen), want)
	}
	t.Logf("%d events, every one arrived; %d taken over after the kill, %d repeats with the same key", want, takenOver, repeats)
	if takenOver == 0 {
		t.Error("nothing was taken over from the killed daemon")
	}
}

// TestNotificationsReceiverDown: a receiver that is down for 20 s gets every event once it is
// back (the back-off is bounded by max_retry_delay: 1s), each exactly once.
func TestNotificationsReceiverDown(t *testing.T) {
	t.Setenv("PF_E2E_HOOK_SECRET", notifySecret)
	rcv := notifytest.New(t, notifySecret)
	var b strings.Builder
	b.WriteString("dag_id: fan\nmax_active_tasks: 100\non_success: [ops]\ntasks:\n")
	const n = 10
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - {id: t%02d, bash: 'true', on_success: [ops]}\n", i)
	}
	p := newProject(t, notifyConfig(rcv.URL, ""), map[string]string{"fan.yaml": b.String()})
	d := p.serve(t)
	rcv.Down()
	down := time.Now()
	d.trigger("fan", "r1")
	runEnded(t, 30*time.Second, "fan", "r1", d.logs)
	st := p.open(t)
	until(t, 30*time.Second, "tries failing while the receiver is down", func() bool {
		list, _, _ := st.ListNotifications(context.Background(), store.NotificationFilter{Limit: 1000})
		failing := 0
		for _, row := range list {
			if row.Tries >= 2 && strings.Contains(row.LastError, "connection refused") {
				failing++
			}
		}
		return failing == n+1
	}, d.logs)
	if wait := 20*time.Second - time.Since(down); wait > 0 {
		time.Sleep(wait) // the outage itself: what is tested is what happens after it
	}
	rcv.Up(t)
	back := time.Now()
	got := collect(t, rcv, n+1, 30*time.Second, d.logs)
	caughtUp := time.Since(back)
	list := allDelivered(t, st, 30*time.Second, d.logs)
	for k, ds := range got {
		if len(ds) != 1 {
			t.Errorf("%s arrived %d times", k, len(ds))
		}
	}
	maxTries := 0
	for _, row := range list {
		maxTries = max(maxTries, row.Tries)
	}
	t.Logf("receiver down %v: %d events delivered within %v of its return, up to %d tries each", back.Sub(down).Round(time.Second),
		n+1, caughtUp.Round(time.Millisecond), maxTries)
}
