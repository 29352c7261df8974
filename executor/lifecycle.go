package executor

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
)

// start loads the DAGs, syncs the configured pools, registers this owner under a new fencing
// epoch (refused while a live process holds the id), starts the watchdog that ties the attempts'
// processes to this process's life, and recovers what its previous life left: it kills those
// process groups and puts their entries back in the queue at once with the same try number (§4.8).
func (l *loop) start(ctx context.Context) error {
	if err := l.compileRules(); err != nil {
		return err
	}
	l.reg.ensure()
	l.regChanged, l.regGen = true, l.reg.generation()
	l.reboot = true
	now := l.clock.Now()
	var old []store.Claim
	err := l.st.WithTx(ctx, func(tx store.Tx) error {
		if err := l.syncPools(tx, now); err != nil { // syncpools.go: a dags test only adds missing pools
			return err
		}
		if err := l.register(tx, now, false); err != nil {
			return err
		}
		var err error
		old, err = tx.ClaimsOf(l.cfg.DaemonID, l.epoch-1)
		return err
	})
	if err != nil {
		return err
	}
	setInProcess(l.st.Path(), l.cfg.DaemonID, l.epoch)
	becomeSubreaper()
	if l.wd, err = startWatchdog(l.cfg.DaemonID, l.epoch, l.st.Path(), l.log.Warn); err != nil {
		l.log.Warn("no watchdog: attempts would outlive a crash of this daemon", "err", err)
	}
	// Kill before releasing, so an entry never runs twice at once.
	groups := tagged(l.cfg.DaemonID, l.st.Path(), func(e int64) bool { return e < l.epoch })
	for _, c := range old {
		if c.PGID > 0 && ownedGroup(c.PGID, l.cfg.DaemonID, l.st.Path()) {
			groups[c.PGID] = true
		}
	}
	if !killGroups(groups, 10*time.Second) {
		l.log.Warn("processes of a previous life survive SIGKILL; their claims are released anyway", "process_groups", len(groups))
	}
	if len(old) > 0 {
		err = l.st.WithTx(ctx, func(tx store.Tx) error {
			_, err := tx.ReleaseOwnerClaims(l.cfg.DaemonID, l.epoch-1)
			return err
		})
		if err != nil {
			l.stopWatchdog()
			return err
		}
		l.log.Info("recovered claims of a previous life", "claims", len(old), "process_groups", len(groups))
	}
	l.lastRenew = now
	return nil
}

// stopWatchdog ends the watchdog and forgets this owner in the process.
func (l *loop) stopWatchdog() {
	setInProcess(l.st.Path(), l.cfg.DaemonID, 0)
	l.wd.close()
	l.wd = nil
}

func orDefault[S ~string](s, def S) S {
	if s == "" {
		return def
	}
	return s
}

// abandonAfter is how long shutdown waits after SIGKILL before it abandons what has not ended:
// a killed process ends in milliseconds, and a Go task had the whole grace to see its
// cancellation.
const abandonAfter = time.Second

