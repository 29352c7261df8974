package executor

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// readyTask is a task instance that becomes ready in this pass and needs a queue entry.
type readyTask struct {
	run *liveRun
	ti  *liveTI
	try int
}

// advanceAll moves every changed run forward: queued runs start when max_active_runs allows,
// trigger rules turn finished upstream tasks into ready (or skipped, upstream_failed) ones, due
// retries come back, and every task that became ready is queued before the pass admits (§4.4).
func (l *loop) advanceAll(tx store.Tx, p *passState) error {
	if err := l.startQueuedRuns(tx, p); err != nil {
		return err
	}
	var ready []readyTask
	for _, run := range l.runs {
		if run.State != vocab.RunRunning || run.dag == nil || run.away || run.shared {
			continue // only its owner advances a run
		}
		l.clockDue(run, p.now)
		if len(run.frontier) == 0 {
			continue
		}
		r, err := l.advance(tx, p, run)
		if err != nil {
			return err
		}
		ready = append(ready, r...)
	}
	// Queue IDs follow (due time, run_id, task order in the DAG) (§4.4).
	sort.Slice(ready, func(i, j int) bool {
		a, b := ready[i], ready[j]
		if da, db := a.run.due(), b.run.due(); !da.Equal(db) {
			return da.Before(db)
		}
		if a.run.RunID != b.run.RunID {
			return a.run.RunID < b.run.RunID
		}
		return a.ti.idx < b.ti.idx
	})
	return l.enqueueAll(tx, p, ready)
}

// enqueueAll queues the ready tasks in order, all in a few statements (Tx.InsertEntries); an
// entry a pool refuses (max_queued, §4.6) is queued and rejected at once.
func (l *loop) enqueueAll(tx store.Tx, p *passState, ready []readyTask) error {
	if len(ready) == 0 {
		return nil
	}
	queued := l.queuedPerPool()
	entries := make([]store.Entry, len(ready))
	refusals := make([]string, len(ready))
	batch := make([]*store.Entry, len(ready))
	for i, r := range ready {
		entries[i] = l.newEntry(p, r)
		refusals[i] = l.refusal(entries[i].Needs, queued)
		if refusals[i] == "" {
			for _, n := range entries[i].Needs {
				queued[n.Pool]++
			}
		}
		batch[i] = &entries[i]
	}
	if err := tx.InsertEntries(batch); err != nil {
		return err
	}
	for i, r := range ready {
		if err := l.queued(tx, p, r, entries[i], refusals[i]); err != nil {
			return err
		}
	}
	return nil
}

// clockDue puts on the run's frontier the tasks whose time came: a retry, an approval timeout,
// a sensor's poke or timeout.
func (l *loop) clockDue(run *liveRun, now time.Time) {
	for ti := range run.timers {
		if w := clockWake(ti); !w.IsZero() && !now.Before(w) && ti.idx >= 0 {
			run.push(run.layout.Pos[ti.idx])
		}
	}
}

