package executor

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/internal/testwait"
	"github.com/poolflow/poolflow/vocab"
)

// TestRefusalNamesTheRefusingPool: a job needing {a: 1, b: 1} fires while b's backlog is full
// (§4.6). The warning, the rejected attempt's reason and the notice (the rejections metric)
// name b, the pool that refused it, not a, the first pool it needs.
func TestRefusalNamesTheRefusingPool(t *testing.T) {
	t.Parallel()
	b := setup(t, "pools:\n  a: 5\n  b: {slots: 1, max_queued: 1}\n", map[string]string{
		"waits.yaml": "dag_id: waits\ntasks:\n  - {id: w, pool_requirements: {b: 1}, bash: echo w}\n",
		"j.yaml":     "schedule: '@every 1m'\npool_requirements: {a: 1, b: 1}\nbash: echo j\n",
	})
	setPaused(t, b, "waits", true) // its entry waits in b and fills b's backlog
	logs := &testwait.Log{}
	clock := NewFakeClock(t0)
	d := b.daemon(t, func(c *Config) {
		c.Clock = clock
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	if _, err := d.Trigger(context.Background(), TriggerRequest{DAGID: "waits", RunID: "r"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute) // the job fires
	n := b.waitNotice(t, func(n Notice) bool { return n.Kind == NoticeRejected })
	const msg = "pool b: backlog full (max_queued 1)"
	if n.DAGID != "j" || n.Pool != "b" || n.Reason != msg {
		t.Errorf("notice %+v, want pool b and reason %q", n, msg)
	}
	if want := "Job j could not enter pool b: " + msg; !strings.Contains(logs.String(), want) {
		t.Errorf("no warning %q in\n%s", want, logs.String())
	}
	runs := b.runs(t, "j")
	if len(runs) != 1 {
		t.Fatalf("%d runs of j", len(runs))
	}
	if ti := b.tis(t, runs[0].PK)["j"]; ti.ReasonCode != vocab.ReasonRejected || ti.Reason != msg {
		t.Errorf("task instance reason %s %q", ti.ReasonCode, ti.Reason)
	}
}
