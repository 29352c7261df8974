package executor

import (
	"time"

	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The loop keeps every waiting entry it walks in a pools.Queue between passes, so that a pass
// costs what changed and what it admits, not the length of the queue (§4.4; pools.Queue makes
// exactly the decisions of pools.Admit over the same snapshot). The queue mirrors memory:
//
//   - after every load (the first pass, a failed pass, a change of the owners' liveness) it is
//     built again from l.entries, l.foreign and l.pools;
//   - between loads, every change to one of the loop's entries or to another owner's waiting
//     entry marks it dirty (dropEntry, queueDirty, refresh), and the next pass puts it again or
//     removes it before deciding;
//   - the claims are read inside each pass's transaction and synced as holders, so another
//     daemon's admissions count at once.
//
// A pass's decision is applied to the queue by the next pass's sync, never before its commit,
// so a transaction that fails leaves nothing to undo (the load after it rebuilds anyway).

// queueDirty marks an entry whose admission view changed: the next pass puts or removes it.
func (l *loop) queueDirty(id int64) {
	if l.qdirty == nil {
		l.qdirty = map[int64]struct{}{}
	}
	l.qdirty[id] = struct{}{}
}

// dropEntry forgets one of the loop's entries (it ended, was admitted elsewhere or requeued).
func (l *loop) dropEntry(id int64) {
	delete(l.entries, id)
	l.queueDirty(id)
}

// syncEntries makes the queue's entries agree with memory.
func (l *loop) syncEntries() {
	if l.queue == nil || !l.qvalid {
		l.rebuildQueue()
	} else {
		for id := range l.qdirty {
			if le := l.entries[id]; le != nil {
				l.putEntry(le)
			} else if fe := l.foreign[id]; fe != nil {
				l.putForeign(fe)
			} else {
				l.queue.Remove(id)
			}
		}
	}
	clear(l.qdirty)
}

// syncQueue makes the queue agree with memory and with the claims read in this pass.
func (l *loop) syncQueue(now time.Time, claims []store.Claim) {
	l.syncEntries()
	for _, sp := range l.pools {
		l.queue.SetPool(namedPool(sp))
	}
	holders := make(map[string][]pools.Holder, len(l.pools))
	for _, c := range claims {
		if c.Pool == pools.GlobalPool && c.Daemon != l.cfg.DaemonID {
			continue // max_running limits each daemon on its own (§9)
		}
		holders[c.Pool] = append(holders[c.Pool], pools.Holder{Entry: c.Entry, Label: c.Label, Slots: c.Slots})
	}
	l.queue.SyncHolders(holders)
}

// rebuildQueue builds the queue again from memory.
func (l *loop) rebuildQueue() {
	l.queue, l.qvalid = pools.NewQueue(), true
	l.qimplicit = map[string]bool{}
	if n := l.cfg.Settings.MaxRunning; n > 0 {
		l.queue.SetPool(pools.Implicit(pools.GlobalPool, n))
		l.qimplicit[pools.GlobalPool] = true
	}
	for _, sp := range l.pools {
		l.queue.SetPool(namedPool(sp))
	}
	for _, le := range l.entries {
		l.putEntry(le)
	}
	for _, fe := range l.foreign {
		l.putForeign(fe)
	}
}

// putForeign puts another owner's waiting entry in the queue: a live owner's entry keeps its
// room for it; a dead owner's holds none in backfill pools and blocks strict ones as their head
// (§9).
func (l *loop) putForeign(fe *liveEntry) {
	block := pools.BlockNotMine
	if fe.away {
		block = pools.BlockNodeAway
	}
	l.declareImplicit(nil, fe.Needs)
	l.queue.Put(queueEntry(fe, block))
}

// putEntry puts one of the loop's entries in the queue as admission sees it now, or removes
// it when it does not wait (admitted, its task is gone, or a stop request on it waits for its
// owner to fail the task).
func (l *loop) putEntry(le *liveEntry) {
	if le.State != vocab.EntryWaiting || le.ti == nil || le.ti.task == nil || le.ReasonCode == vocab.ReasonStopRequested {
		l.queue.Remove(le.ID)
		return
	}
	block := pools.NotBlocked
	switch {
	case le.away:
		block = pools.BlockNodeAway
	case le.notHere:
		block = pools.BlockNotMine // a shared run's entry this daemon must not admit: its owner will
	case le.run.RunType != vocab.RunTest && l.dagStates[le.run.DAGID].Paused:
		block = pools.BlockPaused
	}
	l.declareImplicit(le.run, le.Needs)
	l.queue.Put(queueEntry(le, block))
}

// declareImplicit sets the implicit pools (§4.2) the needs name, with the capacity stored on
// their rows, the first time one is seen; run remembers them so they go when it ends.
func (l *loop) declareImplicit(run *liveRun, needs []store.Requirement) {
	for _, n := range needs {
		if !n.Implicit {
			continue
		}
		if run != nil && n.Pool != pools.GlobalPool {
			if run.implicit == nil {
				run.implicit = map[string]bool{}
			}
			run.implicit[n.Pool] = true
		}
		if !l.qimplicit[n.Pool] {
			l.qimplicit[n.Pool] = true
			l.queue.SetPool(pools.Implicit(n.Pool, n.Capacity))
		}
	}
}

// forgetRun removes the implicit pools of a run that ended from the queue.
func (l *loop) forgetRun(run *liveRun) {
	if l.queue == nil {
		return
	}
	for name := range run.implicit {
		l.queue.RemovePool(name)
		delete(l.qimplicit, name)
	}
}

// queueEntry is an entry as the queue sees it: the pools it still needs (a re-poking sensor
// already holds its kept claims), its block, and its queue time — when it joined the queue, or
// for a reschedule sensor its next poke (§4.4: starvation counts from there).
func queueEntry(le *liveEntry, block pools.Block) pools.Entry {
	pe := le.admission(block)
	pe.NotBefore = le.NotBefore
	pe.Queued = le.CreatedAt
	if le.NotBefore.After(pe.Queued) {
		pe.Queued = le.NotBefore
	}
	return pe
}

func namedPool(sp store.Pool) pools.Pool {
	return pools.Pool{Name: sp.Name, Slots: sp.Slots, Ordering: sp.Ordering,
		StarvationAfter: sp.StarvationAfter}
}
