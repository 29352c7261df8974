package executor

import (
	"fmt"
	"strings"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
)

// admit runs the admission decision over the whole queue and applies it in the pass's
// transaction: expired entries fail their attempt, admitted ones debit every pool they need,
// and every waiting entry gets its reason (§4.3–§4.6). Occupancy is re-read from the claim rows
// inside this transaction, so several daemons never exceed a capacity.
func (l *loop) admit(tx store.Tx, p *passState) error {
	claims, err := tx.Claims()
	if err != nil {
		return err
	}
	claims, err = l.expireLeases(tx, p, claims)
	if err != nil {
		return err
	}
	snap := &pools.Snapshot{Pools: map[string]pools.Pool{}, Holders: map[string][]pools.Holder{}}
	for _, sp := range l.pools {
		snap.Pools[sp.Name] = pools.Pool{Name: sp.Name, Slots: sp.Slots, Ordering: pools.Ordering(sp.Ordering),
			StarvationAfter: sp.StarvationAfter}
	}
	for _, c := range claims {
		if c.Pool == pools.GlobalPool && c.Daemon != l.cfg.DaemonID {
			continue // max_running limits each daemon on its own (§9)
		}
		snap.Holders[c.Pool] = append(snap.Holders[c.Pool], pools.Holder{Entry: c.Entry, Label: c.Label, Slots: c.Slots})
	}
	snap.Entries = l.snapBuf[:0]
	// _global and _dag/<dag>/<run> are the same for every entry of a run; only task limits differ.
	declared := map[*liveRun]bool{}
	for _, le := range l.entries {
		if le.State != "waiting" || le.NotBefore.After(p.now) || le.ti == nil || le.ti.task == nil {
			continue
		}
		block := pools.NotBlocked
		switch {
		case le.away:
			block = pools.BlockNodeAway
		case le.run.RunType != "test" && l.dagStates[le.run.DAGID].Paused:
			block = pools.BlockPaused
		}
		snap.Entries = append(snap.Entries, le.admission(block))
		if !declared[le.run] {
			addImplicit(snap, le.Needs)
			declared[le.run] = true
		} else {
			addTaskLimits(snap, le.Needs)
		}
	}
	for _, fe := range l.foreign {
		if !fe.NotBefore.After(p.now) {
			// A live owner's entry keeps its room for it; a dead owner's holds none in
			// backfill pools and blocks strict ones as their head (§9).
			block := pools.BlockNotMine
			if fe.away {
				block = pools.BlockNodeAway
			}
			snap.Entries = append(snap.Entries, fe.admission(block))
			addImplicit(snap, fe.Needs)
		}
	}
	l.snapBuf = snap.Entries
	if len(snap.Entries) == 0 {
		return nil
	}
	dec := pools.Admit(snap, p.now)
	for _, id := range dec.Expired {
		le := l.entries[id]
		if le == nil {
			continue
		}
		reason := fmt.Sprintf("expired: queue_timeout %s passed while waiting", le.ti.task.QueueTimeout)
		l.notify(p, Notice{Kind: NoticeExpired, DAGID: le.run.DAGID, RunID: le.run.RunID, TaskID: le.TaskID,
			Try: le.TryNumber, Reason: reason, Pool: firstPool(le)})
		if err := l.endWaiting(tx, p, le, store.EntryExpired, reason); err != nil {
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
		if err := tx.Admit(&debit, l.cfg.DaemonID, l.epoch, p.now, lease); err != nil {
			return err
		}
		le.State, le.ReasonCode, le.Reason = "admitted", "", ""
		ti := le.ti
		ti.State, ti.TryNumber = string(dag.StateRunning), le.TryNumber
		// start_date is taken when the process starts, after this commit (§3.1); a reschedule
		// sensor keeps its first poke's.
		if le.pokes == 0 {
			ti.StartDate = timeZero
		}
		ti.EndDate, ti.Reason = timeZero, ""
		l.touch(p, ti)
		p.admitted = append(p.admitted, le)
		l.notify(p, Notice{Kind: NoticeAdmitted, DAGID: le.run.DAGID, RunID: le.run.RunID, TaskID: le.TaskID,
			Try: le.TryNumber, Duration: p.now.Sub(le.CreatedAt), Pool: firstPool(le)})
	}
	if err := l.finishDrains(tx); err != nil {
		return err
	}
	changed := map[[2]string][]int64{}
	for id, r := range dec.Reasons() {
		le := l.entries[id]
		if le == nil {
			continue
		}
		if r.Kind == pools.ReasonOverCapacity && !l.drainFits(r.Pool, r.Need) {
			if err := l.endWaiting(tx, p, le, store.EntryRejected, "rejected: "+r.String()); err != nil {
				return err
			}
			continue
		}
		if le.reason != nil && sameReason(*le.reason, r) {
			continue // words unchanged: skip formatting them again
		}
		le.reason = &r
		code, text := string(r.Kind), r.String()
		if r.Kind == pools.ReasonNodeAway && l.view != nil {
			text = l.view.awayText(le.run.Owner)
		}
		if code == le.ReasonCode && text == le.Reason {
			continue
		}
		le.ReasonCode, le.Reason = code, text
		key := [2]string{code, text}
		changed[key] = append(changed[key], id)
	}
	// Many entries share their words (a full limit, the same head): one statement per reason.
	for key, ids := range changed {
		if err := tx.SetReasons(ids, key[0], key[1]); err != nil {
			return err
		}
	}
	return nil
}

// addImplicit declares the implicit pools an entry needs, with the capacity stored on its rows.
func addImplicit(snap *pools.Snapshot, needs []store.Requirement) {
	for _, n := range needs {
		if !n.Implicit {
			continue
		}
		if _, ok := snap.Pools[n.Pool]; !ok {
			snap.Pools[n.Pool] = pools.Pool{Name: n.Pool, Slots: n.Capacity, Ordering: pools.Backfill, Implicit: true}
		}
	}
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

// addTaskLimits declares an entry's _task/… limits.
func addTaskLimits(snap *pools.Snapshot, needs []store.Requirement) {
	for _, n := range needs {
		if n.Implicit && strings.HasPrefix(n.Pool, pools.TaskPrefix) {
			if _, ok := snap.Pools[n.Pool]; !ok {
				snap.Pools[n.Pool] = pools.Pool{Name: n.Pool, Slots: n.Capacity, Ordering: pools.Backfill, Implicit: true}
			}
		}
	}
}

// sameReason reports whether two reasons read the same.
func sameReason(a, b pools.Reason) bool {
	if a.Kind != b.Kind || a.Pool != b.Pool || a.Need != b.Need || a.Free != b.Free || a.Capacity != b.Capacity ||
		a.Used != b.Used || a.Behind != b.Behind || a.BehindLabel != b.BehindLabel || len(a.Holders) != len(b.Holders) {
		return false
	}
	for i := range a.Holders {
		if a.Holders[i] != b.Holders[i] {
			return false
		}
	}
	return true
}
