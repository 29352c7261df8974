package state

import (
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Mapping is a mapped task's instances in a run's memory (§14), kept so that a pass costs what
// changed rather than what the task holds: the instances by map index, how many are in each
// state, where its line stands, and the ones the mapped task must look at again — those whose
// state changed, and those whose clock came (a due retry) — since it last did. A pass that ends
// one instance of 10,000 looks at that one, and sums the task up from the counts.
//
// The line: every instance is made (in none) when the task expands, but they are queued a
// window at a time in map index order; line is the map index of the next one to queue. An
// instance at or past it is not looked at as a changed one: it waits for its place in the line.
type Mapping struct {
	insts  []*TI                   // by map index; nil where there is none (none should be)
	states map[vocab.TaskState]int // instances by the state memory last accounted for
	// pending lists the instances to look at again, each once (TI.pending).
	pending []*TI
	// want is the length of the list of the task's expansion, once memory knows it (known).
	want  int
	known bool
	// line is the map index of the next instance to queue, once memory knows it (lineSet:
	// from the mapped task's row); until then every changed instance is pending.
	line    int
	lineSet bool
	// ahead is the map index the line's look ahead reads next, and needs the requirements it
	// evaluated, by map index (a nil slice: they did not evaluate): memory only.
	ahead int
	needs map[int][]store.Requirement
}

// Mapping is the mapped task id's instances, made on first use (an instance may be loaded
// before its task).
func (r *Run) Mapping(id string) *Mapping {
	m := r.maps[id]
	if m == nil {
		if r.maps == nil {
			r.maps = map[string]*Mapping{}
		}
		m = &Mapping{states: map[vocab.TaskState]int{}}
		r.maps[id] = m
	}
	return m
}

// add takes a new instance at its map index.
func (m *Mapping) add(ti *TI) {
	if i := ti.MapIndex; i >= len(m.insts) {
		m.insts = append(m.insts, make([]*TI, i+1-len(m.insts))...)
	}
	m.insts[ti.MapIndex] = ti
}

// moved accounts for an instance whose state went from old ("" for a new one) to its own. An
// instance past the end of the list (removed: a shorter list after a clear) is no longer part
// of the task: it is neither counted nor queued.
func (m *Mapping) moved(ti *TI, old vocab.TaskState) {
	if !m.part(ti) {
		return
	}
	if old != "" {
		if m.states[old]--; m.states[old] == 0 {
			delete(m.states, old)
		}
	}
	m.states[ti.State]++
	if ti.State == vocab.TaskNone || ti.State == vocab.TaskUpForRetry {
		m.mark(ti) // it may be ready: new, cleared, or its retry (due now or at its timer)
	}
}

// part reports whether an instance is part of the task's list (every one, until memory knows
// the list's length).
func (m *Mapping) part(ti *TI) bool { return !m.known || ti.MapIndex < m.want }

// Size is the number of instances that are part of the list.
func (m *Mapping) Size() int {
	if m.known {
		return min(m.want, len(m.insts))
	}
	return len(m.insts)
}

// mark puts an instance on the list the mapped task looks at next, unless it waits in the line.
func (m *Mapping) mark(ti *TI) {
	if !ti.pending && m.part(ti) && !m.inLine(ti) {
		ti.pending = true
		m.pending = append(m.pending, ti)
	}
}

// Len is the number of instances: one past the highest map index.
func (m *Mapping) Len() int { return len(m.insts) }

// At is the instance at map index i, or nil.
func (m *Mapping) At(i int) *TI {
	if i < 0 || i >= len(m.insts) {
		return nil
	}
	return m.insts[i]
}

// Count is how many instances are in state s.
func (m *Mapping) Count(s vocab.TaskState) int {
	return m.states[s]
}

// Open is how many instances are not in a terminal state.
func (m *Mapping) Open() int {
	open := 0
	for s, n := range m.states {
		if !s.Terminal() {
			open += n
		}
	}
	return open
}

// States calls f with each state some instance is in and how many are.
func (m *Mapping) States(f func(vocab.TaskState, int)) {
	for s, n := range m.states {
		f(s, n)
	}
}

// Take returns at most k of the instances to look at again — those that became none or
// up_for_retry, or whose clock came, since they were last taken — first marked first, and
// forgets them.
func (m *Mapping) Take(k int) []*TI {
	k = min(k, len(m.pending))
	out := m.pending[:k:k]
	for _, ti := range out {
		ti.pending = false
	}
	if k == len(m.pending) {
		m.pending = nil
	} else {
		m.pending = m.pending[k:]
	}
	return out
}

// Pending is how many instances wait to be looked at again.
func (m *Mapping) Pending() int { return len(m.pending) }

// Want says the task's list has n items: the instances up to n are to make.
func (m *Mapping) Want(n int) {
	if m.known && m.want == n {
		return
	}
	m.want, m.known = n, true
	// Counted again over the instances of this list, as memory last accounted for each.
	clear(m.states)
	for _, ti := range m.insts[:min(n, len(m.insts))] {
		if ti != nil && ti.seen != "" {
			m.states[ti.seen]++
		}
	}
}

// Known reports whether memory knows the list's length (not after a load, until it evaluated
// the list again).
func (m *Mapping) Known() bool { return m.known }

// Length is the length of the list (Len until memory knows it).
func (m *Mapping) Length() int {
	if !m.known {
		return len(m.insts)
	}
	return m.want
}

// inLine reports whether an instance waits for its place in the line: one past the line's head
// that was never queued. One the look ahead queued (it has no map_line reason any more) is
// looked at again like any other when it changes: a retry, a clear.
func (m *Mapping) inLine(ti *TI) bool {
	return m.lineSet && ti.MapIndex >= m.line && ti.ReasonCode == vocab.ReasonMapLine
}

// Line is the map index of the next instance to queue.
func (m *Mapping) Line() int { return m.line }

// InLine is how many instances of the list wait for their place in the line.
func (m *Mapping) InLine() int { return max(0, m.Length()-m.line) }

// SetLine says the next instance to queue is the one at map index i (the mapped task's
// MapNext). Instances pending at or past it leave the pending list: the line queues them.
func (m *Mapping) SetLine(i int) {
	if m.lineSet && m.line == i {
		return
	}
	m.line, m.lineSet = i, true
	kept := m.pending[:0]
	for _, ti := range m.pending {
		if m.inLine(ti) {
			ti.pending = false
		} else {
			kept = append(kept, ti)
		}
	}
	clear(m.pending[len(kept):])
	m.pending = kept
}

// Ahead is the map index the line's look ahead reads next (never before the line's head).
func (m *Mapping) Ahead() int { return max(m.ahead, m.line) }

// SetAhead says where the look ahead reads next.
func (m *Mapping) SetAhead(i int) { m.ahead = i }

// Needs are the requirements the look ahead evaluated for the instance at map index i, and
// whether it did.
func (m *Mapping) Needs(i int) ([]store.Requirement, bool) {
	n, ok := m.needs[i]
	return n, ok
}

// SetNeeds keeps the requirements evaluated for the instance at map index i.
func (m *Mapping) SetNeeds(i int, needs []store.Requirement) {
	if m.needs == nil {
		m.needs = map[int][]store.Requirement{}
	}
	m.needs[i] = needs
}

// Next moves the line past the instance at its head.
func (m *Mapping) Next() { m.line++ }
