package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/poolflow/poolflow/notify/notifytest"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// TestNotifiersCLI: notifiers list shows where each notifier sends and where its secrets come
// from, never a secret; notifiers test sends a signed sample to a real receiver and records it;
// a receiver that is down is exit 1 with the reason; an unknown name is a usage error.
func TestNotifiersCLI(t *testing.T) {
	rcv := notifytest.New(t, "cli-secret")
	t.Setenv("PF_CLI_HOOK_SECRET", "cli-secret")
	p := newProject(t, "notifiers:\n  ops: {type: webhook, url: '"+rcv.URL+"/hook', secret_env: PF_CLI_HOOK_SECRET}\n"+
		"  down: {type: webhook, url: 'http://127.0.0.1:1/x'}\n", nil)
	out, errs, code := p.run("notifiers", "list")
	if code != 0 || !strings.Contains(out, "secret: env PF_CLI_HOOK_SECRET") || !strings.Contains(out, "down") {
		t.Fatalf("list: %d %s %s", code, out, errs)
	}
	if strings.Contains(out, "cli-secret") || strings.Contains(out, "/hook") {
		t.Fatalf("list shows a secret: %s", out)
	}
	out, errs, code = p.run("notifiers", "test", "ops")
	if code != 0 || !strings.Contains(out, "notifier ops took the test notification") {
		t.Fatalf("test: %d %s %s", code, out, errs)
	}
	if d := <-rcv.Got; !d.SignedOK || d.Event.Event != vocab.EventTest {
		t.Fatalf("delivery %+v", d)
	}
	if _, errs, code = p.run("notifiers", "test", "down"); code != ExitFailed || !strings.Contains(errs, "connection refused") {
		t.Fatalf("down: %d %s", code, errs)
	}
	if _, errs, code = p.run("notifiers", "test", "nope"); code != ExitUsage || !strings.Contains(errs, "no notifier nope") {
		t.Fatalf("unknown: %d %s", code, errs)
	}
	st, err := store.Open(context.Background(), filepath.Join(p.state, "poolflow.db"), store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	list, _, err := st.ListNotifications(context.Background(), store.NotificationFilter{Event: vocab.EventTest})
	if err != nil || len(list) != 2 || list[0].State != vocab.DeliveryFailed || list[1].State != vocab.DeliveryDelivered {
		t.Fatalf("recorded %+v %v", list, err)
	}
}
