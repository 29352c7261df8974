package decide

import (
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The line's look ahead. The window queues a mapped task's instances in map index order, so a
// list sorted by shard, as a listing of files often is, would fill the window with the first
// shard's instances: they wait for that shard's pool while every other shard's pool stays idle,
// and the task runs one shard at a time (§14 asks the opposite: each item's requirements are
// admitted like any entry, everything else around them). When the window is full, the look
// ahead reads the instances further down the line, evaluates their requirements (the pools
// only, not the command) and queues those whose pools have free slots now, each with the queue
// ID its expansion reserved, so the order stays the expansion's (§4.4). It queues at most a
// window more, only what the free slots (as of the last admission) can take, and reads at most
// lookAheadScan instances a pass from where it stopped, remembering what it evaluated, so a
// pass costs a bounded amount however long the list.

// lookAheadScan is how many instances of a line the look ahead reads in a pass at most.
const lookAheadScan = 1024

// lookAhead queues instances past the window's whose pools have room (see above).
func (ps *pass) lookAhead(run *state.Run, ti *state.TI, m *state.Mapping, ready []readyTask) []readyTask {
	if ti.State != vocab.TaskRunning || m.InLine() == 0 || ps.windowRoom(ti, m) > 0 {
		return ready
	}
	extra := 2*ps.mapWindow(ti.Task) - m.Count(vocab.TaskScheduled) - ps.mapQueued[m]
	if extra <= 0 {
		return ready
	}
	free := ps.freeSlots()
	if !anyFree(free) {
		return ready
	}
	// The window's instances this pass queues take their slots first.
	for _, r := range ready {
		if r.ti.Instance && r.ti.Base == ti.TaskID {
			if needs, ok := ps.instanceNeeds(run, r.ti, m); ok {
				take(free, needs)
			}
		}
	}
	if !anyFree(free) {
		return ready // the window takes every free slot: nothing further down could start now
	}
	n := m.Length()
	i := m.Ahead()
	for read := 0; read < lookAheadScan && extra > 0 && i < n; read++ {
		inst := m.At(i)
		i++
		ps.p.Walked++
		if inst == nil || inst.State != vocab.TaskNone || inst.ReasonCode != vocab.ReasonMapLine {
			continue
		}
		needs, ok := ps.instanceNeeds(run, inst, m)
		if !ok || !ps.fits(free, needs) {
			continue
		}
		take(free, needs)
		inst.ReasonCode, inst.Reason, inst.Ahead = "", "", 0
		ready = ps.readyInstance(ready, run, inst, m, ti)
		extra--
	}
	if i >= n {
		i = m.Line() // read to the end: the next pass reads from the head again
	}
	m.SetAhead(i)
	return ready
}

// instanceNeeds are a mapped instance's requirements for its next try, as its entry would
// have them, evaluated once and kept in its mapping; false when they do not evaluate (its
// place in the line comes, and it fails then, with the reason).
func (ps *pass) instanceNeeds(run *state.Run, inst *state.TI, m *state.Mapping) ([]store.Requirement, bool) {
	if needs, ok := m.Needs(inst.MapIndex); ok {
		return needs, needs != nil
	}
	var needs []store.Requirement
	named, err := ps.renderPools(run, inst, inst.TryNumber+1)
	if err == nil && (named == nil || ps.poolsExist(named) == nil) {
		needs, _ = ps.requirements(run, inst, inst.TryNumber+1, named)
	}
	m.SetNeeds(inst.MapIndex, needs)
	return needs, needs != nil
}

// freeSlots are the free slots of each pool with a bound, as of the last admission; nil when
// no pool has any.
func (ps *pass) freeSlots() map[string]int {
	var free map[string]int
	for name, p := range ps.st.Pools {
		if p.Slots < 0 {
			continue
		}
		if n := p.Slots - ps.st.Used[name]; n > 0 {
			if free == nil {
				free = map[string]int{}
			}
			free[name] = n
		}
	}
	return free
}

// fits reports whether the pools the needs name have the slots free: every bounded one (a
// run's or a DAG's limit is left to admission), and at least one needs a bounded named pool —
// queueing more of a task that needs no bounded pool would not get it past what holds its
// window (max_running, max_active_tasks).
func (ps *pass) fits(free map[string]int, needs []store.Requirement) bool {
	bounded := false
	for _, n := range needs {
		p, ok := ps.st.Pools[n.Pool]
		if !ok || p.Slots < 0 {
			if !ok && n.Pool != "" && n.Pool[0] != '_' {
				return false // a pool nobody configured: its place in the line says so
			}
			continue
		}
		if free[n.Pool] < n.Slots {
			return false
		}
		bounded = bounded || n.Pool[0] != '_'
	}
	return bounded
}

// anyFree reports whether a named pool (not a run's, a DAG's or the daemon's limit) has a free
// slot left.
func anyFree(free map[string]int) bool {
	for name, n := range free {
		if n > 0 && name[0] != '_' {
			return true
		}
	}
	return false
}

func take(free map[string]int, needs []store.Requirement) {
	for _, n := range needs {
		if _, ok := free[n.Pool]; ok {
			free[n.Pool] -= n.Slots
		}
	}
}
