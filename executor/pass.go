package executor

import (
	"context"
	"time"

	"github.com/poolflow/poolflow/store"
)

// pass is one decision: apply events, advance runs, admit, and commit once.
func (l *loop) pass(ctx context.Context) error {
	now := l.clock.Now()
	l.prepareRules(now) // CPU work stays out of the write transaction
	defer clear(l.ruleCache)
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
	// Events that came while Begin waited for the writers' lock (other daemons' passes) join
	// this pass: under contention one commit covers more of them.
	l.drainEvents()
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
	if err := l.catchUp(tx, now, dv, l.regChanged || ownersChanged); err != nil {
		return err
	}
	reloaded, l.dagsReloaded = reloaded || l.dagsReloaded, false
	l.dv = dv
	if err := l.applyConfig(context.WithoutCancel(ctx), tx, now); err != nil {
		return err
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
	if err := tx.SetPGIDs(p.pgids, l.cfg.DaemonID, l.epoch); err != nil {
		return err
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
	if err := flushPass(tx, p); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	committed = true
	l.seq = tx.Seq() // this pass's own writes are in memory already
	l.pending = l.pending[:0]
	if p.renewed {
		l.lastRenew = now
		l.renewFail = false
	}
	l.afterCommit(p)
	return nil
}

// catchUp makes memory current inside tx: load reads everything again on the first pass, after
// a failed one, when DAGs or owners changed (full); otherwise, when another process committed,
// refresh reads what it wrote (refresh.go), or load everything when the change is one only
// load handles.
func (l *loop) catchUp(tx store.Tx, now time.Time, dv int64, full bool) error {
	full = full || !l.loaded
	if !full && (dv != l.dv || tx.Seq() != l.seq) {
		ok, err := l.refresh(tx, now)
		if err != nil {
			return err
		}
		full = !ok
	}
	if full {
		return l.load(tx, now)
	}
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
	dirtyTIs []*liveTI        // written once, before the commit
	attempts []*store.Attempt // the attempts that ended, written with them
	pgids    map[int64]int    // the process groups of attempts that started, by entry
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
		l.forgetRun(r)
		l.log.Info("run ended", keyDAG, r.DAGID, keyRun, r.RunID, "state", r.State)
		l.notify(p, Notice{Kind: NoticeRunEnded, DAGID: r.DAGID, RunID: r.RunID, State: string(r.State), Reason: r.Reason})
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
