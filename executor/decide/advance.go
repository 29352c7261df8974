package decide

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// readyTask is a task instance that becomes ready in this pass and needs a queue entry.
type readyTask struct {
	run *state.Run
	ti  *state.TI
	try int
	// pools are its named-pool requirements with their templates evaluated (§14); nil when
	// the task's pool_requirements hold none.
	pools map[string]int
	// line is the mapped task whose line queues this instance (mapped.go): its entry takes the
	// queue ID reserved for it, MapFirst + its map index. nil: the next ID.
	line *state.TI
}

// order is the ready task's place in its run's DAG: a mapped instance's is its task's.
func (r readyTask) order() int32 {
	if r.ti.Instance {
		if i, ok := r.run.DAG.TaskIndex(r.ti.Base); ok {
			return int32(i)
		}
	}
	return r.ti.Idx
}

// due is the due time of the ready task's entry: its run's, or, for a task a clear queued
// again, the time of the clear (§10.1).
func (r readyTask) due() time.Time {
	if !r.ti.Due.IsZero() {
		return r.ti.Due
	}
	return r.run.Due()
}

// advanceAll moves every changed run forward: queued runs start when max_active_runs allows,
// trigger rules turn finished upstream tasks into ready (or skipped, upstream_failed) ones, due
// retries come back, and every task that became ready is queued before the pass admits (§4.4).
func (ps *pass) advanceAll() {
	ps.startQueuedRuns()
	var ready []readyTask
	for _, run := range ps.st.Runs {
		if run.State != vocab.RunRunning || run.DAG == nil || run.Away || run.Shared {
			continue // only its owner advances a run
		}
		ps.clockDue(run)
		if run.FrontierLen() == 0 {
			continue
		}
		ready = append(ready, ps.advance(run)...)
	}
	// Queue IDs follow (due time, run_id, task order in the DAG) (§4.4).
	sort.Slice(ready, func(i, j int) bool {
		a, b := ready[i], ready[j]
		if da, db := a.due(), b.due(); !da.Equal(db) {
			return da.Before(db)
		}
		if a.run.RunID != b.run.RunID {
			return a.run.RunID < b.run.RunID
		}
		if oa, ob := a.order(), b.order(); oa != ob {
			return oa < ob
		}
		return a.ti.MapIndex < b.ti.MapIndex
	})
	ps.enqueueAll(ready)
}

// enqueueAll queues the ready tasks in order, all in a few statements (Tx.InsertEntries); an
// entry a pool refuses (max_queued, §4.6) is queued and rejected at once.
func (ps *pass) enqueueAll(ready []readyTask) {
	if len(ready) == 0 {
		return
	}
	ready = ps.renderReady(ready)
	if len(ready) == 0 {
		return
	}
	queued := ps.queuedPerPool()
	entries := make([]store.Entry, len(ready))
	refusals := make([]*pools.Refusal, len(ready))
	batch := make([]*store.Entry, len(ready))
	for i, r := range ready {
		ps.reserveLine(r.line)
		entries[i] = ps.newEntry(r)
		refusals[i] = ps.refusal(entries[i].Needs, queued)
		if refusals[i] == nil {
			for _, n := range entries[i].Needs {
				queued[n.Pool]++
			}
		}
		batch[i] = &entries[i]
	}
	ps.p.add(InsertEntries{batch})
	for i, r := range ready {
		ps.queued(r, entries[i], refusals[i])
	}
}

// clockDue puts on the run's frontier the tasks whose time came: a retry, an approval timeout,
// a sensor's poke or timeout.
func (ps *pass) clockDue(run *state.Run) {
	for ti := range run.Timers {
		if w := clockWake(ti); !w.IsZero() && !ps.now.Before(w) {
			run.PushTI(ti)
		}
	}
}

