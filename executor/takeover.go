package executor

import (
	"context"
	"time"

	"github.com/poolflow/poolflow/executor/decide"
	"github.com/poolflow/poolflow/executor/runner"
	"github.com/poolflow/poolflow/owners"
)

// evReaped says the processes of a dead owner on this host are confirmed gone (or not: ok
// false, the next check tries again).
type evReaped struct {
	owner string
	epoch int64
	ok    bool
}

// notePending takes what concerns owners from the pending events: a confirmed reap, and
// commands or triggers (which may be about a dead owner's work) make the pass look at the
// owners.
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
		case *decide.Command, *decide.Trigger:
			l.ownersDirty = true
		}
		kept = append(kept, ev)
	}
	l.pending = kept
}

// reap kills a dead owner's processes on this host — its attempt cgroups, the process groups on
// its claims and every process carrying its tags, under an epoch up to the dead one — and
// reports back once they are gone. It runs outside the loop: killing waits for processes.
func (l *loop) reap(job decide.Reap) {
	ok := true
	// The owner may have come back (a restart under a new epoch) since the pass saw it dead.
	if o, err := l.st.GetOwner(context.Background(), job.Owner); err == nil &&
		o.Epoch == job.Epoch && owners.Alive(o, l.clock.Now(), l.host, l.localAlive) {
		ok = false
	} else {
		var cgroups int
		cgroups, ok = runner.KillCgroups(job.Owner, l.st.Path(), func(e int64) bool { return e <= job.Epoch }, 10*time.Second)
		if cgroups > 0 {
			l.log.Info("killed the attempt cgroups of a dead owner", "owner", job.Owner, "cgroups", cgroups, "empty", ok)
		}
		groups := runner.Tagged(job.Owner, l.st.Path(), func(e int64) bool { return e <= job.Epoch })
		for _, pgid := range job.PGIDs {
			if runner.OwnedGroup(pgid, job.Owner, l.st.Path()) {
				groups[pgid] = true
			}
		}
		if len(groups) > 0 {
			l.log.Info("killing the processes of a dead owner before releasing its claims", "owner", job.Owner,
				"process_groups", len(groups))
			ok = runner.KillGroups(groups, 10*time.Second) && ok
		}
	}
	l.post(&evReaped{owner: job.Owner, epoch: job.Epoch, ok: ok})
}
