package executor

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/pools"
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
	st    *store.Store
	log   *slog.Logger
	clock Clock
	reg   *registry
	host  string

	events  chan event
	wakeCh  chan struct{}
	stopped chan struct{} // closed when the loop has ended: late attempt ends are dropped

	// Everything below belongs to the loop goroutine.
	epoch      int64
	dv         int64
	loaded     bool
	regChanged bool
	// poolSig is the pools' capacities the DAGs were last validated under; dagsReloaded says
	// load validated them again in this pass.
	poolSig      string
	dagsReloaded bool
	reboot       bool // @reboot runs still to create (or to drop with the §4.9 warning)
	runs         map[int64]*liveRun
	entries      map[int64]*liveEntry // waiting and admitted entries of the runs in memory
	foreign      []*liveEntry         // other owners' waiting entries
	others       []store.Run          // other owners' open runs, for counting (§9)
	running      map[int64]*attempt
	pending      []event
	pools        map[string]store.Pool
	dagStates    map[string]store.DAGState
	scheds       map[*dag.DAG]*schedule
	lastRenew    time.Time
	minLease     time.Time            // earliest lease expiry among claims seen in the last pass
	snapBuf      []pools.Entry        // reused across passes
	paths        pathCache            // where PATH lookups found commands
	dropped      map[string]time.Time // cron fires dropped while the store was unavailable (§4.9)
	wakeAt       time.Time            // when the loop passes on its own next; zero = recompute
	renewFail    bool
	attemptsWG   sync.WaitGroup
	// rules assigns the pool of a task that declares none (§6); nil = {default: 1}.
	rules func(run *liveRun, ti *liveTI, try int) (pool string, slots int, rule string)

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

	testPK   int64
	testMu   sync.Mutex
	testRun  store.Run
	testDone bool
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
	}
	l.host, _ = os.Hostname()
	l.reg = newRegistry(cfg.DAGsDir, cfg.GoDAGs, l.loadOptions)
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
	for {
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
		timer := l.clock.After(l.wakeAt.Sub(now))
		poll := time.NewTimer(l.cfg.PollEvery)
		var backoff <-chan time.Time
		if hold := time.Until(l.retryAt); hold > 0 {
			// After a failed pass, nothing passes before the back-off ends; events wait.
			backoff = time.After(hold)
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
		case <-backoff:
		}
		poll.Stop()
		if time.Until(l.retryAt) > 0 {
			continue
		}
		l.coalesce()
		if err := l.passOnce(ctx); err != nil {
			return err
		}
	}
}

// passOnce runs a pass and handles its failure; the error it returns ends the loop (another
// process took this daemon's id).
func (l *loop) passOnce(ctx context.Context) error {
	defer func() { l.wakeAt = time.Time{} }() // recomputed from the state this pass left
	err := l.pass(ctx)
	switch {
	case err == nil:
		l.failures, l.retryAt = 0, time.Time{}
		if !l.loaded {
			// The pass put entries of its own back in the queue: the next one, reading memory
			// again, admits them.
			l.wake()
		}
	case errors.Is(err, errSuperseded):
		l.log.Error("another process took this daemon's id; stopping", "err", err)
		for _, a := range l.running {
			a.kill("lease lost")
		}
		l.shutdown()
		return err
	default:
		l.failPass(err)
	}
	return nil
}

// slowEvery is how often the DAG folder and the owners' liveness are looked at.
const slowEvery = time.Second

// slowChecks reports whether a DAG file changed or the owners' liveness changed so that a dead
// owner's work needs handling; either needs a pass.
func (l *loop) slowChecks(ctx context.Context) bool {
	if l.reg.reload(false) {
		l.regChanged = true
		l.scheds = map[*dag.DAG]*schedule{}
		return true
	}
	if l.ownersChanged(ctx) {
		l.ownersDirty = true
		return true
	}
	return false
}

// maxBackoff caps the wait after failed passes (it doubles from PollEvery).
const maxBackoff = 5 * time.Second

// warnEvery bounds how often the same warning text is logged.
const warnEvery = time.Minute

