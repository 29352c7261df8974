package state

import (
	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
)

// Entry is a queue entry in memory: one of the runs' entries, or another owner's waiting one.
type Entry struct {
	store.Entry
	Run *Run // nil for another owner's entry of a run not in memory
	TI  *TI
	// Kept are the claims a reschedule sensor keeps between pokes; Pokes counts its pokes.
	Kept  []store.Requirement
	Pokes int
	// Why is why it waits, when an answer needed it (a manual start's); passes compute none.
	Why *pools.Reason
	// Away: bound to a dead owner, it waits node_unavailable and holds no room (§9).
	Away bool
	// Holder is the daemon whose claims an admitted entry holds ("" when waiting): an attempt
	// another daemon runs is stopped through the store (a stop request), not here.
	Holder string
	// NotHere: an entry of a shared run this daemon must not admit (a sensor, or a task whose
	// definition here differs from the one it was queued under); it keeps its room for its owner.
	NotHere bool
}

// Remaining is the admission view of a re-poking sensor: only the pools it still needs, with
// its kept claims.
func (le *Entry) Remaining() (needs, kept []store.Requirement) {
	if len(le.Kept) == 0 {
		return le.Needs, nil
	}
	for _, n := range le.Needs {
		held := false
		for _, k := range le.Kept {
			held = held || k.Pool == n.Pool
		}
		if !held {
			needs = append(needs, n)
		}
	}
	return needs, le.Kept
}

// FirstPool names the pool an entry waits on, for the 202 of a manual start, the no-queue
// refusal, notices and metrics: the pool of its current reason (pools.Admit gives a named
// pool's wait precedence over a limit's, and among equal kinds the first in requirement order);
// an entry with no reason yet, or one about no pool (paused, forbid), names its first named
// pool in requirement order. This is the one place that decides it.
func (le *Entry) FirstPool() string {
	if le.Why != nil && le.Why.Pool != "" {
		return le.Why.Pool
	}
	return FirstNamed(le.Needs)
}

// FirstNamed is the first named pool of needs (sorted rows: requirement order), else the first.
func FirstNamed(needs []store.Requirement) string {
	for _, n := range needs {
		if !n.Implicit {
			return n.Pool
		}
	}
	if len(needs) > 0 {
		return needs[0].Pool
	}
	return ""
}

// admission is the entry as pools.Admit sees it, with its current block and force flag.
// Another owner's entry (not_mine, node_unavailable) leaves out _global: max_running limits
// each daemon on its own (§9). It is built for each put into the queue and not kept: the queue
// holds its own copy, and at 100,000 waiting entries a second one costs 20 MB.
func (le *Entry) admission(block pools.Block) pools.Entry {
	pe := explain.Entry(&le.Entry, block)
	if needs, kept := le.Remaining(); kept != nil {
		pe.Needs, pe.Kept = toNeeds(needs), toNeeds(kept)
	}
	if block == pools.BlockNotMine || block == pools.BlockNodeAway {
		local := pe.Needs[:0]
		for _, n := range pe.Needs {
			if n.Pool != pools.GlobalPool {
				local = append(local, n)
			}
		}
		pe.Needs = local
	}
	return pe
}

// queueEntry is an entry as the queue sees it: the pools it still needs, its block, and its
// queue time — when it joined the queue, or for a reschedule sensor its next poke (§4.4:
// starvation counts from there).
func (le *Entry) queueEntry(block pools.Block) pools.Entry {
	pe := le.admission(block)
	pe.NotBefore = le.NotBefore
	pe.Queued = le.CreatedAt
	if le.NotBefore.After(pe.Queued) {
		pe.Queued = le.NotBefore
	}
	return pe
}

func toNeeds(rs []store.Requirement) []pools.Need {
	out := make([]pools.Need, len(rs))
	for i, r := range rs {
		out[i] = pools.Need{Pool: r.Pool, Slots: r.Slots}
	}
	return out
}
