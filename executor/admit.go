package executor

import (
	"errors"
	"fmt"
	"time"

	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// explain sets le.reason to why one of the loop's entries waits after this pass, by the same
// pure walk the reads use (§4.5), and returns it in words; "" when it does not wait. A pass
// does not compute reasons; this is for the few answers that name one (a manual start's).
func (l *loop) explain(le *liveEntry, now time.Time) string {
	le.reason = nil
	if l.queue == nil {
		return ""
	}
	r, ok := pools.Admit(l.queue.Snapshot(), now).Reason(le.ID)
	if !ok {
		return ""
	}
	le.reason = &r
	if r.Kind == vocab.ReasonNodeAway && l.view != nil {
		return l.view.awayText(le.run.Owner)
	}
	return r.String()
}

// usedSlots sums the claims per pool.
func usedSlots(claims []store.Claim) map[string]int {
	out := map[string]int{}
	for _, c := range claims {
		out[c.Pool] += c.Slots
	}
	return out
}

// waitedOn names the pool an admitted entry waited on, for its notice (the wait-time metrics):
// the first of its pools, named ones before limits, in requirement order, that had no room for
// it at the previous pass (used then); else its first named pool. A pass computes no reasons,
// and the pool that held an entry back is the one whose room came in this pass.
func (l *loop) waitedOn(le *liveEntry, used map[string]int) string {
	for _, implicit := range []bool{false, true} {
		for _, n := range le.Needs {
			if n.Implicit != implicit {
				continue
			}
			capacity := n.Capacity
			if !n.Implicit {
				sp, ok := l.pools[n.Pool]
				if !ok {
					continue
				}
				capacity = sp.Slots
			}
			if capacity >= 0 && used[n.Pool]+n.Slots > capacity {
				return n.Pool
			}
		}
	}
	return firstPool(le)
}

// admit decides admission and applies the decision in the pass's transaction: expired
// entries fail their attempt, admitted ones debit every pool they need, entries that can never
// fit are rejected (§4.3–§4.6). Occupancy is re-read from the claim rows inside this
// transaction, so several daemons never exceed a capacity. The decision comes from the loop's
// pools.Queue (queue.go), whose cost follows what changed, not the queue's length; why the
// others wait is computed when someone reads it (Explain), not written here.
func (l *loop) admit(tx store.Tx, p *passState) error {
	claims, err := tx.Claims()
	if err != nil {
		return err
	}
	claims, err = l.expireLeases(tx, p, claims)
	if err != nil {
		return err
	}
	prev := l.used
	l.used = usedSlots(claims)
	l.syncQueue(p.now, claims)
	dec := l.queue.Pass(p.now)
	for _, id := range dec.Expired {
		le := l.entries[id]
		if le == nil || le.run.shared {
			continue // another owner's entry: its owner expires it
		}
		reason := fmt.Sprintf("queue_timeout %s passed while waiting", le.ti.task.QueueTimeout)
		l.notify(p, Notice{Kind: NoticeExpired, DAGID: le.run.DAGID, RunID: le.run.RunID, TaskID: le.TaskID,
			Try: le.TryNumber, Reason: vocab.ReasonExpired.Say(reason), Pool: firstPool(le)})
		if err := l.endWaiting(tx, p, le, vocab.EntryExpired, reason); err != nil {
			return err
		}
	}
	lease := p.now.Add(l.cfg.Lease)
	for _, id := range dec.Admitted {
		le := l.entries[id]
		if le == nil {
			continue
		}
		debit := le.Entry
		debit.Needs, _ = le.remaining() // a re-poking sensor already holds its kept claims
		if err := tx.Admit(&debit, l.cfg.DaemonID, l.epoch, p.now, lease); errors.Is(err, store.ErrEntryState) {
			// Memory said waiting, the store does not: never admitted twice. Read it again.
			l.log.Warn("entry no longer waiting; not admitted", keyEntry, id, "err", err)
			l.loaded = false
			continue
		} else if err != nil {
			return err
		}
		le.State, le.ReasonCode, le.Reason, le.holder = vocab.EntryAdmitted, "", "", l.cfg.DaemonID
		ti := le.ti
		ti.State, ti.TryNumber = vocab.TaskRunning, le.TryNumber
		// start_date is taken when the process starts, after this commit (§3.1); a reschedule
		// sensor keeps its first poke's.
		if le.pokes == 0 {
			ti.StartDate = timeZero
		}
		ti.EndDate, ti.ReasonCode, ti.Reason = timeZero, "", ""
		l.touch(p, ti)
		p.admitted = append(p.admitted, le)
		l.notify(p, Notice{Kind: NoticeAdmitted, DAGID: le.run.DAGID, RunID: le.run.RunID, TaskID: le.TaskID,
			Try: le.TryNumber, Duration: p.now.Sub(le.CreatedAt), Pool: l.waitedOn(le, prev)})
	}
	// The queue takes the decision now: the rest of the pass (a refused no-queue start's
	// reason) reads what it left. Should the transaction fail, the load after it rebuilds.
	l.queue.Apply(dec)
	if err := l.finishDrains(tx); err != nil {
		return err
	}
	for _, rj := range dec.Rejected {
		le := l.entries[rj.Entry]
		if le == nil || le.run.shared || rj.Reason.Kind != vocab.ReasonOverCapacity || l.drainFits(rj.Reason.Pool, rj.Reason.Need) {
			continue // an unknown pool may still be created; a draining pool may come to fit
		}
		if err := l.endWaiting(tx, p, le, vocab.EntryRejected, rj.Reason.String()); err != nil {
			return err
		}
	}
	return nil
}

// expireLeases releases claims whose lease lapsed and whose holder is not an owner this daemon
// knows (a claim written before owners existed): the entry goes back to the queue with its try
// number (§4.8). The claims of a known owner are released only by the takeover of that owner,
// after its processes on this host are confirmed gone (§9); this daemon's own claims were
// renewed at the start of the pass.
func (l *loop) expireLeases(tx store.Tx, p *passState, claims []store.Claim) ([]store.Claim, error) {
	expired := map[int64]bool{}
	l.minLease = timeZero
	for _, c := range claims {
		known := l.view == nil
		if !known {
			_, known = l.view.owners[c.Daemon]
		}
		if c.LeaseUntil.Before(p.now) && !known {
			expired[c.Entry] = true
		} else if c.Daemon == l.cfg.DaemonID && (l.minLease.IsZero() || c.LeaseUntil.Before(l.minLease)) {
			l.minLease = c.LeaseUntil
		}
	}
	if len(expired) == 0 {
		return claims, nil
	}
	for id := range expired {
		l.log.Warn("lease expired; entry back in the queue", keyEntry, id)
		if _, err := tx.ReleaseEntry(id); err != nil {
			return nil, err
		}
	}
	kept := claims[:0]
	for _, c := range claims {
		if !expired[c.Entry] {
			kept = append(kept, c)
		}
	}
	// Entries changed state: read them again on the next pass.
	l.loaded = false
	return kept, nil
}

// finishDrains switches draining pools whose old queue is empty to their new capacity (§4.7).
func (l *loop) finishDrains(tx store.Tx) error {
	for name, sp := range l.pools {
		if sp.TargetSlots == store.NoTarget {
			continue
		}
		done, err := tx.FinishDrain(name)
		if err != nil {
			return err
		}
		if done {
			l.log.Info("pool drained; new capacity in force", keyPool, name, "slots", sp.TargetSlots)
			sp.Slots, sp.TargetSlots = sp.TargetSlots, store.NoTarget
			l.pools[name] = sp
		}
	}
	return nil
}

// drainFits reports whether a pool is draining toward a capacity that fits need (§4.6).
func (l *loop) drainFits(pool string, need int) bool {
	sp, ok := l.pools[pool]
	return ok && sp.TargetSlots != store.NoTarget && (sp.TargetSlots == -1 || sp.TargetSlots >= need)
}
