package executor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestFireDueDuringAPassIsArmed: a cron fire that comes due while a pass runs (after the pass
// read the clock, before the loop computed its next wake-up) is still woken for. The pass here
// is the one that applies a DAG folder change (a broken file dropped in), the kind that runs at
// any moment rather than right after a fire; the fake clock crosses the fire inside it. The
// wake-up took the fire, due by then, for one the pass had seen and declined (a catch-up fire
// waiting for its open run), armed only the lease renewal, and the schedule stood still until
// it: in the probes, 8.8 s of an @every 2s schedule whose fires in between never ran.
func TestFireDueDuringAPassIsArmed(t *testing.T) {
	t.Parallel()
	b := setup(t, "", map[string]string{"tick.yaml": "schedule: '@every 2s'\nbash: 'true'\n"})
	clock := NewFakeClock(t0)
	b.clock = clock
	crossed := make(chan struct{})
	var once sync.Once
	d := b.daemon(t, func(c *Config) {
		c.Clock = clock
		notify := c.Notify
		c.Notify = func(n Notice) {
			notify(n)
			// On the loop goroutine, after the pass that stored the broken file's import error
			// committed and before the loop computes its wake-up: the fire at t0+2s comes due.
			if n.Kind != NoticePass {
				return
			}
			if errs, err := b.st.ImportErrors(context.Background()); err == nil && len(errs) > 0 {
				once.Do(func() {
					clock.Set(t0.Add(2500 * time.Millisecond))
					close(crossed)
				})
			}
		}
	})
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	// The first pass starts the schedule from t0: its next fire is t0+2s.
	b.waitNotice(t, func(n Notice) bool { return n.Kind == NoticePass })
	clock.Set(t0.Add(1900 * time.Millisecond))
	if err := os.WriteFile(filepath.Join(b.dagsDir, "broken.yaml"), []byte("tasks: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-crossed:
	case <-time.After(30 * time.Second):
		t.Fatal("no pass applied the broken file")
	}
	// Nothing moves the clock again: the loop must pass for the fire on its own.
	n, ok := b.noticeWithin(5*time.Second, func(n Notice) bool { return n.Kind == NoticeAdmitted && n.DAGID == "tick" })
	if !ok {
		t.Fatal("the fire at t0+2s, due since the reload's pass, did not run: its wake-up was not armed")
	}
	runs := b.runs(t, "tick")
	if len(runs) != 1 || runs[0].RunID != n.RunID || !runs[0].LogicalDate.Equal(t0.Add(2*time.Second)) || !strings.HasPrefix(runs[0].RunID, "scheduled__") {
		t.Fatalf("runs %+v, want the fire at t0+2s", runs)
	}
}
