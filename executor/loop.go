package executor

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/executor/decide"
	"github.com/poolflow/poolflow/executor/runner"
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/notify"
	"github.com/poolflow/poolflow/retention"
	"github.com/poolflow/poolflow/store"
)

// Log attribute keys, fixed in one place.
const (
	keyDAG   = "dag_id"
	keyRun   = "run_id"
	keyTask  = "task_id"
	keyTry   = "try_number"
	keyEntry = "queue_id"
)

// event is what wakes the loop: *attempt.Started, *attempt.Ended (from the runner),
// *decide.Trigger, *decide.Command (from the API), *evReaped (a dead owner's processes are
// gone).
type event = any

// loop is the scheduler loop, the daemon's only writer of state: it waits for events, and
// passes — reads what memory needs under the writers' lock, has the decider make the plan,
// writes it (package apply), commits, then starts and stops attempts and answers callers.
type loop struct {
	cfg   *Config
	st    store.Store
	log   *slog.Logger
	clock Clock
	reg   *registry
	host  string
	// pruner deletes history past its age (retention.Pruner), off the loop: its batches are
	// write transactions of their own.
	pruner *retention.Pruner
	// sender delivers the notifications outbox (§13), off the loop: a pass that put events in
	// it wakes it.
	sender *notify.Sender

	events  chan event
	wakeCh  chan struct{}
	stopped chan struct{} // closed when the loop has ended: late attempt ends are dropped
	turned  atomic.Int64  // unix nanoseconds of the loop's last turn, for liveness (probe.go)

	// Everything below belongs to the loop goroutine.
	mem    *state.State
	dec    *decide.Decider
	runner *runner.Runner
	epoch  int64

	pending []event
	// regChanged: the registry validated the DAGs again (regGen is the generation the loop
	// took); memory is loaded again and open runs follow the new definitions.
	regChanged bool
	regGen     uint64
	seenDV     int64 // the data_version whose stored pools the registry was last offered

	lastRenew time.Time
	renewFail bool
	wakeAt    time.Time // when the loop passes on its own next; zero = recompute

	// Owners (§9): whether a look at the owners is due, and the dead owners on this host whose
	// processes are being killed or confirmed gone.
	ownersDirty bool
	reaping     map[string]int64
	reaped      map[string]int64
	tookOver    map[string]int64 // per dead owner, the epoch whose end this daemon handled

	// A failed pass backs off (doubling up to maxBackoff); warnings repeat at most once a
	// minute per distinct text.
	failures int
	retryAt  time.Time
	warned   map[string]time.Time
	lastSlow time.Time // the last look at the DAG folder and the owners

	// stopping: the shutdown's last transaction, which takes over nobody.
	stopping bool
	// harness: passes are stepped by a test (Harness), which starts no attempt.
	harness bool

	testMu   sync.Mutex
	testRun  store.Run
	testDone bool
}

func newLoop(cfg *Config) (*loop, error) {
	l := &loop{
		cfg:      cfg,
		st:       cfg.Store,
		log:      cfg.Logger,
		clock:    cfg.Clock,
		events:   make(chan event, 1024),
		wakeCh:   make(chan struct{}, 1),
		stopped:  make(chan struct{}),
		reaping:  map[string]int64{},
		reaped:   map[string]int64{},
		tookOver: map[string]int64{},
		warned:   map[string]time.Time{},
	}
	l.host, _ = os.Hostname()
	l.reg = newRegistry(cfg.DAGsDir, cfg.GoDAGs, cfg.Store, cfg.Settings, cfg.Logger)
	l.runner = runner.New(runner.Config{StateDir: cfg.StateDir, DaemonID: cfg.DaemonID, StorePath: cfg.Store.Path(),
		KillGrace: cfg.KillGrace, Clock: cfg.Clock, Logger: cfg.Logger, Post: l.post})
	l.mem = state.New(cfg.DaemonID, cfg.Test == nil)
	l.pruner = &retention.Pruner{Cleaner: retention.Cleaner{Store: cfg.Store, StateDir: cfg.StateDir, Logger: cfg.Logger},
		Retention: func() config.Retention {
			eff, _ := l.reg.effective()
			return eff.Settings.Retention
		},
		Now: cfg.Clock.Now, Every: cfg.PruneEvery}
	l.sender = notify.NewSender(notify.SenderConfig{Store: cfg.Store, DaemonID: cfg.DaemonID, Logger: cfg.Logger,
		Now: cfg.Clock.Now, Options: cfg.NotifyOptions, Poll: cfg.NotifyPoll, Explain: explainWait(cfg.Store, cfg.Clock.Now),
		Settled: cfg.NotifySettled,
		Config: func() *config.Config {
			eff, _ := l.reg.effective()
			return eff.Settings
		},
		BaseURL: func() string {
			eff, _ := l.reg.effective()
			if u := eff.Settings.BaseURL; u != "" {
				return u
			}
			if cfg.API != "" {
				return cfg.API
			}
			return "http://127.0.0.1:8080"
		}})
	// A test run's id ends with a random suffix, fixed before any pass needs it.
	l.dec = decide.New(decide.Config{DaemonID: cfg.DaemonID, Host: l.host, Lease: cfg.Lease, Test: cfg.Test,
		TestSuffix: fmt.Sprintf("_%06x", rand.IntN(1<<24)), Notices: cfg.Notify != nil, MapWindow: cfg.MapWindow},
		l.mem, cfg.Settings, nil, 0)
	return l, nil
}