// warn logs msg unless the same text was logged in the last minute.
func (l *loop) warn(msg string, args ...any) {
	key := msg
	for _, a := range args {
		if err, ok := a.(error); ok {
			key += "\x00" + err.Error()
		}
	}
	now := time.Now()
	if last, ok := l.warned[key]; ok && now.Sub(last) < warnEvery {
		return
	}
	if len(l.warned) > 1000 {
		for k, t := range l.warned {
			if now.Sub(t) >= warnEvery {
				delete(l.warned, k)
			}
		}
	}
	l.warned[key] = now
	l.log.Warn(msg, args...)
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

// outsideChange reports whether another process committed to the store.
func (l *loop) outsideChange(ctx context.Context) bool {
	v, err := l.st.DataVersion(ctx)
	if err != nil {
		return true // let the pass report the store's state
	}
	return v != l.dv
}

// ownersChanged reads the owner rows outside any transaction and reports whether their
// liveness differs from the view memory was built under, or a dead owner waits to be handled.
func (l *loop) ownersChanged(ctx context.Context) bool {
	if l.view == nil {
		return true
	}
	owners, err := l.st.ListOwners(ctx)
	if err != nil {
		return false
	}
	v := newOwnerView(owners, l.cfg.DaemonID, l.clock.Now(), l.host, l.localAlive)
	return v.sig != l.view.sig || l.takeoverReady(v)
}

// takeoverReady reports whether some dead owner's end can be handled now: its reap is not
// requested yet, or it is done.
func (l *loop) takeoverReady(v *ownerView) bool {
	for _, t := range planTakeovers(v, l.cfg.DaemonID, l.serve(), l.host, l.reaped) {
		if !t.reap || l.reaping[t.owner.ID] < t.owner.Epoch {
			return true
		}
	}
	return false
}

// failPass handles a pass whose transaction did not commit: memory is rebuilt from the store on
// the next pass; completions stay pending and are rewritten then; callers waiting on a trigger or
// a command hear the error.
func (l *loop) failPass(err error) {
	l.loaded = false
	if errors.Is(err, context.Canceled) {
		return
	}
	l.failures++
	backoff := l.cfg.PollEvery << min(l.failures-1, 10)
	if backoff > maxBackoff || backoff <= 0 {
		backoff = maxBackoff
	}
	l.retryAt = time.Now().Add(backoff)
	l.warn("pass failed; will retry", "err", err, "retry_in", backoff.String())
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
			// A command read from the store is read again with memory; kept, it would be
			// applied twice.
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
			if a.stopReason() == "" {
				l.log.Warn("lease could not be renewed; killing the attempt", keyEntry, id)
			}
			a.kill("lease lost")
		}
	}
}

// pass is one decision: apply events, advance runs, admit, and commit once.
func (l *loop) pass(ctx context.Context) error {
	now := l.clock.Now()
	// A pass that began finishes (within the store's bound) even when Stop cancels ctx.
	tx, err := l.st.Begin(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	committed := false
	epoch := l.epoch
	defer func() {
		if !committed {
			tx.Rollback()
			if l.epoch != epoch { // a renewal under a new epoch that did not commit
				l.epoch = epoch
				setInProcess(l.st.Path(), l.cfg.DaemonID, epoch)
			}
		}
	}()
	dv, err := tx.DataVersion()
	if err != nil {
		return err
	}
	l.notePending()
	if dv != l.dv {
		l.ownersDirty = true // memory is read again: under the owners' liveness as of now
	}
	p := &passState{now: now}
	// Renew first: a daemon that can pass is alive, and its own claims must not look expired
	// to the expiry check below.
	if now.Sub(l.lastRenew) >= l.cfg.RenewEvery {
		if err := l.renew(tx, now); err != nil {
			return err
		}
		p.renewed = true
	}
	ownersChanged, err := l.checkOwners(tx, p)
	if err != nil {
		return err
	}
	reloaded := l.regChanged
	if !l.loaded || dv != l.dv || l.regChanged || ownersChanged {
		if err := l.load(tx, now); err != nil {
			return err
		}
	}
	reloaded, l.dagsReloaded = reloaded || l.dagsReloaded, false
	l.dv = dv
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
	if err := l.retireRemoved(tx, p); err != nil {
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

// notePending takes what concerns owners from the pending events: a confirmed reap, and
// commands or triggers (which may be about a dead owner's work) make the pass check owners.
func (l *loop) notePending() {
	kept := l.pending[:0]
	for _, ev := range l.pending {
		switch ev := ev.(type) {
		case *evReaped:
			if ev.ok && l.reaped[ev.owner] < ev.epoch {
				l.reaped[ev.owner] = ev.epoch
			}
			if !ev.ok && l.reaping[ev.owner] == ev.epoch {
				delete(l.reaping, ev.owner) // try again at the next check
			}
			l.ownersDirty = true
			continue
		case *evCommand, *evTrigger:
			l.ownersDirty = true
		}
		kept = append(kept, ev)
	}
	l.pending = kept
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
	reaps    []reapJob
	rebooted bool // the @reboot fires were created in this pass
}

func (l *loop) afterCommit(p *passState) {
	if p.rebooted {
		l.reboot = false // consumed only with the commit that created the runs
	}
	for _, job := range p.reaps {
		if l.reaping[job.owner] < job.epoch {
			l.reaping[job.owner] = job.epoch
			go l.reap(job)
		}
	}
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
	if l.cfg.Notify != nil {
		l.cfg.Notify(Notice{Kind: NoticePass, At: p.now})
	}
	if len(p.ended) > 0 {
		l.wake() // a queued run (max_active_runs, forbid, catch-up) may start now
	}
}
