package decide

import (
	"fmt"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Mapped tasks (§14). A mapped task's own task instance is the node of the graph: it becomes
// ready by its trigger rule like any task, then expands — its list evaluated, one task instance
// "task[i]" made per item — and stays running while any instance is open. Once every instance
// ended it takes their summary state (failed if one failed, skipped if all were skipped, else
// success), which is what its downstream tasks wait for; their trigger rules count the instances.
//
// The line. Expanding makes every instance at once, in none, in memory only, but queues only a
// window of them: an entry is made, and its requirements evaluated, when an instance gets a
// place among the task's waiting entries (at most Config.MapWindow). The others wait in the
// task's line, in map index order, and say so (reason code map_line); each pass that sees an
// instance admitted or ended tops the window up. An instance gets its row when it is queued
// (or changed otherwise): until then the readers list it from the mapped task's row, which
// keeps the line (store.TaskInstance.MapNext, MapLength). Expanding 10,000 items is then a
// window of entries and rows, not 10,000 entries with their requirement rows, and a pass never
// queues more of a mapped task than admission could use soon.
//
// The order stays the expansion's: the pass that opens a line reserves one queue ID per
// instance (Tx.ReserveEntryIDs), at the place its first instance takes among the ready tasks
// (reserveLine), and an instance's first entry in the line takes its own, MapFirst + its map
// index: an instance queued late is still ahead of every entry queued after the expansion, as
// if all had been queued then (§4.4). The line's new MapNext is written with the entries the
// pass queues, so after a crash the line goes on where the committed pass left it.

// DefaultMapWindow bounds a mapped task's waiting entries when Config.MapWindow is 0. A
// window of 128 outlasts a pass's admissions for all but the largest pools, while expanding
// costs a tenth of queueing 10,000 entries; a task whose max_active_tis_per_dagrun is lower
// keeps a smaller window (mapWindow).
const DefaultMapWindow = 128

// advanceMapped moves a mapped task on the frontier: it expands when its trigger rule says it is
// ready, queues the instances that are ready (cleared, retry due) and the next of its line as
// its window has room, and sums them up once all have ended.
func (ps *pass) advanceMapped(run *state.Run, ti *state.TI) []readyTask {
	if ti.State == vocab.TaskNone {
		switch next := dag.TriggerCounted(ti.Task.TriggerRule, ps.upStates(run, ti)); next {
		case vocab.TaskScheduled:
			if !ps.expand(run, ti) {
				return nil
			}
		case vocab.TaskSkipped, vocab.TaskUpstreamFailed:
			ti.State = next
			ti.ReasonCode, ti.Reason = "", fmt.Sprintf("%s: trigger rule %s", next, ti.Task.TriggerRule)
			ps.st.Touch(ti)
			return nil
		default:
			return nil
		}
	}
	m := run.Mapping(ti.TaskID)
	ps.knowList(run, ti, m)
	var ready []readyTask
	room := ps.windowRoom(ti, m)
	// The instances that changed or whose clock came, not all of them: a pass that ends one
	// instance of 10,000 looks at that one, and sums the task up from the counts.
	take := m.Take(room)
	for _, inst := range take {
		ps.p.Walked++
		switch inst.State {
		case vocab.TaskNone:
			ready = ps.readyInstance(ready, run, inst, m, nil)
		case vocab.TaskUpForRetry:
			if !ps.now.Before(inst.NextAt) {
				ready = ps.readyInstance(ready, run, inst, m, nil)
			}
		}
	}
	// Those left wait for a place: the pass that sees one of the window admitted or ended
	// comes back here (an instance's change puts its task on the frontier).
	ready = ps.queueLine(run, ti, m, ready)
	ready = ps.lookAhead(run, ti, m, ready)
	n := m.Size()
	if n == 0 {
		return ready
	}
	open := m.Open() > 0
	switch {
	case open && ti.State.Terminal():
		// An instance was cleared: the mapped task runs again until it has ended.
		ti.State, ti.EndDate, ti.ReasonCode, ti.Reason = vocab.TaskRunning, timeZero, "", mappedReason(n)
		ps.st.Touch(ti)
	case open:
	default:
		failed := m.Count(vocab.TaskFailed) + m.Count(vocab.TaskUpstreamFailed)
		st, reason := vocab.TaskSuccess, mappedReason(n)
		switch {
		case failed > 0:
			st, reason = vocab.TaskFailed, fmt.Sprintf("%d of %d mapped instances failed", failed, n)
		case m.Count(vocab.TaskSkipped) == n:
			st, reason = vocab.TaskSkipped, "every mapped instance was skipped"
		}
		if ti.State != st || ti.Reason != reason {
			ti.State, ti.EndDate, ti.ReasonCode, ti.Reason = st, ps.now, "", reason
			ps.st.Touch(ti)
		}
	}
	return ready
}

func mappedReason(n int) string { return fmt.Sprintf("mapped over %d items", n) }

// mapWindow is how many of a mapped task's instances may wait in the queue at once: the
// configured window, or, when the task lets fewer run at once in a run
// (max_active_tis_per_dagrun), twice that, at least 16: more would only wait on the limit.
func (ps *pass) mapWindow(t *dag.Task) int {
	w := ps.cfg.MapWindow
	if w <= 0 {
		w = DefaultMapWindow
	}
	if k := t.MaxActiveTIsPerDAGRun; k > 0 {
		w = min(w, max(2*k, 16))
	}
	return w
}

// windowRoom is how many more of a mapped task's instances this pass may queue: its window less
// those waiting (scheduled) and those this pass made ready.
func (ps *pass) windowRoom(ti *state.TI, m *state.Mapping) int {
	return max(0, ps.mapWindow(ti.Task)-m.Count(vocab.TaskScheduled)-ps.mapQueued[m])
}

// readyInstance adds a mapped instance to the tasks to queue, once per pass (the mapped task
// may come back on the frontier in the same pass); line is its mapped task when its line
// queues it, with the queue ID reserved for it.
func (ps *pass) readyInstance(ready []readyTask, run *state.Run, inst *state.TI, m *state.Mapping, line *state.TI) []readyTask {
	if ps.mapReady[inst] {
		return ready
	}
	if ps.mapReady == nil {
		ps.mapReady, ps.mapQueued = map[*state.TI]bool{}, map[*state.Mapping]int{}
	}
	ps.mapReady[inst] = true
	ps.mapQueued[m]++
	return append(ready, readyTask{run: run, ti: inst, try: inst.TryNumber + 1, line: line})
}

// queueLine queues the next instances of the running mapped task's line while its window has
// room, each with the queue ID its expansion reserved for it; instances of the line that are
// not in none (an earlier expansion's that ended and were not cleared) are passed over.
func (ps *pass) queueLine(run *state.Run, ti *state.TI, m *state.Mapping, ready []readyTask) []readyTask {
	if ti.State != vocab.TaskRunning || m.InLine() == 0 {
		return ready
	}
	if _, opening := ps.lineFrom[ti]; !opening && (ti.MapFirst == 0 || ps.st.NextEntryID <= ti.MapFirst+int64(m.Length())-1) {
		// No line (expanded by an older version, which made and queued its instances a
		// thousand a pass), or IDs reserved for it that the store may give to other entries
		// (a copy of the installation restarts its sequences after the highest ID copied):
		// the line opens again where it stands, with IDs of its own.
		ps.openLine(run, ti, m, m.Line())
	}
	from := m.Line()
	for room := ps.windowRoom(ti, m); room > 0 && m.InLine() > 0; {
		i := m.Line()
		m.Next()
		ps.p.Walked++
		inst := m.At(i)
		if inst == nil || inst.State != vocab.TaskNone {
			continue
		}
		if inst.ReasonCode == vocab.ReasonMapLine {
			inst.ReasonCode, inst.Reason, inst.Ahead = "", "", 0
		}
		ready = ps.readyInstance(ready, run, inst, m, ti)
		room--
	}
	if m.Line() != from {
		ti.MapNext = m.Line()
		ps.st.Touch(ti)
	}
	return ready
}

// expand evaluates a ready mapped task's list: more than max_map_length items, or a list that
// does not evaluate, fails it naming why; an empty list skips it; else it runs, every instance
// made and its line open from index 0. Instances of an earlier, longer list are no longer part
// of the task. Those of this one that ended and were not cleared keep their state (a clear of
// the failed ones runs those again, as in Airflow).
func (ps *pass) expand(run *state.Run, ti *state.TI) bool {
	ti.Items = nil // evaluated again: the inputs may have changed since a clear
	items, err := ps.items(run, ti)
	ti.StartDate = ps.now
	switch {
	case err != nil:
		ps.p.warn("mapped task cannot expand", keyDAG, run.DAGID, keyRun, run.RunID, keyTask, ti.TaskID, "reason", err.Error())
		ti.State, ti.EndDate, ti.ReasonCode, ti.Reason = vocab.TaskFailed, ps.now, "", err.Error()
		ps.st.Touch(ti)
		return false
	case len(items) == 0:
		ti.State, ti.EndDate, ti.ReasonCode, ti.Reason = vocab.TaskSkipped, ps.now, "", "expand: the list is empty"
		ps.st.Touch(ti)
		return false
	}
	ti.State, ti.EndDate, ti.ReasonCode, ti.Reason = vocab.TaskRunning, timeZero, "", mappedReason(len(items))
	ps.st.Touch(ti)
	m := run.Mapping(ti.TaskID)
	m.Want(len(items))
	for i := len(items); i < m.Len(); i++ {
		inst := m.At(i)
		if inst == nil {
			continue
		}
		if !inst.State.Terminal() || inst.State == vocab.TaskNone {
			inst.State = vocab.TaskSkipped
		}
		inst.ReasonCode, inst.Reason = "", fmt.Sprintf("removed: the list has %d items now", len(items))
		ps.st.Touch(inst)
	}
	ps.openLine(run, ti, m, 0)
	return true
}

// openLine opens the running mapped task's line at map index from, and makes in memory the
// instances it does not hold (every one when the task expands; after a load, those an older
// version had not made yet). They get no row: the mapped task's row says where its line stands
// and the readers list the instances of the line from it (store.TaskInstance.MapNext); an
// instance's row is written when it is queued, or changed otherwise. Instances of the line that
// exist in none (an earlier expansion's, cleared) say why they wait too. The line's queue IDs
// are reserved when the pass queues its first instance (reserveLine).
func (ps *pass) openLine(run *state.Run, ti *state.TI, m *state.Mapping, from int) {
	n := m.Length()
	ti.MapFirst, ti.MapNext, ti.MapLength = 0, from, n
	if ps.lineFrom == nil {
		ps.lineFrom = map[*state.TI]int{}
	}
	ps.lineFrom[ti] = from
	// The instances of the line say so before the line is set, which takes them off the list
	// of instances to look at again (Mapping.inLine).
	for i := from; i < min(m.Len(), n); i++ {
		if inst := m.At(i); inst != nil && inst.State == vocab.TaskNone && inst.ReasonCode != vocab.ReasonMapLine {
			inst.ReasonCode, inst.Reason = vocab.ReasonMapLine, ""
			ps.st.Touch(inst)
		}
	}
	m.SetLine(from)
	m.SetAhead(from)
	ps.st.Touch(ti)
	for i := m.Len(); i < n; i++ {
		run.Add(&state.TI{TaskInstance: store.TaskInstance{Run: run.PK, TaskID: dag.MapID(ti.TaskID, i), State: vocab.TaskNone,
			ReasonCode: vocab.ReasonMapLine}, Task: ti.Task}) // no Touch: it has no row until it changes
	}
}

// reserveLine reserves the queue IDs of a line opened in this pass when the pass queues the
// first of its instances, in the order the pass gives IDs (due time, run, task order, §4.4):
// one for each instance from where the line opened to the end of the list, instance i's being
// MapFirst + i. Nothing for an instance no line queues, or whose line has its IDs.
func (ps *pass) reserveLine(line *state.TI) {
	from, opening := ps.lineFrom[line]
	if line == nil || !opening {
		return
	}
	delete(ps.lineFrom, line)
	line.MapFirst = ps.st.NextEntryID - int64(from)
	ps.st.NextEntryID += int64(line.MapLength - from)
	ps.p.add(ReserveEntryIDs{Last: ps.st.NextEntryID - 1})
}

// knowList has memory know the running mapped task's list length: after a load it evaluates the
// list again (the inputs are the same, so the list is too); a list that no longer evaluates
// keeps the instances there are.
func (ps *pass) knowList(run *state.Run, ti *state.TI, m *state.Mapping) {
	if ti.State != vocab.TaskRunning || m.Known() {
		return
	}
	items, err := ps.items(run, ti)
	if err != nil {
		ps.p.warn("mapped task cannot evaluate its list again", keyDAG, run.DAGID, keyRun, run.RunID, keyTask, ti.TaskID,
			"reason", err.Error())
		m.Want(m.Len())
		return
	}
	m.Want(len(items))
}

// items is a mapped task's list for its run: memory's, or evaluated (after a load memory has
// none; the inputs are the same, so the list is too).
func (ps *pass) items(run *state.Run, ti *state.TI) ([]any, error) {
	if ti.Items != nil {
		return ti.Items, nil
	}
	if run.TemplateErr != "" {
		return nil, fmt.Errorf("%s", run.TemplateErr)
	}
	items, err := run.DAG.ExpandItems(ti.Task, ps.templateVars(run, ti, 1))
	if err == nil {
		ti.Items = items
	}
	return items, err
}

// upStates are the states of a task's upstream task instances its trigger rule counts: a mapped
// upstream task that expanded counts each of its instances (§14).
// They are counted, a mapped task's instances from its counts, not one by one.
func (ps *pass) upStates(run *state.Run, ti *state.TI) dag.UpstreamCounts {
	var c dag.UpstreamCounts
	for _, u := range run.Layout.Up[ti.Idx] {
		uti := run.ByIdx[u]
		if uti == nil {
			continue
		}
		if uti.Task.Mapped() && uti.State != vocab.TaskNone {
			if m := run.Mapping(uti.TaskID); m.Len() > 0 {
				m.States(c.Add)
				if !uti.State.Terminal() {
					c.Add(uti.State, 1) // still mapping: its downstream waits
				}
				continue
			}
		}
		c.Add(uti.State, 1)
	}
	return c
}
