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

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/rules"
	"github.com/poolflow/poolflow/store"
)

// Log attribute keys, fixed in one place.
const (
	keyDAG   = "dag_id"
	keyRun   = "run_id"
	keyTask  = "task_id"
	keyTry   = "try_number"
	keyPool  = "pool"
	keyEntry = "queue_id"
)

type event interface{}

var timeZero time.Time

// evFinished is an attempt's end as its runner saw it.
type evFinished struct {
	entry      int64
	start, end time.Time
	ok         bool
	skip       bool // sensor soft_fail timeout
	noRetry    bool // sensor timeout: fails with no retry
	reason     string
	shutdown   bool // killed by our own shutdown: back to the queue, same try
	lost       bool // killed because its lease could not be renewed
	reschedule bool // a reschedule sensor's check is not met yet: poke again later
	a          *attempt
}

// evStarted records an attempt's process group and start time.
type evStarted struct {
	entry int64
	pgid  int
	start time.Time
}

// loop is the scheduler loop: the daemon's only writer of state.
type loop struct {
	cfg   *Config
	st    store.Store
	log   *slog.Logger
	clock Clock
	reg   *registry
	host  string

	events  chan event
	wakeCh  chan struct{}
	stopped chan struct{} // closed when the loop has ended: late attempt ends are dropped
	turned  atomic.Int64  // unix nanoseconds of the loop's last turn, for liveness (probe.go)

	// Everything below belongs to the loop goroutine.
	epoch      int64
	dv         int64
	loaded     bool
	regChanged bool
	regGen     uint64 // the registry generation the loop last applied
	// poolSig is the pools' capacities the DAGs were last validated under; dagsReloaded says
	// load validated them again in this pass.
	poolSig      string
	dagsReloaded bool
	reboot       bool // @reboot runs still to create (or to drop with the §4.9 warning)
	runs         map[int64]*liveRun
	entries      map[int64]*liveEntry // waiting and admitted entries of the runs in memory
	foreign      map[int64]*liveEntry // other owners' waiting entries (of runs not in memory)
	others       map[int64]store.Run  // other owners' open runs not in memory, for counting (§9)
	// seq is the store's change number memory is up to date with: refresh reads what was
	// stamped after it (refresh.go).
	seq       int64
	running   map[int64]*attempt
	pending   []event
	pools     map[string]store.Pool
	dagStates map[string]store.DAGState
	scheds    map[*dag.DAG]*schedule
	lastRenew time.Time
	minLease  time.Time // earliest lease expiry among claims seen in the last pass
	passedAt  time.Time // the clock of the last committed pass: the fires it saw (nextFire)
	// queue is the admission queue kept between passes (queue.go): valid until the next load,
	// with the entries changed since the last pass in qdirty and the implicit pools it has.
	queue     *pools.Queue
	qvalid    bool
	qdirty    map[int64]struct{}
	qimplicit map[string]bool
	// used is the slots held per pool at the last pass, for naming the pool an entry waited on.
	used       map[string]int
	paths      pathCache // where PATH lookups found commands
	envOnce    sync.Once // envBase: the daemon's environment, read once for every attempt
	envBase    []string
	dropped    map[string]time.Time // cron fires dropped while the store was unavailable (§4.9)
	wakeAt     time.Time            // when the loop passes on its own next; zero = recompute
	renewFail  bool
	attemptsWG sync.WaitGroup
	// ruleSet assigns the pool of a task that declares none (§6); nil = {default: 1}.
	ruleSet *rules.Set
	cfgGen  uint64 // the registry's configuration generation applied (reload.go)
	seenDV  int64  // the data_version whose stored pools the registry was last offered
	// ruleCache holds pool rule assignments evaluated before a pass's transaction (rules.go).
	ruleCache map[ruleKey]assignment
	// ruleMisses counts assignments evaluated inside a transaction, for tests.
	ruleMisses int

	// Owners (§9): the liveness view the memory was built under, whether a check is due, and
	// the dead owners on this host whose processes are being killed or confirmed gone.
	view        *ownerView
	ownersDirty bool
	reaping     map[string]int64
	reaped      map[string]int64
	wd          *watchdog

	// A failed pass backs off (doubling up to maxBackoff); warnings repeat at most once a
	// minute per distinct text.
	failures int
	retryAt  time.Time
	warned   map[string]time.Time
	lastSlow time.Time // the last look at the DAG folder and the owners

	testPK     int64
	testSuffix string // several dags test processes may start in the same millisecond
	testMu     sync.Mutex
	testRun    store.Run
	testDone   bool
}

func newLoop(cfg *Config) (*loop, error) {
	l := &loop{
		cfg:     cfg,
		st:      cfg.Store,
		log:     cfg.Logger,
		clock:   cfg.Clock,
		events:  make(chan event, 1024),
		wakeCh:  make(chan struct{}, 1),
		runs:    map[int64]*liveRun{},
		entries: map[int64]*liveEntry{},
		running: map[int64]*attempt{},
		scheds:  map[*dag.DAG]*schedule{},
		dropped: map[string]time.Time{},
		stopped: make(chan struct{}),
		reaping: map[string]int64{},
		reaped:  map[string]int64{},
		warned:  map[string]time.Time{},
		// A test run's id ends with a random suffix, fixed before any pass needs it.
		testSuffix: fmt.Sprintf("_%06x", rand.IntN(1<<24)),
	}
	l.host, _ = os.Hostname()
	l.reg = newRegistry(cfg.DAGsDir, cfg.GoDAGs, cfg.Store, cfg.Settings, cfg.Logger)
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
	if len(l.running) <= 1 {
		return
	}
	deadline := time.NewTimer(coalesceWindow)
	defer deadline.Stop()
	for finished(l.pending) < len(l.running) {
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
		if _, ok := ev.(*evFinished); ok {
			n++
		}
	}
	return n
}

func onlyStarts(evs []event) bool {
	for _, ev := range evs {
		if _, ok := ev.(*evStarted); !ok {
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
