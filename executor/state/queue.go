package state

import (
	"time"

	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The admission queue (pools.Queue) holds every waiting entry a pass walks between passes, so
// that a pass costs what changed and what it admits, not the length of the queue (§4.4;
// pools.Queue makes exactly the decisions of pools.Admit over the same snapshot). It mirrors
// memory:
//
//   - after every load it is built again from Entries, Foreign and Pools;
//   - between loads, every change to an entry or to another owner's waiting entry marks it
//     dirty (AddEntry, DropEntry, QueueDirty, Refresh), and the next SyncQueue puts it again or
//     removes it;
//   - the claims read in each pass are synced as holders, so another daemon's admissions count
//     at once;
//   - an implicit pool (§4.2) is set the first time an entry put in the queue names it, and
//     removed once nothing in the queue needs it after a run that named it ended: several runs
//     share some (max_active_tis_per_dag's _task/<dag>/<task>), so a run's end alone says
//     nothing about whether other entries still need them.
//
// A pass's decision is applied to the queue (Queue().Apply) as soon as it is made; should the
// pass's transaction fail, memory is loaded again, the queue with it.

// Queue is the admission queue, in step with memory once SyncQueue ran.
func (s *State) Queue() *pools.Queue {
	if s.queue == nil || !s.qvalid {
		s.rebuildQueue()
		clear(s.qdirty)
	}
	return s.queue
}

// SyncEntries makes the queue's entries agree with memory.
func (s *State) SyncEntries() {
	if s.queue == nil || !s.qvalid {
		s.rebuildQueue()
	} else {
		for id := range s.qdirty {
			if le := s.Entries[id]; le != nil {
				s.putEntry(le)
			} else if fe := s.Foreign[id]; fe != nil {
				s.putForeign(fe)
			} else {
				s.queue.Remove(id)
			}
		}
		// Only now that the ended runs' entries have left the queue can it tell which of
		// their implicit pools no other entry needs.
		for name := range s.qforget {
			if s.queue.Waiting(name) == 0 {
				s.queue.RemovePool(name)
				delete(s.qimplicit, name)
			}
		}
	}
	clear(s.qdirty)
	clear(s.qforget)
}

// SyncQueue makes the queue agree with memory and with the claims held now.
func (s *State) SyncQueue() *pools.Queue {
	s.SyncEntries()
	for _, sp := range s.Pools {
		s.queue.SetPool(explain.Pool(sp))
	}
	holders := make(map[string][]pools.Holder, len(s.Pools))
	for _, c := range s.Claims() {
		if c.Pool == pools.GlobalPool && c.Daemon != s.Self {
			continue // max_running limits each daemon on its own (§9)
		}
		holders[c.Pool] = append(holders[c.Pool], pools.Holder{Entry: c.Entry, Label: c.Label, Slots: c.Slots})
	}
	s.queue.SyncHolders(holders)
	return s.queue
}

// NextWake is when the queue next needs a pass on its own (a deadline, a starvation threshold,
// a sensor's next poke); zero for never.
func (s *State) NextWake(now time.Time) time.Time {
	if s.queue == nil {
		return time.Time{}
	}
	return s.queue.NextWake(now)
}

// rebuildQueue builds the queue again from memory.
func (s *State) rebuildQueue() {
	s.queue, s.qvalid = pools.NewQueue(), true
	s.qimplicit = map[string]bool{}
	if n := s.MaxRunning; n > 0 {
		s.queue.SetPool(pools.Implicit(pools.GlobalPool, n))
		s.qimplicit[pools.GlobalPool] = true
	}
	for _, sp := range s.Pools {
		s.queue.SetPool(explain.Pool(sp))
	}
	for _, le := range s.Entries {
		s.putEntry(le)
	}
	for _, fe := range s.Foreign {
		s.putForeign(fe)
	}
}

// InvalidateQueue makes the next SyncQueue build the queue again (the blocks of many entries
// changed: a DAG paused, say).
func (s *State) InvalidateQueue() { s.qvalid = false }

// putForeign puts another owner's waiting entry in the queue: a live owner's entry keeps its
// room for it; a dead owner's holds none in backfill pools and blocks strict ones as their head
// (§9).
func (s *State) putForeign(fe *Entry) {
	block := pools.BlockNotMine
	if fe.Away {
		block = pools.BlockNodeAway
	}
	s.declareImplicit(nil, fe.Needs)
	s.queue.Put(fe.queueEntry(block))
}

// putEntry puts one of the runs' entries in the queue as admission sees it now, or removes it
// when it does not wait (admitted, its task is gone, or a stop request on it waits for its
// owner to fail the task).
func (s *State) putEntry(le *Entry) {
	if le.State != vocab.EntryWaiting || le.TI == nil || le.TI.Task == nil || isStop(le.ReasonCode) {
		s.queue.Remove(le.ID)
		return
	}
	block := pools.NotBlocked
	switch {
	case le.Away:
		block = pools.BlockNodeAway
	case le.NotHere:
		block = pools.BlockNotMine // a shared run's entry this daemon must not admit: its owner will
	case le.Run.RunType != vocab.RunTest && s.DAGStates[le.Run.DAGID].Paused:
		block = pools.BlockPaused
	}
	s.declareImplicit(le.Run, le.Needs)
	s.queue.Put(le.queueEntry(block))
}

// declareImplicit sets the implicit pools (§4.2) the needs name, with the capacity stored on
// their rows, the first time one is seen; run remembers them so that, when it ends, those no
// entry needs any more go (forgetRun).
func (s *State) declareImplicit(run *Run, needs []store.Requirement) {
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
		if !s.qimplicit[n.Pool] {
			s.qimplicit[n.Pool] = true
			s.queue.SetPool(pools.Implicit(n.Pool, n.Capacity))
		}
	}
}

// forgetRun marks the implicit pools of a run that ended: the next sync removes from the queue
// those that no entry left in it needs. Removing them at once would make every other run's
// entry that needs one (a shared per-task limit) need a pool the queue does not know, and wait
// for ever unless it happened to be put again (issue 25).
func (s *State) forgetRun(run *Run) {
	if s.queue == nil {
		return
	}
	if s.qforget == nil {
		s.qforget = map[string]struct{}{}
	}
	for name := range run.implicit {
		s.qforget[name] = struct{}{}
	}
}
