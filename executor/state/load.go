package state

import (
	"fmt"
	"sort"
	"strings"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/owners"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Rows are what a load reads, in the pass's transaction: everything memory is built from.
type Rows struct {
	Pools     []store.Pool
	DAGStates map[string]store.DAGState
	Runs      []store.Run                    // the open runs, every owner's
	TIs       map[int64][]store.TaskInstance // of the runs memory holds (InMemory of their Fate)
	Entries   []store.Entry                  // the waiting and admitted entries, every owner's
	Claims    []store.Claim
}

// Found is what a load or a refresh found that the decision acts on.
type Found struct {
	Taken []*Run   // runs nobody owned (dags trigger): this daemon takes them, its id to be written
	Stops []*Entry // entries carrying a stop request
	Ended []*Run   // runs in memory that another process ended (refresh)
}

// Load rebuilds memory from rows read at change version dv and sequence seq: pools, DAG flags,
// the open runs this daemon owns (taking unowned ones), a serve daemon's also the bound runs
// of dead owners whose end is handled (their entries wait node_unavailable, their commands are
// applied here) and the leader-owned runs of other live daemons (their entries are admitted
// here too), their task instances and queue entries, other owners' open runs (for counting)
// and waiting entries. A waiting entry of a run that has ended is left out: the pass retires it.
func (s *State) Load(rows *Rows, dv, seq int64) Found {
	var found Found
	s.Pools = PoolsByName(rows.Pools)
	s.DAGStates = rows.DAGStates
	s.Runs = map[int64]*Run{}
	s.Entries = map[int64]*Entry{}
	s.Foreign = map[int64]*Entry{}
	s.Others = map[int64]store.Run{}
	s.qvalid = false // the admission queue is built again from what is read here
	open := make(map[int64]bool, len(rows.Runs))
	for _, r := range rows.Runs {
		open[r.PK] = true
		s.place(r, rows.TIs[r.PK], &found)
	}
	ix := indexClaims(rows.Claims)
	for i := range rows.Entries {
		e := rows.Entries[i]
		if !open[e.Run] {
			continue // of a run that has ended: retired by this pass (Tx.RetireOrphans)
		}
		if le := s.placeEntry(e, ix, nil); le != nil && isStop(le.ReasonCode) {
			found.Stops = append(found.Stops, le)
		}
	}
	s.Loaded, s.DV, s.Seq = true, dv, seq
	return found
}

// place puts an open run where its fate says: in memory with its task instances (taking it
// when nobody owns it: its owner is written with the pass), or among the other owners' runs,
// kept for counting.
func (s *State) place(r store.Run, tis []store.TaskInstance, found *Found) {
	f := s.Fate(r)
	if !InMemory(f) {
		s.Others[r.PK] = r
		return
	}
	if f == owners.Take {
		r.Owner = s.Self
	}
	lr := NewRun(r, s.DAG(r.DAGID)) // with no DAG it is gone: the pass retires the run
	if f == owners.Take && lr.Version == 0 && lr.DAG != nil && s.Version != nil {
		lr.Version = s.Version(lr.DAG) // created by dags trigger: it runs the version loaded here
	}
	lr.Away, lr.Shared = f == owners.Away, f == owners.Shared
	for _, ti := range tis {
		lti := &TI{TaskInstance: ti}
		if lr.DAG != nil {
			lti.Task = lr.DAG.TaskOf(ti.TaskID)
		}
		lr.Add(lti) // every task is on the frontier once: a loaded run is walked whole
	}
	s.Runs[r.PK] = lr
	if f == owners.Take {
		s.TouchRun(lr)
		found.Taken = append(found.Taken, lr)
	}
}

// placeEntry puts a waiting or admitted entry in memory: with its run when the run is in
// memory (keeping the pokes and the failure a refresh's memory had for it as old), else among
// the other owners' waiting entries.
func (s *State) placeEntry(e store.Entry, ix claimIndex, old *Entry) *Entry {
	lr, inMemory := s.Runs[e.Run]
	if !inMemory {
		if e.State == vocab.EntryWaiting {
			s.Foreign[e.ID] = &Entry{Entry: e, Kept: ix.kept[e.ID], Away: !s.View.IsAlive(e.Owner)}
		} else {
			delete(s.Foreign, e.ID)
		}
		return nil
	}
	le := &Entry{Entry: e, Run: lr, TI: lr.TIs[e.TaskID], Away: lr.Away}
	switch e.State {
	case vocab.EntryWaiting:
		le.Kept = ix.kept[e.ID] // a reschedule sensor's include_deferred claims
	case vocab.EntryAdmitted:
		le.Holder = ix.holder[e.ID]
		if le.TI != nil && e.Version != 0 {
			le.TI.RanTry, le.TI.RanVersion = e.TryNumber, e.Version
		}
	}
	if !e.NotBefore.IsZero() {
		le.Pokes = 1
	}
	if lr.Shared {
		le.Needs = s.LocalNeeds(e.Needs)
		var t *dag.Task
		if le.TI != nil {
			t = le.TI.Task
		}
		le.NotHere = t == nil || t.Kind == dag.KindSensor || len(le.Kept) > 0 || e.Fingerprint != le.TI.Fingerprint()
	}
	if old != nil {
		le.Pokes = old.Pokes
	}
	s.AddEntry(le)
	return le
}

// LocalNeeds are a shared entry's needs as this daemon debits them: its owner's _global limit
// replaced by this daemon's own (max_running limits each daemon, §9).
func (s *State) LocalNeeds(needs []store.Requirement) []store.Requirement {
	out := make([]store.Requirement, 0, len(needs)+1)
	for _, n := range needs {
		if n.Pool != pools.GlobalPool {
			out = append(out, n)
		}
	}
	if m := s.MaxRunning; m > 0 {
		out = append(out, store.Requirement{Pool: pools.GlobalPool, Slots: 1, Implicit: true, Capacity: m})
		sort.Slice(out, func(i, j int) bool { return out[i].Pool < out[j].Pool })
	}
	return out
}

// Changes are what a refresh reads, in the pass's transaction: the small tables, the rows other
// processes stamped since memory's sequence, and the task instances of the runs it will place
// in memory for the first time.
type Changes struct {
	Pools     []store.Pool
	DAGStates map[string]store.DAGState
	store.Changes
	TIs    map[int64][]store.TaskInstance
	Claims []store.Claim // when entries changed: their holders and kept claims
}

// NeedsLoad reports whether a change is one only a load handles: a pool's capacity changed (the
// DAGs are validated again), a run of this daemon was changed by another process, or a run's
// fate differs from the one memory holds it under.
func (s *State) NeedsLoad(ps []store.Pool, runs []store.Run) bool {
	if PoolSignature(ps) != s.PoolSig {
		return true
	}
	for _, r := range runs {
		lr := s.Runs[r.PK]
		open := r.State.Open()
		switch {
		case lr == nil:
			if f := s.Fate(r); open && (f == owners.Mine || f == owners.Away) {
				return true // a run of this daemon's, or of a dead owner's, it does not hold: unusual
			}
		case !lr.Shared && !lr.Away:
			return true // another process changed this daemon's run
		case open && s.Fate(r) != lr.Fate():
			return true
		}
	}
	return false
}

// Placed lists the runs of runs a refresh will put in memory for the first time: their task
// instances must be read.
func (s *State) Placed(runs []store.Run) []int64 {
	var out []int64
	for _, r := range runs {
		if _, in := s.Runs[r.PK]; !in && r.State.Open() && InMemory(s.Fate(r)) {
			out = append(out, r.PK)
		}
	}
	return out
}

// Refresh brings memory up to date with what other processes committed since its sequence
// (the caller checked NeedsLoad first): the rows they stamped, the pools and DAG flags. With
// several daemons each pass of one is an outside commit to all the others; reading every open
// run again each time would cost them a 3,000-task run per pass.
func (s *State) Refresh(ch *Changes, dv, seq int64) Found {
	var found Found
	s.Pools = PoolsByName(ch.Pools)
	for id, st := range ch.DAGStates {
		if s.DAGStates[id].Paused != st.Paused {
			s.qvalid = false // the blocks of its entries change: the queue is built again
		}
	}
	if len(ch.DAGStates) != len(s.DAGStates) {
		s.qvalid = false
	}
	s.DAGStates = ch.DAGStates
	ix := indexClaims(ch.Claims)
	for _, r := range ch.Runs {
		open := r.State.Open()
		if lr := s.Runs[r.PK]; lr != nil {
			if !open {
				found.Ended = append(found.Ended, lr)
				continue
			}
			lr.Run = r // a shared or away run: its owner's row
			continue
		}
		delete(s.Others, r.PK)
		if open {
			s.place(r, ch.TIs[r.PK], &found)
		}
	}
	for _, row := range ch.TaskInstances {
		lr := s.Runs[row.Run]
		if lr == nil {
			continue
		}
		ti := lr.TIs[row.TaskID]
		if ti == nil {
			ti = &TI{TaskInstance: row}
			if lr.DAG != nil {
				ti.Task = lr.DAG.TaskOf(row.TaskID)
			}
			lr.Add(ti)
			continue
		}
		if ti.TaskInstance != row {
			ti.TaskInstance = row
			if ti.Task != nil && ti.Task.Mapped() && !ti.Instance {
				lr.Mapping(ti.TaskID).SetLine(ti.MapNext) // its owner moved its line
			}
			ti.Noted()
		}
	}
	for _, e := range ch.Entries {
		s.QueueDirty(e.ID)
		if _, inMemory := s.Runs[e.Run]; inMemory && e.State.Terminal() {
			if old := s.Entries[e.ID]; old != nil {
				s.DropEntry(old)
			}
			continue
		}
		if le := s.placeEntry(e, ix, s.Entries[e.ID]); le != nil && isStop(le.ReasonCode) {
			found.Stops = append(found.Stops, le)
		}
	}
	for _, pk := range ch.DeletedRuns {
		// Deleted by another process (§10.3): memory forgets it with its entries.
		if lr := s.Runs[pk]; lr != nil {
			found.Ended = append(found.Ended, lr)
		}
		delete(s.Others, pk)
		for id, fe := range s.Foreign {
			if fe.Run == nil && fe.Entry.Run == pk {
				delete(s.Foreign, id)
				s.QueueDirty(id)
			}
		}
	}
	for _, lr := range found.Ended {
		for _, ti := range lr.TIs {
			if le := ti.Entry; le != nil {
				s.DropEntry(le)
			}
		}
		s.RemoveRun(lr)
	}
	s.DV, s.Seq = dv, seq
	return found
}

// PoolsByName indexes the pools read in a pass.
func PoolsByName(ps []store.Pool) map[string]store.Pool {
	out := make(map[string]store.Pool, len(ps))
	for _, p := range ps {
		out[p.Name] = p
	}
	return out
}

// PoolSignature is the pools' capacities the DAGs are validated under.
func PoolSignature(ps []store.Pool) string {
	var sig strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&sig, "%s:%d;", p.Name, p.Slots)
	}
	return sig.String()
}

// isStop reports whether an entry's reason code is a stop request (vocab.ReasonCode.StopsTo).
func isStop(c vocab.ReasonCode) bool {
	_, ok := c.StopsTo()
	return ok
}
