package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/apply"
	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/executor/runner"
	"github.com/poolflow/poolflow/owners"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// start loads the DAGs, syncs the configured pools, registers this owner under a new fencing
// epoch (refused while a live process holds the id), starts the watchdog that ties the attempts'
// processes to this process's life, and recovers what its previous life left: it kills those
// process groups and puts their entries back in the queue at once with the same try number (§4.8).
func (l *loop) start(ctx context.Context) error {
	if err := l.compileRules(); err != nil {
		return err
	}
	l.takeDAGs(l.reg.generation())
	if t := l.cfg.Test; t != nil && l.dec.DAG(t.DAGID) == nil {
		return fmt.Errorf("%w: dag %s is not loaded", store.ErrNotFound, t.DAGID)
	}
	now := l.clock.Now()
	var old []store.Claim
	err := l.st.WithTx(ctx, func(tx store.Tx) error {
		if err := l.syncPools(tx, now); err != nil {
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
	owners.SetInProcess(l.st.Path(), l.cfg.DaemonID, l.epoch)
	if l.harness {
		l.lastRenew = now
		return nil // a test steps the passes and runs no attempt
	}
	if err := l.runner.Begin(l.epoch); err != nil {
		l.log.Warn("no watchdog: attempts would outlive a crash of this daemon", "err", err)
	}
	if l.cfg.Test == nil {
		l.log.Info(l.runner.Isolation())
	}
	// Kill before releasing, so an entry never runs twice at once: the attempt cgroups of a
	// previous life on this host, then its process groups.
	cgroups, gone := runner.KillCgroups(l.cfg.DaemonID, l.st.Path(), func(e int64) bool { return e < l.epoch }, 10*time.Second)
	if !gone {
		l.log.Warn("processes of a previous life survive cgroup.kill; their claims are released anyway", "cgroups", cgroups)
	}
	groups := runner.Tagged(l.cfg.DaemonID, l.st.Path(), func(e int64) bool { return e < l.epoch })
	for _, c := range old {
		if c.PGID > 0 && runner.OwnedGroup(c.PGID, l.cfg.DaemonID, l.st.Path()) {
			groups[c.PGID] = true
		}
	}
	if !runner.KillGroups(groups, 10*time.Second) {
		l.log.Warn("processes of a previous life survive SIGKILL; their claims are released anyway", "process_groups", len(groups))
	}
	if len(old) > 0 {
		err = l.st.WithTx(ctx, func(tx store.Tx) error {
			released, err := tx.ReleaseOwnerClaims(l.cfg.DaemonID, l.epoch-1)
			if err != nil || len(released) == 0 {
				return err
			}
			// The interrupted attempts are back in the queue with their try number (§4.8).
			params, _ := json.Marshal(map[string]any{"entries": released, "epoch": l.epoch})
			return tx.InsertEvent(&store.Event{At: now, Actor: vocab.ActorScheduler + ":" + l.cfg.DaemonID,
				Action: vocab.ActionReplay, Params: string(params), Outcome: "ok"})
		})
		if err != nil {
			l.stopWatchdog()
			return err
		}
		l.log.Info("recovered claims of a previous life", "claims", len(old), "process_groups", len(groups), "cgroups", cgroups)
	}
	l.lastRenew = now
	return nil
}

// compileRules takes the configuration the daemon starts with (§6): the DAGs are loaded and
// validated against it, and its rules compiled against the file's and the stored pools. A
// configuration with problems is refused at start (a reload with problems keeps the previous
// one instead).
func (l *loop) compileRules() error {
	l.reg.ensure()
	eff, gen := l.reg.effective()
	if err := eff.Problems(); err != nil {
		return fmt.Errorf("%w: %w", config.ErrInvalid, err)
	}
	l.cfg.Settings = eff.Settings
	l.dec.Settings, l.dec.Rules, l.dec.CfgGen = eff.Settings, eff.Rules, gen
	l.mem.MaxRunning = eff.Settings.MaxRunning
	return nil
}

// syncPools writes the file pools of the configuration the daemon starts with. A `dags test`
// process only adds the file pools the store does not have yet: the pool table belongs to the
// serve daemons, and a test run with another poolflow.yaml (or none) must not change or drop the
// pools they admit against.
func (l *loop) syncPools(tx store.Tx, now time.Time) error {
	if l.cfg.Test == nil {
		return config.SyncPools(tx, l.cfg.Settings, now)
	}
	return config.AddMissingPools(tx, l.cfg.Settings, now)
}

// stopWatchdog ends the watchdog and forgets this owner in the process.
func (l *loop) stopWatchdog() {
	owners.SetInProcess(l.st.Path(), l.cfg.DaemonID, 0)
	l.runner.Close()
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
// second after the SIGKILL. Last, the owner's lease is released and the watchdog ends.
func (l *loop) shutdown() {
	defer l.stopWatchdog()
	for id := range l.mem.Running {
		l.runner.Terminate(id, runner.StopShutdown)
	}
	ended := map[int64]bool{}
	for _, ev := range l.pending {
		if f, ok := ev.(*attempt.Ended); ok {
			ended[f.Entry] = true
		}
	}
	grace := time.NewTimer(l.cfg.ShutdownGrace)
	defer grace.Stop()
	var abandon <-chan time.Time
	for !allEnded(l.mem.Running, ended) {
		select {
		case ev := <-l.events:
			l.pending = append(l.pending, ev)
			if f, ok := ev.(*attempt.Ended); ok {
				ended[f.Entry] = true
			}
		case <-grace.C:
			for id := range l.mem.Running {
				l.runner.Kill(id, runner.StopShutdown)
			}
			abandon = time.After(abandonAfter)
		case <-abandon:
			for id := range l.mem.Running {
				if ended[id] {
					continue
				}
				ended[id] = true
				le := l.mem.Entries[id]
				if le == nil || le.TI == nil || le.TI.Task == nil || le.TI.Task.Kind != dag.KindGo {
					// Its processes survive SIGKILL: the claims stay held until another daemon
					// confirms them gone.
					l.log.Warn("shutdown: an attempt's processes do not end; leaving its claims held", keyEntry, id)
					continue
				}
				l.log.Warn("shutdown: a Go task ignores its cancellation; abandoning it (its entry replays)",
					keyDAG, le.Run.DAGID, keyRun, le.Run.RunID, keyTask, le.TaskID, keyTry, le.TryNumber)
				l.pending = append(l.pending, &attempt.Ended{Entry: id, Shutdown: true, End: l.clock.Now()})
			}
		}
	}
	l.drainEvents()
	kept := l.pending[:0]
	for _, ev := range l.pending {
		switch ev.(type) {
		case *attempt.Ended, *attempt.Started:
			kept = append(kept, ev)
		}
	}
	l.pending = kept
	// Orphans of the attempts (setsid'ed descendants) end with the daemon.
	for i := 0; i < 50 && l.runner.SweepOrphans(); i++ {
		time.Sleep(2 * time.Millisecond) // a SIGKILLed process ends on its own time; nothing to wait on
	}
	if err := l.lastPass(); err != nil {
		l.log.Warn("shutdown: could not record the last completions; they replay on restart", "err", err)
	}
}

// lastPass is the shutdown's last transaction: it writes the ends among the pending events and
// the runs they end, nothing else (no admission), fails an interrupted test run, and releases
// the owner lease.
func (l *loop) lastPass() error {
	ctx, cancel := context.WithTimeout(context.Background(), store.OpTimeout)
	defer cancel()
	l.stopping = true
	return l.st.WithTx(ctx, func(tx store.Tx) error {
		now := l.clock.Now()
		in, _, err := l.read(ctx, tx, now)
		if err != nil {
			return err
		}
		in.NoWait = true
		plan := l.dec.Decide(in)
		if _, err := apply.Plan(tx, plan); err != nil {
			return err
		}
		if run, done := l.dec.TestResult(); done {
			l.testMu.Lock()
			l.testRun, l.testDone = run, true
			l.testMu.Unlock()
		}
		if err := l.interruptTest(tx, now); err != nil {
			return err
		}
		return l.release(tx, now)
	})
}

func allEnded(running map[int64]bool, ended map[int64]bool) bool {
	for id := range running {
		if !ended[id] {
			return false
		}
	}
	return true
}

// interruptTest ends an interrupted dags test run: nobody will run it on, so it fails at once
// ("test process gone") instead of when its lease would have run out.
func (l *loop) interruptTest(tx store.Tx, now time.Time) error {
	if l.cfg.Test == nil || l.mem.TestPK == 0 || l.isTestDone() {
		return nil
	}
	run := l.mem.Runs[l.mem.TestPK]
	if run == nil {
		return nil
	}
	err := tx.FailRun(&run.Run, "test process gone", now)
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

// nextWake is the earliest moment the loop must pass again on its own: what memory waits for
// (decide.NextWake) and this daemon's lease renewal, at most an hour away.
func (l *loop) nextWake(now time.Time) time.Time {
	wake := now.Add(time.Hour)
	if t := l.lastRenew.Add(l.cfg.RenewEvery); t.Before(wake) {
		wake = t
	}
	if t := l.dec.NextWake(now); !t.IsZero() && t.Before(wake) {
		wake = t
	}
	if wake.Before(now) {
		return now
	}
	return wake
}