// clockWake is when a task instance waiting on a clock needs the loop next; zero for none.
func clockWake(ti *liveTI) time.Time {
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
func (l *loop) advance(tx store.Tx, p *passState, run *liveRun) ([]readyTask, error) {
	var ready []readyTask
	for len(run.frontier) > 0 {
		ti := run.pop()
		if ti == nil || ti.task == nil {
			continue
		}
		switch ti.State {
		case vocab.TaskNone:
			up := run.layout.Up[ti.idx]
			ups := make([]vocab.TaskState, 0, len(up))
			for _, u := range up {
				if uti := run.byIdx[u]; uti != nil {
					ups = append(ups, uti.State)
				}
			}
			switch next := dag.Trigger(ti.task.TriggerRule, ups); next {
			case vocab.TaskScheduled:
				if ti.task.Kind == dag.KindApproval {
					if err := l.openGate(tx, p, run, ti); err != nil {
						return nil, err
					}
					continue
				}
				ready = append(ready, readyTask{run: run, ti: ti, try: ti.TryNumber + 1})
			case vocab.TaskSkipped, vocab.TaskUpstreamFailed:
				ti.State = next
				ti.ReasonCode, ti.Reason = "", fmt.Sprintf("%s: trigger rule %s", next, ti.task.TriggerRule)
				l.touch(p, ti)
			}
		case vocab.TaskUpForRetry:
			if !p.now.Before(ti.NextAt) {
				ready = append(ready, readyTask{run: run, ti: ti, try: ti.TryNumber + 1})
			}
		case vocab.TaskAwaitingApproval:
			if err := l.checkGateTimeout(tx, p, run, ti); err != nil {
				return nil, err
			}
		case vocab.TaskScheduled, vocab.TaskUpForReschedule:
			if err := l.sensorDue(tx, p, run, ti); err != nil {
				return nil, err
			}
		}
	}
	return ready, nil
}

// queuedPerPool counts waiting entries per pool (every daemon's), for max_queued.
func (l *loop) queuedPerPool() map[string]int {
	out := map[string]int{}
	limited := false
	for _, p := range l.pools {
		limited = limited || p.MaxQueued > 0
	}
	if !limited {
		return out
	}
	l.syncEntries() // the admission queue holds every waiting entry, this owner's and others'
	for _, p := range l.pools {
		if p.MaxQueued > 0 {
			out[p.Name] = l.queue.Waiting(p.Name)
		}
	}
	return out
}

// newEntry is the queue entry of a ready task with its requirements and limits.
func (l *loop) newEntry(p *passState, r readyTask) store.Entry {
	run, ti := r.run, r.ti
	needs, rule := l.requirements(run, ti, r.try)
	if slices.Equal(needs, run.lastNeeds) {
		// Most entries of a run need the same pools: they share one slice, which no one writes
		// (reload and shared runs build new ones). 120 bytes per waiting entry.
		needs = run.lastNeeds
	} else {
		run.lastNeeds = needs
	}
	e := store.Entry{Run: run.PK, TaskID: ti.TaskID, TryNumber: r.try, Label: label(run.DAGID, ti.TaskID, r.try),
		Priority: run.weights[ti.TaskID], Due: run.due(), State: vocab.EntryWaiting, Rule: rule, CreatedAt: p.now,
		Needs: needs, Owner: l.cfg.DaemonID, DAGID: run.DAGID, RunID: run.RunID, Fingerprint: ti.fingerprint()}
	if qt := ti.task.QueueTimeout; qt > 0 {
		// Counted from the due time, or from when the entry joined the queue if that is later:
		// a retry keeps its run's due time for ordering, but must get its own time to wait.
		from := e.Due
		if p.now.After(from) {
			from = p.now
		}
		e.Deadline = from.Add(qt)
	}
	return e
}

// queued takes a newly inserted entry into memory and the queue, or, when a pool refused it
// (backlog full, draining, more slots than the pool has), rejects it: a rejected entry is a
// failed attempt (§4.6).
func (l *loop) queued(tx store.Tx, p *passState, r readyTask, e store.Entry, refusal string) error {
	run, ti := r.run, r.ti
	if refusal != "" {
		if err := tx.EndEntry(e.ID, vocab.EntryRejected, vocab.ReasonRejected, refusal, p.now); err != nil {
			return err
		}
		if run.dag.IsJob && (run.RunType == vocab.RunSchedule || run.RunType == vocab.RunCatchup) {
			l.log.Warn(fmt.Sprintf("Job %s could not enter pool %s: %s", run.DAGID, firstPool(&liveEntry{Entry: e}), refusal))
		} else {
			l.log.Warn("entry rejected", keyDAG, run.DAGID, keyRun, run.RunID, keyTask, ti.TaskID, "reason", refusal)
		}
		ti.StartDate, ti.EndDate = time.Time{}, time.Time{}
		l.notify(p, Notice{Kind: NoticeRejected, DAGID: run.DAGID, RunID: run.RunID, TaskID: ti.TaskID, Try: r.try,
			Reason: refusal, Pool: firstPool(&liveEntry{Entry: e})})
		return l.failAttempt(tx, p, run, ti, r.try, vocab.ReasonRejected, refusal, p.now, false)
	}
	le := &liveEntry{Entry: e, run: run, ti: ti}
	l.entries[e.ID] = le
	l.queueDirty(e.ID)
	ti.entry = le
	ti.State, ti.NextAt = vocab.TaskScheduled, time.Time{}
	l.touch(p, ti)
	return nil
}

// refusal returns a pool's own message when it refuses a new entry, or "".
func (l *loop) refusal(needs []store.Requirement, queued map[string]int) string {
	for _, n := range needs {
		if n.Implicit {
			continue
		}
		sp, ok := l.pools[n.Pool]
		if !ok {
			continue // waits with reason unknown_pool until the pool exists
		}
		draining := sp.OnResize == vocab.ResizeDrain && sp.TargetSlots != store.NoTarget
		if err := pools.CheckEnqueue(storeSpec(sp), queued[n.Pool], n.Slots, draining); err != nil {
			return err.Error()
		}
	}
	return ""
}

// requirements are, first that applies: the task's pool_requirements (or legacy pool), the
// first matching rule, {default: 1}; plus the implicit limits of §4.2.
func (l *loop) requirements(run *liveRun, ti *liveTI, try int) ([]store.Requirement, string) {
	var needs []store.Requirement
	rule := ""
	if reqs := ti.task.PoolRequirements; len(reqs) > 0 {
		for pool, slots := range reqs {
			needs = append(needs, store.Requirement{Pool: pool, Slots: slots})
		}
	} else {
		pool, slots, name := l.assign(run, ti, try)
		needs = append(needs, store.Requirement{Pool: pool, Slots: slots})
		rule = name
	}
	if n := l.cfg.Settings.MaxRunning; n > 0 {
		needs = append(needs, store.Requirement{Pool: pools.GlobalPool, Slots: 1, Implicit: true, Capacity: n})
	}
	needs = append(needs, store.Requirement{Pool: run.dagPool, Slots: 1,
		Implicit: true, Capacity: run.dag.MaxActiveTasks})
	if n := ti.task.MaxActiveTIsPerDAG; n > 0 {
		needs = append(needs, store.Requirement{Pool: pools.TaskPrefix + run.DAGID + "/" + ti.TaskID, Slots: 1,
			Implicit: true, Capacity: n})
	}
	if n := ti.task.MaxActiveTIsPerDAGRun; n > 0 {
		needs = append(needs, store.Requirement{Pool: pools.TaskPrefix + run.DAGID + "/" + run.RunID + "/" + ti.TaskID,
			Slots: 1, Implicit: true, Capacity: n})
	}
	sort.Slice(needs, func(i, j int) bool { return needs[i].Pool < needs[j].Pool })
	return needs, rule
}

func storeSpec(p store.Pool) pools.Spec {
	return pools.Spec{Name: p.Name, Slots: p.Slots, MaxQueued: p.MaxQueued, Ordering: p.Ordering,
		StarvationAfter: p.StarvationAfter, IncludeDeferred: p.IncludeDeferred, OnResize: p.OnResize,
		Description: p.Description, Source: p.Source}
}
