package executor

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// liveRun is an open run this daemon owns, kept in memory and written through to the store.
//
// A pass walks only what can change: the frontier holds the tasks whose trigger rule must be
// evaluated again (those downstream of a task that changed state, and every task when the run
// starts or is loaded), and timers the tasks waiting on a clock (a retry, an approval timeout, a
// sensor). So a step of a 10,000-task chain costs the same as a step of a 10-task one.
type liveRun struct {
	store.Run
	dag     *dag.DAG
	layout  *dag.Layout    // nil when the DAG is gone
	weights map[string]int // shared with the DAG: read only
	tis     map[string]*liveTI
	byIdx   []*liveTI // by task index in dag.Tasks
	params  map[string]any
	// frontier holds topological positions (min first) of tasks to evaluate; inFrontier marks them.
	frontier   posHeap
	inFrontier []bool
	// open counts task instances not in a terminal state; the run may end when it is 0.
	open int
	// timers holds the task instances that wait on a clock.
	timers map[*liveTI]struct{}
	// implicit names the run's implicit pools the admission queue knows (queue.go).
	implicit map[string]bool
	// dagPool names its max_active_tasks pool, built once rather than for each entry.
	dagPool string
	// lastNeeds are the requirements of the run's last new entry, shared by the next ones that
	// need the same.
	lastNeeds []store.Requirement
	// away marks a dead owner's bound run (§9): in memory so that commands and deadlines apply
	// to it, but never advanced or admitted here.
	away bool
	// shared marks another live daemon's leader-owned run (§9, shared.go): its entries are
	// admitted here too, but only its owner advances it, expires or rejects its entries, ends
	// it and applies its DAG's changes and concurrency policy.
	shared bool
}

// liveTI is one task instance of a live run.
type liveTI struct {
	store.TaskInstance
	task  *dag.Task
	entry *liveEntry // its waiting or admitted queue entry
	run   *liveRun
	idx   int32 // index of its task in run.dag.Tasks; -1 when the task is gone
	// seen is the state run.open, run.timers and the frontier last accounted for.
	seen vocab.TaskState
	// A pass changes a task instance several times (queued, then admitted, say); it is written
	// once, at the end of the pass (inserted if its row does not exist yet).
	dirty bool
}

// touch marks a task instance to be written at the end of the pass, and lets its run account
// for a change of its state.
func (l *loop) touch(p *passState, ti *liveTI) {
	if !ti.dirty {
		ti.dirty = true
		p.dirtyTIs = append(p.dirtyTIs, ti)
	}
	if ti.run != nil {
		ti.run.note(ti)
	}
}

// noted lets the run account for a state the store already holds (written by a statement of
// its own rather than by flushPass).
func (ti *liveTI) noted() {
	if ti.run != nil {
		ti.run.note(ti)
	}
}

// fingerprint is its task's, computed once per task of the run's DAG.
func (ti *liveTI) fingerprint() string {
	if r := ti.run; r != nil && r.dag != nil && ti.idx >= 0 && int(ti.idx) < len(r.dag.Tasks) && r.dag.Tasks[ti.idx] == ti.task {
		return r.dag.TaskFingerprint(int(ti.idx))
	}
	return ti.task.Fingerprint()
}

// add makes ti a task instance of the run and accounts for its state.
func (r *liveRun) add(ti *liveTI) {
	r.tis[ti.TaskID] = ti
	ti.run, ti.idx = r, -1
	if r.dag != nil && ti.task != nil {
		if i, ok := r.dag.TaskIndex(ti.TaskID); ok {
			ti.idx = int32(i)
			r.byIdx[i] = ti
		}
	}
	ti.seen = ""
	r.note(ti)
}

// note accounts for the state of ti: the count of open task instances, the timers, and the
// frontier — a task whose upstream changed state may be ready, skipped or upstream_failed now.
func (r *liveRun) note(ti *liveTI) {
	if ti.seen == ti.State {
		return
	}
	if ti.seen != "" && !ti.seen.Terminal() {
		r.open--
	}
	if !ti.State.Terminal() {
		r.open++
	}
	first := ti.seen == ""
	ti.seen = ti.State
	if waitsOnClock(ti) {
		r.timers[ti] = struct{}{}
	} else {
		delete(r.timers, ti)
	}
	if r.layout == nil || ti.idx < 0 {
		return
	}
	if first {
		r.push(r.layout.Pos[ti.idx])
	}
	for _, c := range r.layout.Down[ti.idx] {
		r.push(r.layout.Pos[c])
	}
}

// inOrder lists the run's task instances in dependency order, file order among equals; those
// whose task is gone come last, by id.
func (r *liveRun) inOrder() []*liveTI {
	out := make([]*liveTI, 0, len(r.tis))
	if r.layout != nil {
		for _, i := range r.layout.Order {
			if ti := r.byIdx[i]; ti != nil {
				out = append(out, ti)
			}
		}
	}
	var gone []*liveTI
	for _, ti := range r.tis {
		if ti.idx < 0 || r.layout == nil || r.layout.Pos[ti.idx] < 0 {
			gone = append(gone, ti)
		}
	}
	sort.Slice(gone, func(i, j int) bool { return gone[i].TaskID < gone[j].TaskID })
	return append(out, gone...)
}

