package executor

import (
	"sort"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// applyChanges reconciles the open runs with DAG definitions that changed on disk (§3.5): a
// task added to a DAG gets its task instance; a removed task retires its waiting entry and fails
// (nothing runs, nothing is retried); a changed task's waiting entry is retired and queued again
// with the new requirements, keeping its due time and try number. Running attempts finish.
func (l *loop) applyChanges(tx store.Tx, p *passState) error {
	for _, run := range l.runs {
		if run.dag == nil || run.away || run.shared {
			continue // the whole DAG is gone (retireRemoved ends the run), or the run is another owner's
		}
		for _, t := range run.dag.Tasks {
			if _, ok := run.tis[t.ID]; ok {
				continue
			}
			ti := &liveTI{TaskInstance: store.TaskInstance{Run: run.PK, TaskID: t.ID, State: vocab.TaskNone}, task: t}
			run.add(ti)
			l.touch(p, ti)
		}
		for _, ti := range run.tis {
			if ti.task != nil || ti.State.Terminal() {
				continue
			}
			if le := ti.entry; le != nil && le.State == vocab.EntryWaiting {
				if err := l.retire(tx, p, le, "task removed from the DAG"); err != nil {
					return err
				}
			}
			if ti.State != vocab.TaskRunning {
				ti.State, ti.ReasonCode, ti.Reason, ti.NextAt = vocab.TaskFailed, "", "task removed from the DAG", time.Time{}
				l.touch(p, ti)
			}
		}
	}
	var requeue []readyTask
	var order []int64 // the retired entries' queue IDs: queued again in the same order
	for _, le := range l.entries {
		ti := le.ti
		if le.State != vocab.EntryWaiting || le.away || le.run.shared || ti == nil || ti.task == nil || le.Fingerprint == ti.fingerprint() {
			continue
		}
		if len(le.kept) > 0 {
			continue // a sensor between pokes keeps its claims until its attempt ends
		}
		l.log.Info("task definition changed; queued again", keyDAG, le.run.DAGID, keyRun, le.run.RunID, keyTask, ti.TaskID)
		if err := l.retire(tx, p, le, "task definition changed"); err != nil {
			return err
		}
		requeue = append(requeue, readyTask{run: le.run, ti: ti, try: le.TryNumber})
		order = append(order, le.ID)
	}
	sort.Sort(byKeys{order, requeue})
	return l.enqueueAll(tx, p, requeue)
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
func (l *loop) retire(tx store.Tx, p *passState, le *liveEntry, reason string) error {
	if err := tx.EndEntry(le.ID, vocab.EntryRetired, vocab.ReasonRetired, reason, p.now); err != nil {
		return err
	}
	l.dropEntry(le.ID)
	if le.ti != nil && le.ti.entry == le {
		le.ti.entry = nil
	}
	return nil
}

// retireJobRetries ends the queued retries of a job's older runs when a newer fire is created
// or a run of the job succeeds (§3.3): they fail with no further attempt.
func (l *loop) retireJobRetries(tx store.Tx, p *passState, d *dag.DAG, newer *liveRun, why string) error {
	if d == nil || !d.IsJob {
		return nil
	}
	for _, run := range l.runs {
		if run.DAGID != d.ID || run.PK >= newer.PK || run.away || run.shared {
			continue
		}
		for _, ti := range run.tis {
			retrying := ti.State == vocab.TaskUpForRetry ||
				(ti.State == vocab.TaskScheduled && ti.entry != nil && ti.entry.TryNumber > 1)
			if retrying {
				if err := l.markFailed(tx, p, run, ti, why); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
