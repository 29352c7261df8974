package executor

import (
	"context"
	"errors"
	"time"

	"github.com/poolflow/poolflow/executor/decide"
	"github.com/poolflow/poolflow/executor/runner"
	"github.com/poolflow/poolflow/owners"
	"github.com/poolflow/poolflow/store"
)

// Between passes: what makes the loop pass again (outside commits, DAG files, owners' liveness)
// and what a failed pass does (back-off, rate-limited warnings, lease loss).

// passOnce runs a pass and handles its failure; the error it returns ends the loop (another
// process took this daemon's id).
func (l *loop) passOnce(ctx context.Context) error {
	defer func() { l.wakeAt = time.Time{} }() // recomputed from the state this pass left
	_, err := l.pass(ctx)
	switch {
	case err == nil:
		l.failures, l.retryAt = 0, time.Time{}
		if !l.mem.Loaded {
			// The pass put entries of its own back in the queue: the next one, reading memory
			// again, admits them.
			l.wake()
		}
	case isStale(err):
		// Memory was behind the store: read it again and pass at once, with every event.
		l.log.Warn("memory was behind the store; reading it again", "err", err)
		l.mem.Invalidate()
		l.wake()
	case errors.Is(err, errSuperseded):
		l.log.Error("another process took this daemon's id; stopping", "err", err)
		for id := range l.mem.Running {
			l.runner.Kill(id, runner.StopLeaseLost)
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
	if g := l.reg.generation(); g != l.regGen {
		// The registry's watcher parsed the DAG folder again, off this goroutine.
		l.takeDAGs(g)
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

// warn logs msg unless the same text was logged in the last minute; then it is logged at debug
// level only (a repeated failed pass can be followed there).
func (l *loop) warn(msg string, args ...any) {
	key := msg
	for _, a := range args {
		if err, ok := a.(error); ok {
			key += "\x00" + err.Error()
		}
	}
	now := time.Now()
	if last, ok := l.warned[key]; ok && now.Sub(last) < warnEvery {
		l.log.Debug(msg, args...)
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

// outsideChange reports whether another process committed to the store; a commit may have
// changed a stored pool, so the registry re-validates the DAGs against it before the pass.
func (l *loop) outsideChange(ctx context.Context) bool {
	v, err := l.st.DataVersion(ctx)
	if err != nil {
		return true // let the pass report the store's state
	}
	if v != l.mem.DV {
		l.syncStored(ctx, v)
	}
	return v != l.mem.DV
}

// ownersChanged reads the owner rows outside any transaction and reports whether their
// liveness differs from the view memory was built under, or a dead owner waits to be handled.
func (l *loop) ownersChanged(ctx context.Context) bool {
	if l.mem.View == nil {
		return true
	}
	rows, err := l.st.ListOwners(ctx)
	if err != nil {
		return false
	}
	v := owners.NewView(rows, l.cfg.DaemonID, l.clock.Now(), l.host, l.localAlive)
	return v.Sig != l.mem.View.Sig || l.takeoverReady(v)
}

// takeoverReady reports whether some dead owner's end can be handled now: its reap is not
// requested yet, or it is done.
func (l *loop) takeoverReady(v *owners.View) bool {
	for _, t := range owners.PlanTakeovers(v, l.cfg.DaemonID, l.serve(), l.host, l.reaped) {
		if t.Reap && l.reaping[t.Owner.ID] < t.Owner.Epoch || !t.Reap && l.tookOver[t.Owner.ID] < t.Owner.Epoch {
			return true
		}
	}
	return false
}

// failPass handles a pass whose transaction did not commit: memory is rebuilt from the store on
// the next pass; completions stay pending and are rewritten then; callers waiting on a trigger or
// a command hear the error.
func (l *loop) failPass(err error) {
	l.mem.Invalidate()
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
		case *decide.Trigger:
			if ev.Reply != nil {
				ev.Reply <- decide.TriggerReply{Err: err}
			}
		case *decide.Command:
			if ev.Reply != nil {
				ev.Reply <- err
			}
			// A command read from the store is read again with memory; kept, it would be
			// applied twice.
		default:
			kept = append(kept, ev)
		}
	}
	l.pending = kept
	now := l.clock.Now()
	if errors.Is(err, store.ErrUnavailable) {
		for _, w := range l.dec.Unavailable(now, l.pending) {
			l.log.Warn(w)
		}
	}
	if now.Sub(l.lastRenew) > l.cfg.Lease {
		// The leases lapsed without renewal: another daemon may admit these entries again, so
		// their processes must stop (§4.8).
		for id := range l.mem.Running {
			if l.runner.Stopping(id) == "" {
				l.log.Warn("lease could not be renewed; killing the attempt", keyEntry, id)
			}
			l.runner.Kill(id, runner.StopLeaseLost)
		}
	}
}
