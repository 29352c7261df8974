package state

import (
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/owners"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// State is a daemon's memory of what it schedules. It is not safe for concurrent use: one
// pass at a time reads and changes it.
type State struct {
	Self   string // this daemon's owner id
	Serve  bool   // a serve daemon (false: a dags test process, which holds only its own run)
	TestPK int64  // a dags test process's run, once created
	// MaxRunning is this daemon's max_running: the capacity of the _global limit its own
	// admissions of shared entries count against (§9).
	MaxRunning int
	// View is the owners' liveness memory was built under; DAG finds a loaded DAG by id.
	View *owners.View
	DAG  func(id string) *dag.DAG
	// Version is the number of a loaded DAG's version (§12); 0 when not known.
	Version func(*dag.DAG) int

	Runs      map[int64]*Run      // the open runs in memory: this daemon's, dead owners' bound ones, shared ones
	Entries   map[int64]*Entry    // waiting and admitted entries of the runs in memory
	Foreign   map[int64]*Entry    // other owners' waiting entries (of runs not in memory)
	Others    map[int64]store.Run // other owners' open runs not in memory, for counting (§9)
	Pools     map[string]store.Pool
	DAGStates map[string]store.DAGState
	// Running are the entries whose attempts this daemon's runner runs.
	Running map[int64]bool

	// Loaded: memory holds what the store held at Seq (DV is the store's change version then);
	// false after a failed pass or a change only a load handles, so the next pass loads.
	Loaded  bool
	DV, Seq int64
	// PoolSig is the pools' capacities the DAGs were last validated under.
	PoolSig string
	// NextRunPK and NextEntryID are the ids the next run and entry inserted get (read under
	// the writers' lock, advanced by this daemon's own inserts).
	NextRunPK, NextEntryID int64

	claims claimSet
	// Used is the slots held per pool at the last admission, for naming the pool an entry
	// waited on.
	Used map[string]int

	queue     *pools.Queue
	qvalid    bool
	qdirty    map[int64]struct{}
	qimplicit map[string]bool
	qforget   map[string]struct{} // implicit pools of ended runs the queue may no longer need

	dirtyTIs  []*TI
	dirtyRuns []*Run
}

// New is the empty memory of owner self.
func New(self string, serve bool) *State {
	return &State{Self: self, Serve: serve, Runs: map[int64]*Run{}, Entries: map[int64]*Entry{},
		Foreign: map[int64]*Entry{}, Others: map[int64]store.Run{}, Pools: map[string]store.Pool{},
		DAGStates: map[string]store.DAGState{}, Running: map[int64]bool{}, DAG: func(string) *dag.DAG { return nil }}
}

// Touch marks a task instance to be written at the end of the pass, and lets its run account
// for a change of its state.
func (s *State) Touch(ti *TI) {
	if !ti.dirty {
		ti.dirty = true
		s.dirtyTIs = append(s.dirtyTIs, ti)
	}
	if ti.Run != nil {
		ti.Run.note(ti)
	}
}

// TouchRun marks a run's row to be written at the end of the pass.
func (s *State) TouchRun(r *Run) {
	if !r.dirty {
		r.dirty = true
		s.dirtyRuns = append(s.dirtyRuns, r)
	}
}

// Flush returns the rows the pass changed, runs then task instances, once each, and forgets
// them: they are written once, at its end.
func (s *State) Flush() ([]*store.Run, []*store.TaskInstance) {
	runs := make([]*store.Run, len(s.dirtyRuns))
	for i, r := range s.dirtyRuns {
		r.dirty = false
		runs[i] = &r.Run
	}
	tis := make([]*store.TaskInstance, len(s.dirtyTIs))
	for i, ti := range s.dirtyTIs {
		ti.dirty = false
		tis[i] = &ti.TaskInstance
	}
	s.dirtyRuns, s.dirtyTIs = s.dirtyRuns[:0], s.dirtyTIs[:0]
	return runs, tis
}

// AddRun puts a run in memory.
func (s *State) AddRun(r *Run) { s.Runs[r.PK] = r }

// RemoveRun forgets a run that ended (or is no longer this daemon's to hold), with the
// implicit pools only it used.
func (s *State) RemoveRun(r *Run) {
	delete(s.Runs, r.PK)
	s.forgetRun(r)
}

// AddEntry puts one of the runs' entries in memory and the queue.
func (s *State) AddEntry(le *Entry) {
	s.Entries[le.ID] = le
	if le.TI != nil {
		le.TI.Entry = le
	}
	s.QueueDirty(le.ID)
}

// DropEntry forgets one of the runs' entries (it ended, was admitted elsewhere or requeued),
// and detaches it from its task instance.
func (s *State) DropEntry(le *Entry) {
	delete(s.Entries, le.ID)
	if ti := le.TI; ti != nil && ti.Entry == le {
		ti.Entry = nil
		if ti.State == vocab.TaskNone && ti.Run != nil && ti.Run.Layout != nil && ti.Idx >= 0 {
			// A cleared task whose stopped attempt just ended: it may be ready now.
			ti.Run.Push(ti.Run.Layout.Pos[ti.Idx])
		}
	}
	s.QueueDirty(le.ID)
}

// QueueDirty marks an entry whose admission view changed: the next SyncQueue puts or removes it.
func (s *State) QueueDirty(id int64) {
	if s.qdirty == nil {
		s.qdirty = map[int64]struct{}{}
	}
	s.qdirty[id] = struct{}{}
}

// Invalidate makes the next pass load memory again: a pass failed, or the store holds what
// only a load reads.
func (s *State) Invalidate() { s.Loaded = false }

// Fate is what this daemon does with an open run: owners.FateOf, narrowed by what it can run
// (a dags test process holds only its own run; a shared run needs its DAG loaded here, and is
// not a job).
func (s *State) Fate(r store.Run) owners.Fate {
	if !s.Serve {
		if r.PK == s.TestPK && s.TestPK != 0 {
			return owners.Mine
		}
		return owners.Foreign
	}
	f := owners.FateOf(r, s.Self, true, s.View)
	switch {
	case f == owners.Away && !s.View.Handled(r.Owner):
		return owners.Foreign // its end is being handled: its claims are still held
	case f == owners.Shared:
		if d := s.DAG(r.DAGID); d == nil || d.IsJob {
			return owners.Foreign
		}
	}
	return f
}

// InMemory reports whether a run of this fate is held in memory.
func InMemory(f owners.Fate) bool {
	return f == owners.Mine || f == owners.Take || f == owners.Away || f == owners.Shared
}