// push adds the task at topological position pos to the frontier.
func (r *liveRun) push(pos int32) {
	if pos < 0 || r.inFrontier[pos] {
		return
	}
	r.inFrontier[pos] = true
	r.frontier.push(pos)
}

// pop takes the frontier's first task in topological order.
func (r *liveRun) pop() *liveTI {
	pos := r.frontier.pop()
	r.inFrontier[pos] = false
	return r.byIdx[r.layout.Order[pos]]
}

// waitsOnClock says whether a task instance waits for a time: its retry, its approval timeout,
// a reschedule sensor's next poke or timeout.
func waitsOnClock(ti *liveTI) bool {
	switch ti.State {
	case vocab.TaskUpForRetry, vocab.TaskAwaitingApproval:
		return true
	case vocab.TaskScheduled, vocab.TaskUpForReschedule:
		return isReschedule(ti.task)
	}
	return false
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

// flushPass writes what a pass kept to write once: the attempts that ended, then the task
// instances it changed.
func flushPass(tx store.Tx, p *passState) error {
	if err := tx.PutAttempts(p.attempts); err != nil {
		return err
	}
	p.attempts = p.attempts[:0]
	rows := make([]*store.TaskInstance, len(p.dirtyTIs))
	for i, ti := range p.dirtyTIs {
		ti.dirty = false
		rows[i] = &ti.TaskInstance
	}
	p.dirtyTIs = p.dirtyTIs[:0]
	return tx.PutTIs(rows)
}

// liveEntry is one of this daemon's queue entries.
type liveEntry struct {
	store.Entry
	run *liveRun
	ti  *liveTI
	// kept are the claims a reschedule sensor keeps between pokes; pokes counts its pokes.
	kept  []store.Requirement
	pokes int
	// reason is why it waits, when an answer needed it (explain); passes compute none.
	reason *pools.Reason
	// away: bound to a dead owner, it waits node_unavailable and holds no room (§9).
	away bool
	// holder is the daemon whose claims an admitted entry holds ("" when waiting): an attempt
	// another daemon runs is stopped through the store (Tx.RequestStop), not here.
	holder string
	// notHere: an entry of a shared run this daemon must not admit (a sensor, or a task whose
	// definition here differs from the one it was queued under); it keeps its room for its owner.
	notHere bool
	// failWith is set when an operator marked the running attempt failed (or a newer fire
	// replaced its run): the attempt is being killed, and its end fails the task with this
	// reason and no retry. Its claims are released only when its processes are gone.
	failWith string
}

// admission returns the entry as pools.Admit sees it, with its current block and force flag.
// Another owner's entry (not_mine, node_unavailable) leaves out _global: max_running limits
// each daemon on its own (§9). It is built for each put into the queue and not kept: the queue
// holds its own copy, and at 100,000 waiting entries a second one costs 20 MB.
func (le *liveEntry) admission(block pools.Block) pools.Entry {
	pe := poolEntry(&le.Entry, block)
	if needs, kept := le.remaining(); kept != nil {
		pe.Needs, pe.Kept = requirementsToNeeds(needs), requirementsToNeeds(kept)
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

// newLiveRun makes a run of DAG d, or of a DAG that is gone when d is nil (endRuns retires it).
func newLiveRun(r store.Run, d *dag.DAG) *liveRun {
	lr := &liveRun{Run: r, dag: d, tis: map[string]*liveTI{}, timers: map[*liveTI]struct{}{},
		dagPool: pools.DAGPoolPrefix + r.DAGID + "/" + r.RunID}
	if d == nil {
		return lr
	}
	lr.layout, lr.weights = d.Layout(), d.Weights()
	lr.byIdx = make([]*liveTI, len(d.Tasks))
	lr.inFrontier = make([]bool, len(lr.layout.Order))
	lr.params = map[string]any{}
	for k, v := range d.Params {
		lr.params[k] = v
	}
	if r.Conf != "" {
		var conf map[string]any
		if json.Unmarshal([]byte(r.Conf), &conf) == nil {
			for k, v := range conf {
				lr.params[k] = v
			}
		}
	}
	return lr
}

// due is the due time of every entry of the run (§4.4): the logical date of a scheduled or
// catch-up run, the request time of a manual or test run.
func (r *liveRun) due() time.Time {
	switch r.RunType {
	case vocab.RunSchedule, vocab.RunCatchup:
		return r.LogicalDate
	}
	return r.QueuedAt
}

func label(dagID, taskID string, try int) string {
	return fmt.Sprintf("%s.%s try %d", dagID, taskID, try)
}

// poolEntry converts an entry to what pools.Admit sees.
func poolEntry(e *store.Entry, block pools.Block) pools.Entry {
	pe := pools.Entry{ID: e.ID, Label: e.Label, Priority: e.Priority, Due: e.Due, Deadline: e.Deadline,
		Block: block, Force: e.Force, Needs: make([]pools.Need, len(e.Needs))}
	for i, n := range e.Needs {
		pe.Needs[i] = pools.Need{Pool: n.Pool, Slots: n.Slots}
	}
	return pe
}