// shutdown stops admitting, SIGTERMs every running attempt, waits up to the shutdown grace,
// SIGKILLs what is left, and puts the stopped attempts' entries back in the queue with the same
// try number; attempts that ended on their own in the meantime are recorded as usual (§4.8).
// It is bounded: a Go task that ignores its cancellation is abandoned (its entry replays) a
// second after the SIGKILL. Last, the owner's lease is released and the
// watchdog ends.
func (l *loop) shutdown() {
	defer l.stopWatchdog()
	for _, a := range l.running {
		a.terminate("shutdown")
	}
	ended := map[int64]bool{}
	for _, ev := range l.pending {
		if f, ok := ev.(*evFinished); ok {
			ended[f.entry] = true
		}
	}
	grace := time.NewTimer(l.cfg.ShutdownGrace)
	defer grace.Stop()
	var abandon <-chan time.Time
	for !allEnded(l.running, ended) {
		select {
		case ev := <-l.events:
			l.pending = append(l.pending, ev)
			if f, ok := ev.(*evFinished); ok {
				ended[f.entry] = true
			}
		case <-grace.C:
			for _, a := range l.running {
				a.kill("shutdown")
			}
			abandon = time.After(abandonAfter)
		case <-abandon:
			for id, a := range l.running {
				if ended[id] {
					continue
				}
				ended[id] = true
				if a.task.Kind != dag.KindGo {
					// Its processes survive SIGKILL: the claims stay held until another daemon
					// confirms them gone.
					l.log.Warn("shutdown: an attempt's processes do not end; leaving its claims held",
						keyDAG, a.dagID, keyRun, a.runID, keyTask, a.task.ID, keyTry, a.try)
					continue
				}
				l.log.Warn("shutdown: a Go task ignores its cancellation; abandoning it (its entry replays)",
					keyDAG, a.dagID, keyRun, a.runID, keyTask, a.task.ID, keyTry, a.try)
				l.pending = append(l.pending, &evFinished{entry: id, shutdown: true, a: a, end: l.clock.Now()})
			}
		}
	}
	l.drainEvents()
	kept := l.pending[:0]
	for _, ev := range l.pending {
		switch ev.(type) {
		case *evFinished, *evStarted:
			kept = append(kept, ev)
		}
	}
	l.pending = kept
	// Orphans of the attempts (setsid'ed descendants) end with the daemon.
	for i := 0; i < 50 && sweepOnce(l.ownAttempt, true); i++ {
		time.Sleep(2 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), store.OpTimeout)
	defer cancel()
	if err := l.st.WithTx(ctx, func(tx store.Tx) error {
		if !l.loaded {
			if err := l.load(tx, l.clock.Now()); err != nil {
				return err
			}
		}
		p := &passState{now: l.clock.Now()}
		for _, ev := range l.pending {
			if err := l.apply(tx, p, ev); err != nil {
				return err
			}
		}
		if err := tx.SetPGIDs(p.pgids, l.cfg.DaemonID, l.epoch); err != nil {
			return err
		}
		if err := l.endRuns(tx, p); err != nil {
			return err
		}
		if err := flushPass(tx, p); err != nil {
			return err
		}
		if err := l.interruptTest(tx, p); err != nil {
			return err
		}
		return l.release(tx, p.now)
	}); err != nil {
		l.log.Warn("shutdown: could not record the last completions; they replay on restart", "err", err)
	}
}

func allEnded(running map[int64]*attempt, ended map[int64]bool) bool {
	for id := range running {
		if !ended[id] {
			return false
		}
	}
	return true
}

// interruptTest ends an interrupted dags test run: nobody will run it on, so it fails at once
// ("test process gone") instead of when its lease would have run out.
func (l *loop) interruptTest(tx store.Tx, p *passState) error {
	if l.cfg.Test == nil || l.testPK == 0 || l.isTestDone() {
		return nil
	}
	run := l.runs[l.testPK]
	if run == nil {
		return nil
	}
	err := tx.FailRun(&run.Run, "test process gone", p.now)
	if errors.Is(err, store.ErrConflict) {
		return nil // an attempt is still admitted: others handle it once the lease runs out
	}
	if err == nil {
		l.testMu.Lock()
		l.testRun, l.testDone = run.Run, true
		l.testMu.Unlock()
	}
	return err
}

// ownAttempt matches the processes of this daemon's attempts, by their environment tags.
func (l *loop) ownAttempt(pid int, _ procStat) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	env := append(append([]byte{0}, b...), 0)
	return bytes.Contains(env, []byte("\x00"+envDaemonID+"="+l.cfg.DaemonID+"\x00")) &&
		bytes.Contains(env, []byte("\x00"+envStore+"="+l.st.Path()+"\x00"))
}

// nextWake is the earliest moment the loop must pass again on its own: a retry, a queue
// deadline, a starvation threshold, an approval timeout, a cron fire, a lease renewal or expiry.
// Its cost follows the runs' clock-bound tasks and the cron schedules, not the waiting entries.
func (l *loop) nextWake(now time.Time) time.Time {
	wake := now.Add(time.Hour)
	at := func(t time.Time) {
		if !t.IsZero() && t.Before(wake) {
			wake = t
		}
	}
	at(l.lastRenew.Add(l.cfg.RenewEvery))
	at(l.minLease)
	if l.view != nil {
		at(l.view.nextExpiry) // another owner's lease ends: its work may need handling
	}
	at(l.nextFire(now))
	for _, run := range l.runs {
		for ti := range run.timers {
			at(clockWake(ti))
		}
	}
	// Queue deadlines, starvation thresholds and sensors' not-before times come from the
	// admission queue's indexes by time: a wake-up never walks the waiting entries.
	if l.queue != nil {
		at(l.queue.NextWake(now))
	}
	if wake.Before(now) {
		return now
	}
	return wake
}
