package notify_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/notify"
	"github.com/poolflow/poolflow/notify/notifytest"
	"github.com/poolflow/poolflow/vocab"
)

func notifierOf(t *testing.T, yaml, name string) notify.Notifier {
	t.Helper()
	cfg, err := config.Parse("p.yaml", []byte("notifiers:\n"+yaml))
	if err != nil {
		t.Fatal(err)
	}
	nc, _ := cfg.Notifier(name)
	n, err := notify.New(*nc, notify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSlackMessage: a Slack incoming webhook gets a readable message with the event's facts
// and its link.
func TestSlackMessage(t *testing.T) {
	rcv := notifytest.New(t, "")
	t.Setenv("PF_SLACK_URL", rcv.URL+"/services/T0/B0/XYZ")
	n := notifierOf(t, "  chat: {type: slack, url_env: PF_SLACK_URL}\n", "chat")
	ev := sample
	ev.URL = "http://ui/ui/dags/etl/runs/r1/tasks/load"
	if err := n.Send(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	d := <-rcv.Got
	for _, want := range []string{":red_circle: *etl.load failed (try 2)*", "reason: exit status 1", "run: r1",
		"<http://ui/ui/dags/etl/runs/r1/tasks/load|open in poolflow>"} {
		if !strings.Contains(d.Slack, want) {
			t.Errorf("message lacks %q:\n%s", want, d.Slack)
		}
	}
	// A queue wait says how long, for which pool and why, in words.
	qw := notify.Event{Event: vocab.EventQueueWait, DAGID: "nightly", DAGRunID: "r2", TaskID: "load_orders",
		Reason: "waits for pool warehouse: 4 of 4 slots held by export_a, export_b; 3rd in line",
		Wait:   &notify.Wait{Seconds: 35 * 60, Pool: "warehouse"}}
	if got := notify.SlackText(qw); !strings.Contains(got, "*nightly.load_orders has waited 35 min for admission*") ||
		!strings.Contains(got, "4 of 4 slots held by export_a, export_b; 3rd in line") {
		t.Fatalf("queue wait text:\n%s", got)
	}
}

// TestCommandNotifier: argv runs without a shell, gets the event as JSON on stdin; a failing
// command's exit and output are the error; one past its timeout is killed.
func TestCommandNotifier(t *testing.T) {
	out := filepath.Join(t.TempDir(), "event.json")
	n := notifierOf(t, "  page: {type: command, command: [tee, "+out+"]}\n", "page")
	if err := n.Send(context.Background(), sample); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var ev notify.Event
	if err := json.Unmarshal(b, &ev); err != nil || ev.Event != vocab.EventTaskFailed || ev.TaskID != "load" {
		t.Fatalf("stdin %s (%v)", b, err)
	}
	// Arguments are never split or expanded: a ';' is an argument of ls.
	bad := notifierOf(t, "  page: {type: command, command: [ls, '/nonexistent; touch "+out+".pwned']}\n", "page")
	err = bad.Send(context.Background(), sample)
	if err == nil || !strings.Contains(err.Error(), "exit status") || !strings.Contains(err.Error(), "No such file") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(out + ".pwned"); err == nil {
		t.Fatal("a shell ran the argument")
	}
	slow := notifierOf(t, "  page: {type: command, command: [sleep, '30'], timeout: 100ms}\n", "page")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := slow.Send(ctx, sample); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("err = %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("a command past its timeout ran %v", took)
	}
}
