package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
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
	st    *store.Store
	log   *slog.Logger
	clock Clock
	reg   *registry

	events chan event
	wakeCh chan struct{}

	// Everything below belongs to the loop goroutine.
	epoch      int64
	dv         int64
	loaded     bool
	regChanged bool
	regGen     uint64 // the registry generation the loop last applied
	reboot     bool   // @reboot runs still to create
	runs       map[int64]*liveRun
	entries    map[int64]*liveEntry // this daemon's waiting and admitted entries
	foreign    []*liveEntry         // other daemons' waiting entries
	running    map[int64]*attempt
	pending    []event
	pools      map[string]store.Pool
	dagStates  map[string]store.DAGState
	scheds     map[*dag.DAG]*schedule
	lastRenew  time.Time
	minLease   time.Time            // earliest lease expiry among claims seen in the last pass
	snapBuf    []pools.Entry        // reused across passes
	paths      pathCache            // where PATH lookups found commands
	dropped    map[string]time.Time // cron fires dropped while the store was unavailable (§4.9)
	wakeAt     time.Time            // when the loop passes on its own next; zero = recompute
	renewFail  bool
	attemptsWG sync.WaitGroup
	// ruleSet assigns the pool of a task that declares none (§6); nil = {default: 1}.
	ruleSet *rules.Set
	cfgGen  uint64 // the registry's configuration generation applied (reload.go)
	seenDV  int64  // the data_version whose stored pools the registry was last offered

	testPK     int64
	testSuffix string // several dags test processes may start in the same millisecond
	// ruleCache holds pool rule assignments evaluated before a pass's transaction (rules.go).
	ruleCache map[ruleKey]assignment
	// ruleMisses counts assignments evaluated inside a transaction, for tests.
	ruleMisses int
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
		// A test run's id ends with a random suffix, fixed before any pass needs it.
		testSuffix: fmt.Sprintf("_%06x", rand.IntN(1<<24)),
	}
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
	for {
		if l.cfg.Test != nil && l.isTestDone() {
			l.shutdown()
			return nil
		}
		now := l.clock.Now()
		if l.wakeAt.IsZero() {
			l.wakeAt = l.nextWake(now)
		}
		timer := l.clock.After(l.wakeAt.Sub(now))
		poll := time.NewTimer(l.cfg.PollEvery)
		select {
		case <-ctx.Done():
			poll.Stop()
			l.shutdown()
			return nil
		case ev := <-l.events:
			l.pending = append(l.pending, ev)
			l.drainEvents()
			if onlyStarts(l.pending) {
				// A start changes no decision: it is written with the next pass, at the latest
				// at the next poll tick, so a burst of starts does not cost a commit each.
				poll.Stop()
				continue
			}
		case <-l.wakeCh:
		case <-timer:
		case <-poll.C:
			if !l.outsideChange(ctx) && len(l.pending) == 0 {
				continue
			}
		}
		poll.Stop()
		l.outsideChange(ctx) // woken by an event or a writer: take its stored pool changes first
		l.coalesce()
		if err := l.pass(ctx); err != nil {
			l.failPass(err)
		}
		l.wakeAt = time.Time{} // recomputed from the state this pass left

	}
}

// coalesceWindow is how long a pass waits for more attempts to finish before it commits, as
// PostgreSQL's commit_delay does: a commit (an fsync) then covers several completions.
const coalesceWindow = time.Millisecond

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

// outsideChange reports whether another process committed to the store or a DAG file changed.
func (l *loop) outsideChange(ctx context.Context) bool {
	v, err := l.st.DataVersion(ctx)
	if err == nil && v != l.dv {
		l.syncStored(ctx, v) // a stored pool may have changed: re-validate before this pass
	}
	if g := l.reg.generation(); g != l.regGen {
		l.regGen = g
		l.regChanged = true
		l.scheds = map[*dag.DAG]*schedule{}
		return true
	}
	if err != nil {
		return true // let the pass report the store's state
	}
	return v != l.dv
}

