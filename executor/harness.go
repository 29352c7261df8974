package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/executor/decide"
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/retention"
	"github.com/poolflow/poolflow/store"
)

// Harness steps a daemon's passes by hand, for tests: there is no loop goroutine and nothing
// runs the attempts. Each Pass is one pass of the loop — read, decide, write, commit — at the
// clock's time (inject a FakeClock and move it), with the events given; it returns the plan,
// and the daemon's memory is State. The attempts a plan starts are not run: the test ends them
// with End. So a test of the scheduler's rules walks a run pass by pass over a real store,
// with nothing to wait for.
type Harness struct {
	l *loop
	// began is when each attempt a plan started began: the time of that pass.
	began map[int64]time.Time
}

// NewHarness builds a daemon as New does and starts it (registers its owner, syncs the pools,
// loads the DAGs) without its loop, its watchdog or its runner.
func NewHarness(ctx context.Context, cfg Config) (*Harness, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	l, err := newLoop(&cfg)
	if err != nil {
		return nil, err
	}
	l.harness = true
	if err := l.start(ctx); err != nil {
		return nil, err
	}
	return &Harness{l: l, began: map[int64]time.Time{}}, nil
}

// Pass runs one pass with these events (and those a failed pass kept). A pass that fails is
// handled as the loop handles it (memory loaded again at the next, callers told) and its error
// returned.
func (h *Harness) Pass(events ...any) (*decide.Plan, error) {
	l := h.l
	l.pending = append(l.pending, events...)
	if g := l.reg.generation(); g != l.regGen {
		l.takeDAGs(g)
	}
	p, err := l.pass(context.Background())
	if err != nil {
		l.failPass(err)
		l.retryAt = time.Time{} // the test decides when to pass again
		return nil, err
	}
	for _, s := range p.Starts {
		h.began[s.Entry] = p.Now
	}
	return p, nil
}

// Passes runs passes until one plans no takeover (a takeover is a pass of its own) and returns
// the last plan.
func (h *Harness) Passes(events ...any) (*decide.Plan, error) {
	p, err := h.Pass(events...)
	for err == nil && p.Again {
		p, err = h.Pass()
	}
	return p, err
}

// maxSettle bounds Settle: a daemon that wants to pass again at once after this many passes
// is stuck in a loop, which is what a test should report.
const maxSettle = 100

// Settle runs a pass with these events, then passes again for as long as the loop would pass
// again at once without a new event or a move of the clock: a takeover planned, a run ended
// (a queued run may start), a pass that asks for another, memory to read again, or something
// due by the clock's time. It returns every plan, in order; none of their attempts run.
func (h *Harness) Settle(events ...any) ([]*decide.Plan, error) {
	var plans []*decide.Plan
	for range maxSettle {
		p, err := h.Pass(events...)
		if err != nil {
			return plans, err
		}
		events = nil
		plans = append(plans, p)
		now := h.l.clock.Now()
		if !p.Again && !p.Wake && len(p.Ended) == 0 && h.l.mem.Loaded && h.Wake().After(now) {
			return plans, nil
		}
	}
	return plans, fmt.Errorf("harness: still passing at once after %d passes", maxSettle)
}

// Reload makes the registry look at the DAG folder and poolflow.yaml now, as its watcher does
// when a file notification comes (a daemon that the harness steps has no watcher), and
// reports whether what is loaded or the configuration changed. The next Pass takes it.
func (h *Harness) Reload() bool { return h.l.reg.refresh(&refreshReq{}) }

// ReloadConfig re-reads poolflow.yaml now, as Daemon.Reload does on SIGHUP, and answers as it
// does; the next Pass applies it.
func (h *Harness) ReloadConfig(ctx context.Context) error { return h.l.reload(ctx) }

// Prune runs one cycle of the daemon's retention (poolflow.yaml's retention:) at the clock's
// time, as its pruner does every minute off the loop; walk makes it walk the logs folder too
// (the pruner does hourly).
func (h *Harness) Prune(walk bool) (retention.Result, error) {
	return h.l.pruner.Cycle(context.Background(), walk)
}

// State is the daemon's memory after the last pass.
func (h *Harness) State() *state.State { return h.l.mem }

// ConfigStatus, Settings and DAGs answer as the Daemon's methods of the same names.
func (h *Harness) ConfigStatus() ConfigStatus { return h.l.reg.configStatus() }

// Settings is the poolflow.yaml in force.
func (h *Harness) Settings() *config.Config {
	eff, _ := h.l.reg.effective()
	return eff.Settings
}

// DAGs returns the loaded DAGs and the import errors of the broken files.
func (h *Harness) DAGs() ([]*dag.DAG, []*dag.ImportError) { return h.l.reg.snapshot() }

// Trigger is the event of a manual start, and where its answer comes once a pass took it.
func (h *Harness) Trigger(req TriggerRequest) (*decide.Trigger, <-chan decide.TriggerReply) {
	reply := make(chan decide.TriggerReply, 1)
	return &decide.Trigger{Req: req, Reply: reply}, reply
}

// Command is the event of an operator command, and where its outcome comes.
func (h *Harness) Command(c store.Command) (*decide.Command, <-chan error) {
	reply := make(chan error, 1)
	return &decide.Command{Cmd: c, Reply: reply}, reply
}

// End is the end of an attempt a plan started, as its runner would post it: it began at the
// time of the pass that started it and ends now; ok says it succeeded, else reason says why
// it failed. Set the fields of the event for other ends (a sensor's Reschedule, a Shutdown).
func (h *Harness) End(s *attempt.Spec, ok bool, reason string) *attempt.Ended {
	now := h.l.clock.Now()
	start, found := h.began[s.Entry]
	if !found {
		start = now
	}
	return &attempt.Ended{Entry: s.Entry, Start: start, End: now, OK: ok, Reason: reason, Spec: s}
}

// Stopped is the end of an attempt that the daemon's shutdown stopped, as its runner posts it:
// its entry goes back to the queue with the same try number.
func (h *Harness) Stopped(s *attempt.Spec) *attempt.Ended {
	e := h.End(s, false, "")
	e.Shutdown = true
	return e
}

// Shutdown is the end of a daemon's stop, once its attempts ended (Stopped, or on their own
// with End): its last transaction, which writes those ends and the runs they end and decides
// nothing else, then releases the owner lease. The harness passes no more after it.
func (h *Harness) Shutdown(ends ...*attempt.Ended) error {
	l := h.l
	for _, e := range ends {
		l.pending = append(l.pending, e)
	}
	err := l.lastPass()
	l.stopWatchdog()
	return err
}

// Wake is when the daemon would pass next on its own.
func (h *Harness) Wake() time.Time { return h.l.nextWake(h.l.clock.Now()) }

// Stop releases the daemon's owner lease and nothing else: the attempts it admitted keep their
// claims. Shutdown stops it as Daemon.Stop does.
func (h *Harness) Stop() error {
	l := h.l
	ctx, cancel := context.WithTimeout(context.Background(), store.OpTimeout)
	defer cancel()
	err := l.st.WithTx(ctx, func(tx store.Tx) error { return l.release(tx, l.clock.Now()) })
	l.stopWatchdog()
	return err
}
