package executor

import (
	"context"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// ownerCheckEvery bounds how long a dead owner on this host goes unnoticed; a dead owner
// elsewhere is noticed when its lease ends (the loop wakes then).
const ownerCheckEvery = time.Second

// evReaped says the processes of a dead owner on this host are confirmed gone (or not: ok
// false, the next check tries again).
type evReaped struct {
	owner string
	epoch int64
	ok    bool
}

// reapJob is the kill of a dead owner's processes, run after the pass that found it dead.
type reapJob struct {
	owner string
	epoch int64
	pgids []int
}

// checkOwners reads the owner rows when a check is due, handles the end of every dead owner it
// may handle (takeover), and reports whether the view changed so memory must be rebuilt. It
// runs inside the pass's transaction, before memory is loaded.
func (l *loop) checkOwners(tx store.Tx, p *passState) (bool, error) {
	if l.view != nil && !l.ownersDirty && (l.view.nextExpiry.IsZero() || p.now.Before(l.view.nextExpiry)) {
		return false, nil
	}
	l.ownersDirty = false
	owners, err := tx.Owners()
	if err != nil {
		return false, err
	}
	view := newOwnerView(owners, l.cfg.DaemonID, p.now, l.host, l.localAlive)
	changed := false
	for _, t := range planTakeovers(view, l.cfg.DaemonID, l.serve(), l.host, l.reaped) {
		if t.reap {
			if err := l.planReap(tx, p, t.owner); err != nil {
				return false, err
			}
			continue
		}
		did, err := l.takeOver(tx, p, t)
		if err != nil {
			return false, err
		}
		changed = changed || did
	}
	if changed {
		if owners, err = tx.Owners(); err != nil {
			return false, err
		}
		view = newOwnerView(owners, l.cfg.DaemonID, p.now, l.host, l.localAlive)
	}
	changed = changed || l.view == nil || view.sig != l.view.sig
	l.view = view
	return changed, nil
}

// planReap schedules the kill of a dead owner's processes on this host, once per epoch.
func (l *loop) planReap(tx store.Tx, p *passState, o store.Owner) error {
	if l.reaping[o.ID] >= o.Epoch {
		return nil
	}
	claims, err := tx.ClaimsOf(o.ID, o.Epoch)
	if err != nil {
		return err
	}
	l.log.Info("owner is gone; confirming its processes are gone before releasing its claims", "owner", o.ID,
		"pid", o.PID, "last_heartbeat", o.Heartbeat, "claims", len(claims))
	job := reapJob{owner: o.ID, epoch: o.Epoch}
	seen := map[int]bool{}
	for _, c := range claims {
		if c.PGID > 0 && !seen[c.PGID] {
			seen[c.PGID] = true
			job.pgids = append(job.pgids, c.PGID)
		}
	}
	p.reaps = append(p.reaps, job)
	return nil
}

// reap kills a dead owner's process groups on this host — the pgids on its claims and every
// process carrying its tags under an epoch up to the dead one — and reports back once they are
// gone. It runs outside the loop: killing waits for processes.
func (l *loop) reap(job reapJob) {
	ok := true
	// The owner may have come back (a restart under a new epoch) since the pass saw it dead.
	if o, err := l.st.GetOwner(context.Background(), job.owner); err == nil &&
		o.Epoch == job.epoch && ownerAlive(o, l.clock.Now(), l.host, l.localAlive) {
		ok = false
	} else {
		groups := tagged(job.owner, l.st.Path(), func(e int64) bool { return e <= job.epoch })
		for _, pgid := range job.pgids {
			if ownedGroup(pgid, job.owner, l.st.Path()) {
				groups[pgid] = true
			}
		}
		if len(groups) > 0 {
			l.log.Info("killing the processes of a dead owner before releasing its claims", "owner", job.owner,
				"process_groups", len(groups))
			ok = killGroups(groups, 10*time.Second)
		}
	}
	l.post(&evReaped{owner: job.owner, epoch: job.epoch, ok: ok})
}

// takeOver handles the end of a dead owner whose processes are gone: its claims are released
// (their entries back in the queue with their try number, to be replayed), a dead dags test
// process's runs fail with "test process gone", and a serve daemon moves the leader-owned runs
// (scheduled, catch-up) to itself and marks the end handled. Bound work (manual runs) stays the
// owner's and waits node_unavailable until it returns. It reports whether it changed anything.
func (l *loop) takeOver(tx store.Tx, p *passState, t takeover) (bool, error) {
	o := t.owner
	released, err := tx.ReleaseOwnerClaims(o.ID, o.Epoch)
	if err != nil {
		return false, err
	}
	failed, skipped, err := tx.FailOwnerRuns(o.ID, vocab.RunTest, "test process gone", p.now)
	if err != nil {
		return false, err
	}
	adopted, settled := 0, false
	if t.adopt {
		if adopted, err = tx.AdoptRuns(o.ID, l.cfg.DaemonID, leaderOwned...); err != nil {
			return false, err
		}
	}
	if skipped == 0 && (t.adopt || o.Kind == vocab.OwnerTest) {
		settled = true
		if o.Kind == vocab.OwnerTest {
			err = tx.DeleteOwner(o.ID, o.Epoch) // a test process never comes back
		} else {
			err = tx.MarkOwnerHandled(o.ID, o.Epoch)
		}
		if err != nil {
			return false, err
		}
	}
	if len(released) > 0 || len(failed) > 0 || adopted > 0 {
		l.log.Warn("owner is gone; its work is taken over", "owner", o.ID, "kind", o.Kind, "pid", o.PID, "host", o.Host,
			"last_heartbeat", o.Heartbeat, "claims_released", len(released), "test_runs_failed", len(failed),
			"runs_taken_over", adopted)
	}
	for _, r := range failed {
		l.notify(p, Notice{Kind: NoticeRunEnded, DAGID: r.DAGID, RunID: r.RunID, State: string(r.State), Reason: r.Reason})
	}
	return settled || len(released) > 0 || len(failed) > 0 || adopted > 0, nil
}