// failPass handles a pass whose transaction did not commit: memory is rebuilt from the store on
// the next pass; completions stay pending and are rewritten then; callers waiting on a trigger or
// a command hear the error.
func (l *loop) failPass(err error) {
	l.loaded = false
	if errors.Is(err, context.Canceled) {
		return
	}
	l.log.Warn("pass failed; will retry", "err", err)
	kept := l.pending[:0]
	for _, ev := range l.pending {
		switch ev := ev.(type) {
		case *evTrigger:
			if ev.reply != nil {
				ev.reply <- triggerReply{err: err}
			}
		case *evCommand:
			if ev.reply != nil {
				ev.reply <- err
			}
		default:
			kept = append(kept, ev)
		}
	}
	l.pending = kept
	now := l.clock.Now()
	l.unavailable(now, err)
	if now.Sub(l.lastRenew) > l.cfg.Lease {
		// The leases lapsed without renewal: another daemon may admit these entries again, so
		// their processes must stop (§4.8).
		for id, a := range l.running {
			l.log.Warn("lease could not be renewed; killing the attempt", keyEntry, id)
			a.kill("lease lost")
		}
	}
}

// pass is one decision: apply events, advance runs, admit, and commit once.
func (l *loop) pass(ctx context.Context) error {
	now := l.clock.Now()
	l.prepareRules(now) // CPU work stays out of the write transaction
	defer clear(l.ruleCache)
	tx, err := l.st.Begin(ctx)
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			tx.Rollback()
		}
	}()
	dv, err := tx.DataVersion()
	if err != nil {
		return err
	}
	reloaded := l.regChanged
	if !l.loaded || dv != l.dv || l.regChanged {
		if err := l.load(tx, now); err != nil {
			return err
		}
	}
	l.dv = dv
	if err := l.applyConfig(tx, now); err != nil {
		return err
	}
	p := &passState{now: now}
	// Renew first: a daemon that can pass is alive, and its own claims must not look expired
	// to the expiry check below.
	if now.Sub(l.lastRenew) >= l.cfg.RenewEvery {
		if err := tx.Heartbeat(l.cfg.DaemonID, l.epoch, now, now.Add(l.cfg.Lease)); err != nil {
			return err
		}
		p.renewed = true
	}
	finished := map[int64]bool{}
	for _, ev := range l.pending {
		if f, ok := ev.(*evFinished); ok {
			finished[f.entry] = true
		}
	}
	for _, ev := range l.pending {
		if s, ok := ev.(*evStarted); ok && finished[s.entry] {
			continue // its end, written below, carries its start
		}
		if err := l.apply(tx, p, ev); err != nil {
			return err
		}
	}
	if reloaded {
		if err := l.applyChanges(tx, p); err != nil {
			return err
		}
	}
	if err := l.createRuns(tx, p); err != nil {
		return err
	}
	if err := l.advanceAll(tx, p); err != nil {
		return err
	}
	if err := l.admit(tx, p); err != nil {
		return err
	}
	if err := l.settleTriggers(tx, p); err != nil {
		return err
	}
	if err := l.endRuns(tx, p); err != nil {
		return err
	}
	if err := flushTIs(tx, p); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	committed = true
	l.pending = l.pending[:0]
	if p.renewed {
		l.lastRenew = now
		l.renewFail = false
	}
	l.afterCommit(p)
	return nil
}

// passState collects what one pass decided, applied after its commit.
type passState struct {
	now      time.Time
	admitted []*liveEntry
	newRuns  []*liveRun
	started  []*liveRun // runs that went from queued to running in this pass
	replies  []func()
	ended    []*liveRun
	renewed  bool
	triggers []*pendingTrigger
	notices  []Notice
	dirtyTIs []*liveTI // written once, before the commit
}

func (l *loop) afterCommit(p *passState) {
	for _, le := range p.admitted {
		l.spawn(le)
	}
	for _, r := range p.replies {
		r()
	}
	for _, r := range p.ended {
		l.log.Info("run ended", keyDAG, r.DAGID, keyRun, r.RunID, "state", r.State)
		l.notify(p, Notice{Kind: NoticeRunEnded, DAGID: r.DAGID, RunID: r.RunID, State: r.State, Reason: r.Reason})
		if r.PK == l.testPK && l.testPK != 0 {
			l.testMu.Lock()
			l.testRun, l.testDone = r.Run, true
			l.testMu.Unlock()
		}
	}
	for _, n := range p.notices {
		l.cfg.Notify(n)
	}
	if len(p.ended) > 0 {
		l.wake() // a queued run (max_active_runs, forbid, catch-up) may start now
	}
}
