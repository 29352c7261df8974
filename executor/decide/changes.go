package decide

import (
	"sort"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// applyChanges reconciles the open runs with DAG definitions that changed on disk (§3.5): a
// task added to a DAG gets its task instance; a removed task retires its waiting entry and fails
// (nothing runs, nothing is retried); a changed task's waiting entry is retired and queued again
// with the new requirements, keeping its due time and try number. Running attempts finish.
func (ps *pass) applyChanges() {
	for _, run := range ps.st.Runs {
		if run.DAG == nil || run.Away || run.Shared {
			continue // the whole DAG is gone (retireRemoved ends the run), or the run is another owner's
		}
		for _, t := range run.DAG.Tasks {
			if _, ok := run.TIs[t.ID]; ok {
				continue
			}
			ti := &state.TI{TaskInstance: store.TaskInstance{Run: run.PK, TaskID: t.ID, State: vocab.TaskNone}, Task: t}
			run.Add(ti)
			ps.st.Touch(ti)
		}
		for _, ti := range run.TIs {
			if ti.Task != nil || ti.State.Terminal() {
				continue
			}
			if le := ti.Entry; le != nil && le.State == vocab.EntryWaiting {
				ps.retire(le, "task removed from the DAG")
			}
			if ti.State != vocab.TaskRunning {
				ti.State, ti.ReasonCode, ti.Reason, ti.NextAt = vocab.TaskFailed, "", "task removed from the DAG", time.Time{}
				ps.st.Touch(ti)
			}
		}
	}
	var requeue []readyTask
	var order []int64 // the retired entries' queue IDs: queued again in the same order
	for _, le := range ps.st.Entries {
		ti := le.TI
		if le.State != vocab.EntryWaiting || le.Away || le.Run.Shared || ti == nil || ti.Task == nil || le.Fingerprint == ti.Fingerprint() {
			continue
		}
		if len(le.Kept) > 0 {
			continue // a sensor between pokes keeps its claims until its attempt ends
		}
		ps.p.info("task definition changed; queued again", keyDAG, le.Run.DAGID, keyRun, le.Run.RunID, keyTask, ti.TaskID)
		ps.retire(le, "task definition changed")
		requeue = append(requeue, readyTask{run: le.Run, ti: ti, try: le.TryNumber})
		order = append(order, le.ID)
	}
	sort.Sort(byKeys{order, requeue})
	ps.enqueueAll(requeue)
}

// byKeys sorts ready tasks by the queue IDs of the entries they replace.
type byKeys struct {
	ids   []int64
	tasks []readyTask
}

func (b byKeys) Len() int           { return len(b.ids) }
func (b byKeys) Less(i, j int) bool { return b.ids[i] < b.ids[j] }
func (b byKeys) Swap(i, j int) {
	b.ids[i], b.ids[j] = b.ids[j], b.ids[i]
	b.tasks[i], b.tasks[j] = b.tasks[j], b.tasks[i]
}

// retire ends a waiting entry without it counting as an attempt.
func (ps *pass) retire(le *state.Entry, reason string) {
	ps.p.add(EndEntry{le.ID, vocab.EntryRetired, vocab.ReasonRetired, reason})
	ps.st.Release(le.ID)
	ps.st.DropEntry(le)
}

// retireJobRetries ends the queued retries of a job's older runs when a newer fire is created
// or a run of the job succeeds (§3.3): they fail with no further attempt.
func (ps *pass) retireJobRetries(g *dag.DAG, newer *state.Run, why string) {
	if g == nil || !g.IsJob {
		return
	}
	for _, run := range ps.st.Runs {
		if run.DAGID != g.ID || run.PK >= newer.PK || run.Away || run.Shared {
			continue
		}
		for _, ti := range run.TIs {
			retrying := ti.State == vocab.TaskUpForRetry ||
				(ti.State == vocab.TaskScheduled && ti.Entry != nil && ti.Entry.TryNumber > 1)
			if retrying {
				_ = ps.markFailed(run, ti, why)
			}
		}
	}
}
