package executor

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/poolflow/poolflow/notify"
	"github.com/poolflow/poolflow/notify/notifytest"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// notifyDAG: a retries once then fails; b succeeds; the run fails once.
const notifyDAG = `dag_id: n
on_failure: [ops]
on_success: [ops]
default_args: {on_retry: [ops]}
tasks:
  - {id: a, bash: 'false', retries: 1, retry_delay: 0, on_failure: [ops]}
  - {id: b, bash: 'true', on_success: [ops]}
`

func notifyConfig(url string) string {
	return fmt.Sprintf("notifiers:\n  ops: {type: webhook, url: %q, secret_env: PF_NOTIFY_TEST_SECRET, timeout: 2s}\n"+
		"notifications: {retry_delay: 10ms, max_retry_delay: 50ms, max_tries: 3}\n", url)
}

// outbox reads every notification, oldest first.
func outbox(t testing.TB, st store.Store) []store.Notification {
	t.Helper()
	list, _, err := st.ListNotifications(context.Background(), store.NotificationFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(list)
	return list
}

func events(ns []store.Notification) []string {
	var out []string
	for _, n := range ns {
		out = append(out, string(n.Event)+":"+n.TaskID)
	}
	return out
}

// TestNotificationsInThePassOfTheChange: each state change a handler names puts its event in
// the outbox in the pass that makes it — one task_retry per retried try, one task_failed and
// one task_succeeded per task instance, one run_failed per run — and nothing else.
func TestNotificationsInThePassOfTheChange(t *testing.T) {
	t.Setenv("PF_NOTIFY_TEST_SECRET", "k")
	b := setup(t, notifyConfig("http://127.0.0.1:1/"), map[string]string{"n.yaml": notifyDAG})
	h, clock := b.harness(t, nil)
	trig, reply := h.Trigger(TriggerRequest{DAGID: "n", RunID: "x"})
	p := h.mustPass(t, trig)
	if r := <-reply; r.Err != nil {
		t.Fatal(r.Err)
	}
	if len(outbox(t, b.st)) != 0 {
		t.Fatal("events before anything happened")
	}
	byTask := map[string]int{}
	for i, s := range p.Starts {
		byTask[s.Task.ID] = i
	}
	clock.Advance(time.Second)
	a, bb := p.Starts[byTask["a"]], p.Starts[byTask["b"]]
	p = h.mustPass(t, h.End(a, false, "exit status 1"), h.End(bb, true, ""))
	if got := events(outbox(t, b.st)); !slices.Equal(got, []string{"task_retry:a", "task_succeeded:b"}) {
		t.Fatalf("after try 1: %v", got)
	}
	if p.Told != 2 {
		t.Fatalf("plan told %d", p.Told)
	}
	// The retry starts (retry_delay 0) and fails for good: task_failed, then the run's end.
	for len(p.Starts) == 0 {
		clock.Advance(time.Second)
		p = h.mustPass(t)
	}
	clock.Advance(time.Second)
	h.mustPass(t, h.End(p.Starts[0], false, "exit status 1"))
	h.mustPass(t)
	ns := outbox(t, b.st)
	if got := events(ns); !slices.Equal(got, []string{"task_retry:a", "task_succeeded:b", "task_failed:a", "run_failed:"}) {
		t.Fatalf("events %v", got)
	}
	keys := map[string]bool{}
	for _, n := range ns {
		if keys[n.Key] || n.State != vocab.DeliveryPending || n.Notifier != "ops" {
			t.Fatalf("row %+v", n)
		}
		keys[n.Key] = true
		ev, err := notify.Decode(n, "http://ui.example")
		if err != nil {
			t.Fatal(err)
		}
		if ev.DAGID != "n" || ev.DAGRunID != "x" || ev.IdempotencyKey != n.Key || ev.MapIndex != -1 || ev.URL == "" {
			t.Fatalf("event %+v", ev)
		}
		switch ev.Event {
		case vocab.EventRunFailed:
			if ev.State != string(vocab.RunFailed) || ev.Reason != "task failed: a" || ev.URL != "http://ui.example/ui/dags/n/runs/x" {
				t.Fatalf("run_failed %+v", ev)
			}
		case vocab.EventTaskFailed:
			if ev.TryNumber != 2 || ev.State != string(vocab.TaskFailed) || ev.Reason != "exit status 1" {
				t.Fatalf("task_failed %+v", ev)
			}
		case vocab.EventTaskRetry:
			if ev.TryNumber != 1 || ev.State != string(vocab.TaskUpForRetry) {
				t.Fatalf("task_retry %+v", ev)
			}
		}
	}
	// More passes tell nothing more.
	clock.Advance(time.Minute)
	h.mustPass(t)
	if n := len(outbox(t, b.st)); n != 4 {
		t.Fatalf("%d events after an idle pass", n)
	}
}

// TestWebhookDeliveredByTheDaemon: a real daemon runs a failing DAG and its sender POSTs each
// event once to a real receiver, signed with the secret.
func TestWebhookDeliveredByTheDaemon(t *testing.T) {
	t.Setenv("PF_NOTIFY_TEST_SECRET", "hook-secret")
	rcv := notifytest.New(t, "hook-secret")
	b := setup(t, notifyConfig(rcv.URL+"/hook"), map[string]string{"n.yaml": notifyDAG})
	d := b.daemon(t, func(c *Config) { c.API = "http://daemon.example:8080" })
	ctx := context.Background()
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	if _, err := d.Trigger(ctx, TriggerRequest{DAGID: "n", RunID: "y"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"task_retry:a": true, "task_succeeded:b": true, "task_failed:a": true, "run_failed:": true}
	got := map[string]int{}
	timeout := time.After(30 * time.Second)
	for len(got) < len(want) {
		select {
		case dl := <-rcv.Got:
			if !dl.SignedOK {
				t.Fatalf("bad signature %q on %s", dl.Signature, dl.Body)
			}
			if dl.Key != dl.Event.IdempotencyKey || dl.Key == "" {
				t.Fatalf("idempotency key %q, body %s", dl.Key, dl.Body)
			}
			k := string(dl.Event.Event) + ":" + dl.Event.TaskID
			if !want[k] {
				t.Fatalf("unexpected %s", dl.Body)
			}
			got[k]++
			if dl.Event.Event == vocab.EventRunFailed && dl.Event.URL != "http://daemon.example:8080/ui/dags/n/runs/y" {
				t.Fatalf("url %s", dl.Event.URL)
			}
		case <-timeout:
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	// Each once: the outbox says delivered, after one try each.
	b.untilPass(t, "delivered", func() bool {
		for _, n := range outbox(t, b.st) {
			if n.State != vocab.DeliveryDelivered {
				return false
			}
		}
		return true
	})
	for _, n := range outbox(t, b.st) {
		if n.Tries != 1 || n.SentAt.IsZero() {
			t.Fatalf("row %+v", n)
		}
	}
	if seen := rcv.Seen(); len(seen) != 4 {
		t.Fatalf("keys %v", seen)
	}
}
