package executor

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/poolflow/poolflow/executor/apply"
	"github.com/poolflow/poolflow/executor/decide"
	"github.com/poolflow/poolflow/executor/runner"
	"github.com/poolflow/poolflow/owners"
)

// pass is one pass of the loop: in one write transaction, read what memory needs (read.go),
// decide (package decide: pure), write the plan (package apply: the one writer), commit; then
// start and stop attempts, answer callers, tell observers. Nothing the plan does outside the
// store happens before the commit, so a process never runs without its claims.
func (l *loop) pass(ctx context.Context) (*decide.Plan, error) {
	now := l.clock.Now()
	l.dec.PrepareRules(l.pending, now) // user code stays out of the write transaction
	// A pass that began finishes (within the store's bound) even when Stop cancels ctx.
	tx, err := l.st.Begin(context.WithoutCancel(ctx))
	if err != nil {
		return nil, err
	}
	committed := false
	epoch := l.epoch
	defer func() {
		if !committed {
			tx.Rollback()
			if l.epoch != epoch { // a renewal under a new epoch that did not commit
				l.epoch = epoch
				owners.SetInProcess(l.st.Path(), l.cfg.DaemonID, epoch)
				l.runner.SetEpoch(epoch)
			}
		}
	}()
	// Events that came while Begin waited for the writers' lock (other daemons' passes) join
	// this pass: under contention one commit covers more of them.
	l.drainEvents()
	in, renewed, err := l.read(ctx, tx, now)
	if err != nil {
		return nil, err
	}
	plan := l.dec.Decide(in)
	out, err := apply.Plan(tx, plan)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	committed = true
	l.mem.Seq = tx.Seq() // this pass's own writes are in memory already
	if plan.Again {
		l.ownersDirty = true // the takeover's pass is done: the next one loads after it
	} else {
		l.pending = l.pending[:0]
	}
	if renewed {
		l.lastRenew = now
		l.renewFail = false
	}
	l.dec.Committed(plan, out.Drained)
	l.after(plan, out)
	return plan, nil
}

// after carries out what a committed plan does outside the store.
func (l *loop) after(p *decide.Plan, out apply.Outcome) {
	for _, job := range p.Reaps {
		if l.reaping[job.Owner] < job.Epoch {
			l.reaping[job.Owner] = job.Epoch
			go l.reap(job)
		}
	}
	for _, k := range p.Kills {
		l.runner.Kill(k.Entry, k.Reason)
	}
	if !l.harness {
		for _, s := range p.Starts {
			l.runner.Start(s)
		}
	}
	for _, r := range p.Replies {
		r()
	}
	ctx := context.Background()
	for _, lg := range p.Logs {
		l.log.Log(ctx, lg.Level, lg.Msg, lg.Args...)
	}
	if out.Orphans > 0 {
		l.log.Info("retired waiting entries of runs that have ended", "entries", out.Orphans)
	}
	for _, w := range out.Warnings {
		l.log.Warn(w)
	}
	for _, r := range p.Deleted {
		// Its logs on this host go with it; those on another host stay there (docs/design.md).
		if err := os.RemoveAll(runner.RunLogDir(l.cfg.StateDir, r.DAGID, r.RunID)); err != nil {
			l.log.Warn("the logs of a deleted run could not be removed", keyDAG, r.DAGID, keyRun, r.RunID, "err", err)
		}
	}
	for _, name := range out.Drained {
		l.log.Info("pool drained; new capacity in force", "pool", name)
	}
	var notices []decide.Notice
	for _, t := range out.Takeovers {
		o := t.Owner
		l.tookOver[o.ID] = max(l.tookOver[o.ID], o.Epoch)
		if len(t.Released) > 0 || len(t.Failed) > 0 || t.Adopted > 0 {
			l.log.Warn("owner is gone; its work is taken over", "owner", o.ID, "kind", o.Kind, "pid", o.PID, "host", o.Host,
				"last_heartbeat", o.Heartbeat, "claims_released", len(t.Released), "test_runs_failed", len(t.Failed),
				"runs_taken_over", t.Adopted)
		}
		for _, r := range t.Failed {
			notices = append(notices, decide.Notice{Kind: NoticeRunEnded, DAGID: r.DAGID, RunID: r.RunID, State: string(r.State),
				Reason: r.ReasonCode.Say(r.Reason)})
		}
	}
	if run, done := l.dec.TestResult(); done {
		l.testMu.Lock()
		l.testRun, l.testDone = run, true
		l.testMu.Unlock()
	}
	if l.cfg.Notify != nil {
		for _, n := range notices {
			l.cfg.Notify(n)
		}
		for _, n := range p.Notices {
			l.cfg.Notify(n)
		}
		l.cfg.Notify(Notice{Kind: NoticePass, At: p.Now})
	}
	if p.Told > 0 {
		l.sender.Wake()
	}
	if len(p.Ended) > 0 || p.Wake || p.Again {
		l.wake() // a queued run (max_active_runs, forbid, catch-up) may start now
	}
}

// errStale is a pass whose writes the store refused because memory was behind it.
func isStale(err error) bool { return errors.Is(err, apply.ErrStale) }

var _ = time.Now