// clockWake is when a task instance waiting on a clock needs the loop next; zero for none.
func clockWake(ti *state.TI) time.Time {
	switch ti.State {
	case vocab.TaskUpForRetry:
		return ti.NextAt
	case vocab.TaskAwaitingApproval:
		return gateDeadline(ti)
	case vocab.TaskScheduled, vocab.TaskUpForReschedule:
		return sensorWake(ti)
	}
	return time.Time{}
}

// advance evaluates the run's frontier in dependency order, so a skip or failure propagates
// through the run in one pass: a task that becomes skipped puts its downstream tasks on the
// frontier behind it.
func (ps *pass) advance(run *state.Run) []readyTask {
	var ready []readyTask
	for run.FrontierLen() > 0 {
		ti := run.Pop()
		if ti == nil || ti.Task == nil {
			continue
		}
		ps.p.Walked++
		if ti.Task.Mapped() {
			ready = append(ready, ps.advanceMapped(run, ti)...)
			continue
		}
		switch ti.State {
		case vocab.TaskNone:
			switch next := dag.TriggerCounted(ti.Task.TriggerRule, ps.upStates(run, ti)); next {
			case vocab.TaskScheduled:
				if ti.Task.Kind == dag.KindApproval {
					ps.openGate(ti)
					continue
				}
				ready = append(ready, readyTask{run: run, ti: ti, try: ti.TryNumber + 1})
			case vocab.TaskSkipped, vocab.TaskUpstreamFailed:
				ti.State = next
				ti.ReasonCode, ti.Reason = "", fmt.Sprintf("%s: trigger rule %s", next, ti.Task.TriggerRule)
				ps.st.Touch(ti)
			}
		case vocab.TaskUpForRetry:
			if !ps.now.Before(ti.NextAt) {
				ready = append(ready, readyTask{run: run, ti: ti, try: ti.TryNumber + 1})
			}
		case vocab.TaskAwaitingApproval:
			ps.checkGateTimeout(run, ti)
		case vocab.TaskScheduled, vocab.TaskUpForReschedule:
			ps.sensorDue(ti)
		}
	}
	return ready
}

// queuedPerPool counts waiting entries per pool (every daemon's), for max_queued.
func (ps *pass) queuedPerPool() map[string]int {
	out := map[string]int{}
	limited := false
	for _, p := range ps.st.Pools {
		limited = limited || p.MaxQueued > 0
	}
	if !limited {
		return out
	}
	ps.st.SyncEntries() // the admission queue holds every waiting entry, this owner's and others'
	q := ps.st.Queue()
	for _, p := range ps.st.Pools {
		if p.MaxQueued > 0 {
			out[p.Name] = q.Waiting(p.Name)
		}
	}
	return out
}

// newEntry is the queue entry of a ready task with its requirements and limits, and the next
// queue ID of the store.
func (ps *pass) newEntry(r readyTask) store.Entry {
	run, ti := r.run, r.ti
	needs, rule := ps.requirements(run, ti, r.try, r.pools)
	if slices.Equal(needs, run.LastNeeds) {
		// Most entries of a run need the same pools: they share one slice, which no one writes
		// (loads and shared runs build new ones). 120 bytes per waiting entry.
		needs = run.LastNeeds
	} else {
		run.LastNeeds = needs
	}
	var id int64
	if r.line != nil {
		id = r.line.MapFirst + int64(ti.MapIndex)
	} else {
		id = ps.st.NextEntryID
		ps.st.NextEntryID++
	}
	e := store.Entry{ID: id, Run: run.PK, TaskID: ti.TaskID, TryNumber: r.try,
		Label: label(run.DAGID, ti.TaskID, r.try), Priority: run.Weights[ti.TaskKey()], Due: r.due(), State: vocab.EntryWaiting,
		Rule: rule.rule, RuleSkipped: rule.skipped, CreatedAt: ps.now, Needs: needs, Owner: ps.cfg.DaemonID, DAGID: run.DAGID, RunID: run.RunID,
		RunType: run.RunType, Fingerprint: ti.Fingerprint(), Backfill: run.Backfill}
	if qt := ti.Task.QueueTimeout; qt > 0 {
		// Counted from the due time, or from when the entry joined the queue if that is later:
		// a retry keeps its run's due time for ordering, but must get its own time to wait.
		from := e.Due
		if ps.now.After(from) {
			from = ps.now
		}
		e.Deadline = from.Add(qt)
	}
	return e
}

