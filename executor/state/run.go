package state

import (
	"fmt"
	"sort"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/owners"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Run is an open run in memory, written through to the store.
//
// A pass walks only what can change: the frontier holds the tasks whose trigger rule must be
// evaluated again (those downstream of a task that changed state, and every task when the run
// starts or is loaded), and Timers the tasks waiting on a clock (a retry, an approval timeout,
// a sensor). So a step of a 10,000-task chain costs the same as a step of a 10-task one.
type Run struct {
	store.Run
	DAG     *dag.DAG
	Layout  *dag.Layout    // nil when the DAG is gone
	Weights map[string]int // shared with the DAG: read only
	TIs     map[string]*TI
	ByIdx   []*TI // by task index in DAG.Tasks
	Params  map[string]any
	// Conf is the run's conf as a map (nil for none), for templates (§14).
	Conf map[string]any
	// TemplateErr is why its templated params defaults could not be evaluated: every task of
	// the run that is queued fails with it.
	TemplateErr string
	// frontier holds topological positions (min first) of tasks to evaluate; inFrontier marks them.
	frontier   posHeap
	inFrontier []bool
	// open counts task instances not in a terminal state; the run may end when it is 0.
	open int
	// Timers holds the task instances that wait on a clock.
	Timers map[*TI]struct{}
	// maps holds the mapped tasks' instances by task id (mapping.go).
	maps map[string]*Mapping
	// implicit names the run's implicit pools the admission queue knows.
	implicit map[string]bool
	// DAGPool names its max_active_tasks pool, built once rather than for each entry.
	DAGPool string
	// LastNeeds are the requirements of the run's last new entry, shared by the next ones that
	// need the same.
	LastNeeds []store.Requirement
	// Away marks a dead owner's bound run (§9): in memory so that commands and deadlines apply
	// to it, but never advanced or admitted here.
	Away bool
	// Shared marks another live daemon's leader-owned run (§9): its entries are admitted here
	// too, but only its owner advances it, expires or rejects its entries, ends it and applies
	// its DAG's changes and concurrency policy.
	Shared bool
	// dirty: the row changed in this pass and is written at its end.
	dirty bool
}

// TI is one task instance of a run in memory.
type TI struct {
	store.TaskInstance
	Task  *dag.Task
	Entry *Entry // its waiting or admitted queue entry
	Run   *Run
	Idx   int32 // index of its task in Run.DAG.Tasks; -1 when the task is gone
	// seen is the state run.open, run.Timers and the frontier last accounted for.
	seen vocab.TaskState
	// A pass changes a task instance several times (queued, then admitted, say); it is written
	// once, at the end of the pass (inserted if its row does not exist yet).
	dirty bool
	// Due, when set, is the due time of its next entry instead of its run's: a clear queues a
	// task again as of the clear (§10.1). Memory only: after a load the run's due time holds.
	Due time.Time
	// RanTry was admitted under version RanVersion of its DAG (§12): the version its attempt
	// ran. Memory, from the admitted entry's row after a load.
	RanTry, RanVersion int
	// A mapped task's instance (§14) is a task instance of its own, id "task[i]": Instance
	// says so, MapIndex is i and Base its task's id. Its Idx is -1 (it is not a node of the
	// DAG's graph): a change of its state puts its mapped task on the frontier instead.
	Instance bool
	MapIndex int
	Base     string
	// Items are a mapped task's items once it expanded (memory: evaluated again after a load).
	Items []any
	// pending: a mapped instance its task has yet to look at again (Mapping.Take).
	pending bool
}

// TaskKey is the id of the task ti runs: its own, or a mapped instance's task's.
func (ti *TI) TaskKey() string {
	if ti.Instance {
		return ti.Base
	}
	return ti.TaskID
}

// TriesAllowed is how many tries the task instance may take in all (§3.3): its own bound when a
// clear set one, else its task's retries + 1.
func (ti *TI) TriesAllowed() int {
	if ti.TaskInstance.MaxTries > 0 {
		return ti.TaskInstance.MaxTries
	}
	if ti.Task == nil {
		return 1
	}
	return ti.Task.Retries + 1
}

// NewRun makes a run of DAG d, or of a DAG that is gone when d is nil.
func NewRun(r store.Run, d *dag.DAG) *Run {
	lr := &Run{Run: r, DAG: d, TIs: map[string]*TI{}, Timers: map[*TI]struct{}{},
		DAGPool: pools.DAGPoolPrefix + r.DAGID + "/" + r.RunID}
	if d == nil {
		return lr
	}
	lr.Layout, lr.Weights = d.Layout(), d.Weights()
	lr.ByIdx = make([]*TI, len(d.Tasks))
	lr.inFrontier = make([]bool, len(lr.Layout.Order))
	params, conf, err := explain.RunParams(d, r.RunID, r.LogicalDate, r.Conf)
	lr.Params, lr.Conf = params, conf
	if err != nil {
		// Templated params defaults (§14) are the run's: every task of it queued fails with this.
		lr.TemplateErr = err.Error()
	}
	return lr
}

// Add makes ti a task instance of the run and accounts for its state.
func (r *Run) Add(ti *TI) {
	r.TIs[ti.TaskID] = ti
	ti.Run, ti.Idx = r, -1
	if r.DAG != nil && ti.Task != nil {
		if i, ok := r.DAG.TaskIndex(ti.TaskID); ok {
			ti.Idx = int32(i)
			r.ByIdx[i] = ti
		} else if base, n, ok := dag.SplitMapID(ti.TaskID); ok {
			ti.Instance, ti.MapIndex, ti.Base = true, n, base
			r.Mapping(base).add(ti)
		}
		if ti.Task.Mapped() && !ti.Instance {
			r.Mapping(ti.TaskID).SetLine(ti.MapNext) // where its line stands (a load)
		}
	}
	ti.seen = ""
	r.note(ti)
}

// note accounts for the state of ti: the count of open task instances, the timers, and the
// frontier — a task whose upstream changed state may be ready, skipped or upstream_failed now.
func (r *Run) note(ti *TI) {
	if ti.seen == ti.State {
		return
	}
	if ti.seen != "" && !ti.seen.Terminal() {
		r.open--
	}
	if !ti.State.Terminal() {
		r.open++
	}
	old := ti.seen
	first := old == ""
	ti.seen = ti.State
	if WaitsOnClock(ti) {
		r.Timers[ti] = struct{}{}
	} else {
		delete(r.Timers, ti)
	}
	if ti.Instance {
		// Its mapped task counts its instances' states and queues the ready ones; a task
		// downstream may decide on an instance that ended (one_failed fires on the first
		// failed one, §14: trigger rules count every instance).
		r.Mapping(ti.Base).moved(ti, old)
		r.pushTask(ti.Base)
		if ti.State.Terminal() {
			r.pushDown(ti.Base)
		}
		return
	}
	if r.Layout == nil || ti.Idx < 0 {
		return
	}
	if first || ti.State == vocab.TaskNone {
		r.Push(r.Layout.Pos[ti.Idx]) // a new task, or one cleared to run again
	}
	for _, c := range r.Layout.Down[ti.Idx] {
		r.Push(r.Layout.Pos[c])
	}
}

// Noted lets the run account for a state the store already holds (written by a statement of
// its own rather than with the pass's task instances).
func (ti *TI) Noted() {
	if ti.Run != nil {
		ti.Run.note(ti)
	}
}

// Fingerprint is its task's, computed once per task of the run's DAG.
func (ti *TI) Fingerprint() string {
	r := ti.Run
	if r == nil || r.DAG == nil {
		return ti.Task.Fingerprint()
	}
	i := int(ti.Idx)
	if ti.Instance {
		// A mapped instance runs its task's definition: the memo of the task, not an
		// encoding of it per entry.
		i = -1
		if j, ok := r.DAG.TaskIndex(ti.Base); ok {
			i = j
		}
	}
	if i >= 0 && i < len(r.DAG.Tasks) && r.DAG.Tasks[i] == ti.Task {
		return r.DAG.TaskFingerprint(i)
	}
	return ti.Task.Fingerprint()
}

// AllTerminal reports whether no task instance of the run is open: the cheap test before
// dag.RunEndState.
func (r *Run) AllTerminal() bool { return r.open == 0 }

// InOrder lists the run's task instances in dependency order, file order among equals; those
// whose task is gone come last, by id.
func (r *Run) InOrder() []*TI {
	out := make([]*TI, 0, len(r.TIs))
	if r.Layout != nil {
		for _, i := range r.Layout.Order {
			if ti := r.ByIdx[i]; ti != nil {
				out = append(out, ti)
			}
		}
	}
	var gone []*TI
	for _, ti := range r.TIs {
		if ti.Idx < 0 || r.Layout == nil || r.Layout.Pos[ti.Idx] < 0 {
			gone = append(gone, ti)
		}
	}
	sort.Slice(gone, func(i, j int) bool { return gone[i].TaskID < gone[j].TaskID })
	return append(out, gone...)
}

// pushTask puts the task with id on the frontier.
func (r *Run) pushTask(id string) {
	if r.Layout == nil || r.DAG == nil {
		return
	}
	if i, ok := r.DAG.TaskIndex(id); ok {
		r.Push(r.Layout.Pos[i])
	}
}

// pushDown puts the tasks downstream of the task with id on the frontier.
func (r *Run) pushDown(id string) {
	if r.Layout == nil || r.DAG == nil {
		return
	}
	if i, ok := r.DAG.TaskIndex(id); ok {
		for _, c := range r.Layout.Down[i] {
			r.Push(r.Layout.Pos[c])
		}
	}
}

// PushTI puts a task instance's task on the frontier: its own, or a mapped instance's task,
// which looks at that instance again (a due retry).
func (r *Run) PushTI(ti *TI) {
	if ti.Instance {
		r.Mapping(ti.Base).mark(ti)
		r.pushTask(ti.Base)
		return
	}
	if r.Layout != nil && ti.Idx >= 0 {
		r.Push(r.Layout.Pos[ti.Idx])
	}
}

// Push adds the task at topological position pos to the frontier.
func (r *Run) Push(pos int32) {
	if pos < 0 || r.inFrontier[pos] {
		return
	}
	r.inFrontier[pos] = true
	r.frontier.push(pos)
}

// FrontierLen is the number of tasks on the frontier.
func (r *Run) FrontierLen() int { return len(r.frontier) }

// Frontier lists the task instances on the frontier, in no order (for foreseeing rules).
func (r *Run) Frontier() []*TI {
	out := make([]*TI, 0, len(r.frontier))
	for _, pos := range r.frontier {
		if ti := r.ByIdx[r.Layout.Order[pos]]; ti != nil {
			out = append(out, ti)
		}
	}
	return out
}

// Pop takes the frontier's first task in topological order.
func (r *Run) Pop() *TI {
	pos := r.frontier.pop()
	r.inFrontier[pos] = false
	return r.ByIdx[r.Layout.Order[pos]]
}

// Due is the due time of every entry of the run (§4.4): the logical date of a scheduled or
// catch-up or every_node run, the request time of a manual or test run.
func (r *Run) Due() time.Time {
	if r.RunType.Fired() {
		return r.LogicalDate
	}
	return r.QueuedAt
}

// Fate is the fate memory holds the run under.
func (r *Run) Fate() owners.Fate {
	switch {
	case r.Shared:
		return owners.Shared
	case r.Away:
		return owners.Away
	}
	return owners.Mine
}

// IsReschedule reports whether t is a reschedule-mode sensor (§5.1).
func IsReschedule(t *dag.Task) bool {
	return t != nil && t.Kind == dag.KindSensor && t.Sensor != nil && t.Sensor.Mode == dag.ModeReschedule
}

// WaitsOnClock says whether a task instance waits for a time: its retry, its approval timeout,
// a reschedule sensor's next poke or timeout.
func WaitsOnClock(ti *TI) bool {
	switch ti.State {
	case vocab.TaskUpForRetry, vocab.TaskAwaitingApproval:
		return true
	case vocab.TaskScheduled, vocab.TaskUpForReschedule:
		return IsReschedule(ti.Task)
	}
	return false
}

// Label names an attempt in claims and reasons: "dag.task try n".
func Label(dagID, taskID string, try int) string {
	return fmt.Sprintf("%s.%s try %d", dagID, taskID, try)
}

// posHeap is a min-heap of topological positions.
type posHeap []int32

func (h *posHeap) push(x int32) {
	*h = append(*h, x)
	a := *h
	for i := len(a) - 1; i > 0; {
		up := (i - 1) / 2
		if a[up] <= a[i] {
			break
		}
		a[up], a[i] = a[i], a[up]
		i = up
	}
}

func (h *posHeap) pop() int32 {
	a := *h
	x := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && a[c+1] < a[c] {
			c++
		}
		if a[i] <= a[c] {
			break
		}
		a[i], a[c] = a[c], a[i]
		i = c
	}
	*h = a
	return x
}
