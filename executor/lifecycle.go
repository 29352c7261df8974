package executor

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/poolflow/poolflow/store"
)

// start loads the DAGs, syncs the configured pools, registers the daemon under a new fencing
// epoch and recovers what its previous life left: it kills those process groups and puts their
// entries back in the queue at once with the same try number (§4.8).
func (l *loop) start(ctx context.Context) error {
	if err := l.compileRules(); err != nil {
		return err
	}
	l.reg.ensure()
	l.regChanged, l.regGen = true, l.reg.generation()
	l.reboot = true
	now := l.clock.Now()
	var old []store.Claim
	err := l.st.WithTx(ctx, func(tx *store.Tx) error {
		if err := l.syncPools(tx, now); err != nil { // syncpools.go: a dags test only adds missing pools
			return err
		}
		epoch, err := tx.RegisterDaemon(l.cfg.DaemonID, os.Getpid(), now)
		if err != nil {
			return err
		}
		l.epoch = epoch
		claims, err := tx.Claims()
		if err != nil {
			return err
		}
		for _, c := range claims {
			if c.Daemon == l.cfg.DaemonID && c.Epoch < epoch {
				old = append(old, c)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Kill before releasing, so an entry never runs twice at once.
	groups := map[int]bool{}
	for _, c := range old {
		if c.PGID > 0 {
			groups[c.PGID] = true
		}
	}
	for pgid := range findOrphans(l.cfg.DaemonID, l.epoch, l.st.Path()) {
		groups[pgid] = true
	}
	for pgid := range groups {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	waitGone(groups, 5*time.Second)
	if len(old) > 0 {
		err = l.st.WithTx(ctx, func(tx *store.Tx) error {
			seen := map[int64]bool{}
			for _, c := range old {
				if seen[c.Entry] {
					continue
				}
				seen[c.Entry] = true
				if err := tx.RequeueEntry(c.Entry); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		l.log.Info("recovered claims of a previous life", "claims", len(old), "process_groups", len(groups))
	}
	l.lastRenew = now
	return nil
}

// findOrphans finds process groups started by an earlier epoch of this daemon on this store,
// whose ids may not have reached the store before a crash, by the variables every attempt
// carries.
func findOrphans(daemonID string, epoch int64, storePath string) map[int]bool {
	out := map[int]bool{}
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	wantID := []byte("\x00" + envDaemonID + "=" + daemonID + "\x00")
	wantStore := []byte("\x00" + envStore + "=" + storePath + "\x00")
	cur := []byte("\x00" + envEpoch + "=" + strconv.FormatInt(epoch, 10) + "\x00")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		env := append(append([]byte{0}, b...), 0)
		if !bytes.Contains(env, wantID) || !bytes.Contains(env, wantStore) || bytes.Contains(env, cur) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil || pid == os.Getpid() {
			continue
		}
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid != syscall.Getpgrp() {
			out[pgid] = true
		}
	}
	return out
}

// waitGone waits until the killed groups have no live member, up to limit.
func waitGone(groups map[int]bool, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for pgid := range groups {
		for time.Now().Before(deadline) {
			if err := syscall.Kill(-pgid, 0); err != nil {
				break
			}
			time.Sleep(10 * time.Millisecond) // polling the kernel: nothing to wait on
		}
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// shutdown stops admitting, SIGTERMs every running attempt, waits up to the shutdown grace,
// SIGKILLs what is left, and puts the stopped attempts' entries back in the queue with the same
// try number; attempts that ended on their own in the meantime are recorded as usual (§4.8).
func (l *loop) shutdown() {
	for _, a := range l.running {
		a.terminate("shutdown")
	}
	done := make(chan struct{})
	go func() {
		l.attemptsWG.Wait()
		close(done)
	}()
	grace := time.NewTimer(l.cfg.ShutdownGrace)
	defer grace.Stop()
	for waiting := true; waiting; {
		select {
		case ev := <-l.events:
			l.pending = append(l.pending, ev)
		case <-done:
			waiting = false
		case <-grace.C:
			for _, a := range l.running {
				a.kill("shutdown")
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
	ctx, cancel := context.WithTimeout(context.Background(), store.OpTimeout)
	defer cancel()
	if err := l.st.WithTx(ctx, func(tx *store.Tx) error {
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
		if err := l.endRuns(tx, p); err != nil {
			return err
		}
		return flushTIs(tx, p)
	}); err != nil {
		l.log.Warn("shutdown: could not record the last completions; they replay on restart", "err", err)
	}
}

// nextWake is the earliest moment the loop must pass again on its own: a retry, a queue
// deadline, a starvation threshold, an approval timeout, a cron fire, a lease renewal or expiry.
func (l *loop) nextWake(now time.Time) time.Time {
	wake := now.Add(time.Hour)
	at := func(t time.Time) {
		if !t.IsZero() && t.Before(wake) {
			wake = t
		}
	}
	at(l.lastRenew.Add(l.cfg.RenewEvery))
	at(l.minLease)
	at(l.nextFire())
	for _, run := range l.runs {
		for ti := range run.timers {
			at(clockWake(ti))
		}
	}
	// Starvation thresholds matter only in finite backfill pools that promote.
	starving := map[string]time.Duration{}
	for _, sp := range l.pools {
		if sp.StarvationAfter > 0 && sp.Ordering == "backfill" && sp.Slots >= 0 {
			starving[sp.Name] = sp.StarvationAfter
		}
	}
	for _, le := range l.entries {
		if le.State != "waiting" {
			continue
		}
		at(le.Deadline)
		if len(starving) == 0 {
			continue
		}
		for _, n := range le.Needs {
			if after, ok := starving[n.Pool]; ok {
				if t := le.Due.Add(after); t.After(now) {
					at(t.Add(time.Millisecond))
				}
			}
		}
	}
	if wake.Before(now) {
		return now
	}
	return wake
}