// queued takes a newly inserted entry into memory and the queue, or, when a pool refused it
// (backlog full, draining, more slots than the pool has), rejects it: a rejected entry is a
// failed attempt (§4.6) whose warning and notice name the pool that refused it.
func (ps *pass) queued(r readyTask, e store.Entry, refusal *pools.Refusal) {
	run, ti := r.run, r.ti
	if refusal != nil {
		ps.p.add(EndEntry{e.ID, vocab.EntryRejected, vocab.ReasonRejected, refusal.Msg})
		if run.DAG.IsJob && run.RunType.Fired() {
			ps.p.warn(fmt.Sprintf("Job %s could not enter pool %s: %s", run.DAGID, refusal.Pool, refusal.Msg))
		} else {
			ps.p.warn("entry rejected", keyDAG, run.DAGID, keyRun, run.RunID, keyTask, ti.TaskID, keyPool, refusal.Pool,
				"reason", refusal.Msg)
		}
		ti.StartDate, ti.EndDate = time.Time{}, time.Time{}
		ps.schedEvent(vocab.ActionRejected, run, ti.TaskID, r.try, refusal.Pool, refusal.Msg)
		ps.notify(Notice{Kind: NoticeRejected, DAGID: run.DAGID, RunID: run.RunID, TaskID: ti.TaskID, Try: r.try,
			Reason: refusal.Msg, Pool: refusal.Pool})
		ps.failAttempt(run, ti, r.try, vocab.ReasonRejected, refusal.Msg, ps.now, false)
		return
	}
	ps.st.AddEntry(&state.Entry{Entry: e, Run: run, TI: ti})
	ti.State, ti.NextAt = vocab.TaskScheduled, time.Time{}
	ps.st.Touch(ti)
}

// refusal is the refusal of the pool that refuses a new entry (pools.CheckEntry), or nil. A
// pool that does not exist yet refuses nothing: the entry waits with reason unknown_pool.
func (ps *pass) refusal(needs []store.Requirement, queued map[string]int) *pools.Refusal {
	return pools.CheckEntry(toNeeds(needs), func(name string) (pools.Backlog, bool) {
		sp, ok := ps.st.Pools[name]
		if !ok {
			return pools.Backlog{}, false
		}
		draining := sp.OnResize == vocab.ResizeDrain && sp.TargetSlots != store.NoTarget
		return pools.Backlog{Spec: storeSpec(sp), Queued: queued[name], Draining: draining}, true
	})
}

// requirements are the attempt's requirement rows (explain.Requirements: the task's, else the
// first matching rule's, else {default: 1}, plus the limits) and the rule that assigned them.
func (ps *pass) requirements(run *state.Run, ti *state.TI, try int, named map[string]int) ([]store.Requirement, assignment) {
	var rule assignment
	needs := explain.Requirements(run.DAG, ti.Task, named, run.RunID, run.DAGPool, ps.Settings.MaxRunning, func() (string, int) {
		rule = ps.assign(run, ti, try)
		return rule.pool, rule.slots
	})
	return ps.backfillCaps(run, needs), rule
}

func storeSpec(p store.Pool) pools.Spec {
	return pools.Spec{Name: p.Name, Slots: p.Slots, MaxQueued: p.MaxQueued, Ordering: p.Ordering,
		StarvationAfter: p.StarvationAfter, IncludeDeferred: p.IncludeDeferred, OnResize: p.OnResize,
		Description: p.Description, Source: p.Source}
}

func toNeeds(rs []store.Requirement) []pools.Need {
	out := make([]pools.Need, len(rs))
	for i, r := range rs {
		out[i] = pools.Need{Pool: r.Pool, Slots: r.Slots}
	}
	return out
}
