package executor

import (
	"context"
	"time"

	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/executor/decide"
	"github.com/poolflow/poolflow/executor/state"
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
	return &Harness{l: l}, nil
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

// State is the daemon's memory after the last pass.
func (h *Harness) State() *state.State { return h.l.mem }

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
// pass's time and ends now; ok says it succeeded, else reason says why it failed.
func (h *Harness) End(s *attempt.Spec, ok bool, reason string) *attempt.Ended {
	now := h.l.clock.Now()
	return &attempt.Ended{Entry: s.Entry, Start: now, End: now, OK: ok, Reason: reason, Spec: s}
}

// Wake is when the daemon would pass next on its own.
func (h *Harness) Wake() time.Time { return h.l.nextWake(h.l.clock.Now()) }

// Stop releases the daemon's owner lease.
func (h *Harness) Stop() error {
	l := h.l
	ctx, cancel := context.WithTimeout(context.Background(), store.OpTimeout)
	defer cancel()
	err := l.st.WithTx(ctx, func(tx store.Tx) error { return l.release(tx, l.clock.Now()) })
	l.stopWatchdog()
	return err
}