func (l *loop) send(ctx context.Context, ev event) error {
	select {
	case l.events <- ev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// post hands an event to the loop from another goroutine; after the loop ended it is dropped.
func (l *loop) post(ev event) {
	select {
	case l.events <- ev:
	case <-l.stopped:
	}
}

// serve reports whether this is a serve daemon (not a dags test process).
func (l *loop) serve() bool { return l.cfg.Test == nil }

func (l *loop) wake() {
	select {
	case l.wakeCh <- struct{}{}:
	default:
	}
}

func (l *loop) testResult() (store.Run, bool) {
	l.testMu.Lock()
	defer l.testMu.Unlock()
	return l.testRun, l.testDone
}

// run is the loop goroutine: wait for an event, a timer or an outside change, then pass.
func (l *loop) run(ctx context.Context) error {
	defer close(l.stopped)
	l.lastSlow = time.Now()
	l.wake() // the first pass (the load, a test run's creation) does not wait for a poll tick
	for {
		l.turned.Store(time.Now().UnixNano())
		if l.cfg.Test != nil && l.isTestDone() {
			l.shutdown()
			return nil
		}
		if time.Since(l.lastSlow) >= slowEvery && time.Until(l.retryAt) <= 0 {
			// Checks too slow for every poll, made on time even while passes follow each other.
			l.lastSlow = time.Now()
			if l.slowChecks(ctx) {
				l.coalesce()
				if err := l.passOnce(ctx); err != nil {
					return err
				}
				continue
			}
		}
		now := l.clock.Now()
		if l.wakeAt.IsZero() {
			l.wakeAt = l.nextWake(now)
		}
		poll := time.NewTimer(l.cfg.PollEvery)
		var timer, backoff <-chan time.Time
		if hold := time.Until(l.retryAt); hold > 0 {
			// After a failed pass, nothing passes before the back-off ends; events wait. So does
			// the wake-up: a retry or a fire already due would wake the loop again at once.
			backoff = time.After(hold)
		} else {
			timer = l.clock.After(l.wakeAt.Sub(now))
		}
		select {
		case <-ctx.Done():
			poll.Stop()
			l.shutdown()
			return nil
		case ev := <-l.events:
			l.pending = append(l.pending, ev)
			l.drainEvents()
			if onlyStarts(l.pending) || backoff != nil {
				// A start changes no decision: it is written with the next pass, at the latest
				// at the next poll tick, so a burst of starts does not cost a commit each.
				poll.Stop()
				continue
			}
		case <-l.wakeCh:
			l.ownersDirty = true
		case <-timer:
		case <-poll.C:
			if !l.outsideChange(ctx) && len(l.pending) == 0 {
				continue
			}
		case <-l.st.Changed(): // another handle committed (PostgreSQL's NOTIFY; nil on SQLite)
			if !l.outsideChange(ctx) && len(l.pending) == 0 {
				poll.Stop()
				continue
			}
		case <-backoff:
		}
		poll.Stop()
		if time.Until(l.retryAt) > 0 {
			continue
		}
		l.outsideChange(ctx) // woken by an event or a writer: take its stored pool changes first
		l.coalesce()
		if err := l.passOnce(ctx); err != nil {
			return err
		}
	}
}

// coalesceWindow is how long a pass waits for more attempts to finish before it commits, as
// PostgreSQL's commit_delay does: a commit (an fsync) then covers several completions.
const coalesceWindow = 400 * time.Microsecond

// coalesce drains pending events and, while other attempts are still running and the window
// lasts, waits for more completions to join this pass.
func (l *loop) coalesce() {
	l.drainEvents()
	if len(l.mem.Running) <= 1 {
		return
	}
	deadline := time.NewTimer(coalesceWindow)
	defer deadline.Stop()
	for finished(l.pending) < len(l.mem.Running) {
		select {
		case ev := <-l.events:
			l.pending = append(l.pending, ev)
		case <-deadline.C:
			return
		}
	}
}

func finished(evs []event) int {
	n := 0
	for _, ev := range evs {
		if _, ok := ev.(*attempt.Ended); ok {
			n++
		}
	}
	return n
}

func onlyStarts(evs []event) bool {
	for _, ev := range evs {
		if _, ok := ev.(*attempt.Started); !ok {
			return false
		}
	}
	return true
}

func (l *loop) isTestDone() bool {
	_, done := l.testResult()
	return done
}

// drainEvents takes every event already waiting, so one pass (one commit) covers them all.
func (l *loop) drainEvents() {
	for {
		select {
		case ev := <-l.events:
			l.pending = append(l.pending, ev)
		default:
			return
		}
	}
}
