package executor

import (
	"sort"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Runs as wholes: starting queued runs under max_active_runs and the concurrency policy (counted
// across owners, §9), replacing, ending, and retiring the runs of removed DAGs.

// startQueuedRuns starts queued runs while their DAG's max_active_runs allows (a test run
// always starts), applying the concurrency policy of scheduled runs (§3.5): forbid keeps the new
// run queued while a previous run is active; replace cancels the previous run's unfinished tasks.
// Active runs are counted across every owner (§9).
func (l *loop) startQueuedRuns(tx store.Tx, p *passState) error {
	active := map[string][]*liveRun{}
	var queued []*liveRun
	for _, run := range l.runs {
		switch {
		case run.State == vocab.RunRunning:
			active[run.DAGID] = append(active[run.DAGID], run)
		case run.State == vocab.RunQueued && !run.away && !run.shared:
			queued = append(queued, run)
		}
	}
	for _, r := range l.others {
		// A dags test run ignores max_active_runs (§3.5), and does not count toward it.
		if r.State == vocab.RunRunning && r.RunType != vocab.RunTest {
			active[r.DAGID] = append(active[r.DAGID], &liveRun{Run: r, away: true})
		}
	}
	sort.Slice(queued, func(i, j int) bool { return queued[i].PK < queued[j].PK })
	for _, run := range queued {
		if run.dag == nil {
			continue
		}
		if run.RunType != vocab.RunTest {
			scheduled := run.RunType.LeaderOwned()
			if l.dagStates[run.DAGID].Paused && scheduled {
				continue
			}
			prev := active[run.DAGID]
			if scheduled && len(prev) > 0 {
				switch run.dag.ConcurrencyPolicy {
				case dag.PolicyForbid:
					if err := l.setRunReason(tx, run, "forbid: waits for the previous run "+prev[0].RunID); err != nil {
						return err
					}
					continue
				case dag.PolicyReplace:
					waiting, err := l.replacePrevious(tx, p, run, prev)
					if err != nil {
						return err
					}
					if waiting {
						continue
					}
					prev = nil
				}
			}
			if len(prev) >= run.dag.MaxActiveRuns {
				continue
			}
		}
		run.State, run.StartDate, run.ReasonCode, run.Reason = vocab.RunRunning, p.now, "", ""
		p.started = append(p.started, run)
		active[run.DAGID] = append(active[run.DAGID], run)
		if err := tx.UpdateRun(&run.Run); err != nil {
			return err
		}
	}
	return nil
}

// replacePrevious stops the previous runs of a run whose DAG's policy is replace. Runs this
// daemon holds are replaced at once; a run another live daemon runs gets a replace command for
// its owner, and the new run waits (reported true) until that run has ended.
func (l *loop) replacePrevious(tx store.Tx, p *passState, run *liveRun, prev []*liveRun) (bool, error) {
	waiting := false
	for _, old := range prev {
		if mine, ok := l.runs[old.PK]; ok && !mine.away && !mine.shared {
			if err := l.replaceRun(tx, p, mine); err != nil {
				return false, err
			}
			continue
		}
		waiting = true
		sent, err := tx.HasPendingCommand(old.PK, vocab.CommandReplace)
		if err != nil {
			return false, err
		}
		if !sent {
			if err := tx.InsertCommand(&store.Command{Kind: vocab.CommandReplace, Run: old.PK, Who: "poolflow",
				Note: "replaced by " + run.RunID}, p.now); err != nil {
				return false, err
			}
		}
		if err := l.setRunReason(tx, run, "replace: waits for "+orDefault(old.Owner, "its owner")+
			" to stop the previous run "+old.RunID); err != nil {
			return false, err
		}
	}
	return waiting, nil
}

func (l *loop) setRunReason(tx store.Tx, run *liveRun, reason string) error {
	if run.ReasonCode == "" && run.Reason == reason {
		return nil
	}
	run.ReasonCode, run.Reason = "", reason
	return tx.UpdateRun(&run.Run)
}

// replaceRun fails every unfinished task of a run replaced by a newer fire (reason replaced):
// waiting entries are retired, running attempts are stopped, no retry follows.
func (l *loop) replaceRun(tx store.Tx, p *passState, run *liveRun) error {
	for _, ti := range run.inOrder() {
		if ti.State.Terminal() {
			continue
		}
		if err := l.markFailed(tx, p, run, ti, "replaced"); err != nil {
			return err
		}
	}
	return nil
}

// endRuns ends every run in which no task can change state (§3.1).
func (l *loop) endRuns(tx store.Tx, p *passState) error {
	for pk, run := range l.runs {
		if run.dag == nil || run.State != vocab.RunRunning || run.shared {
			continue
		}
		if !allTerminal(run) {
			continue
		}
		states := make(map[string]vocab.TaskState, len(run.tis))
		for id, ti := range run.tis {
			states[id] = ti.State
		}
		ended, st := dag.RunEndState(run.dag, states)
		if !ended {
			continue
		}
		run.State, run.EndDate = st, p.now
		if err := tx.UpdateRun(&run.Run); err != nil {
			return err
		}
		delete(l.runs, pk)
		p.ended = append(p.ended, run)
	}
	return nil
}

// retireRemoved ends the open runs whose DAG was removed or became invalid (§3.5): waiting
// entries are retired (nothing runs, nothing is retried), unfinished tasks fail. A run with a
// running attempt stays tracked until that attempt ends (§9): its end is recorded and its
// claims released like any other, then the run fails.
func (l *loop) retireRemoved(tx store.Tx, p *passState) error {
	for pk, run := range l.runs {
		if run.dag != nil || run.away || run.shared {
			continue // a dead owner's bound run, or a live one's shared run, is its owner's to retire
		}
		const reason = "dag removed"
		running := false
		for _, ti := range run.tis {
			if le := ti.entry; le != nil && le.State == vocab.EntryWaiting {
				if err := tx.EndEntry(le.ID, vocab.EntryRetired, vocab.ReasonRetired, reason, p.now); err != nil {
					return err
				}
				l.dropEntry(le.ID)
				ti.entry = nil
			}
			if le := ti.entry; le != nil && le.State == vocab.EntryAdmitted {
				running = true
				continue
			}
			if !ti.State.Terminal() {
				ti.State, ti.ReasonCode, ti.Reason, ti.NextAt = vocab.TaskFailed, "", reason, time.Time{}
				l.touch(p, ti)
			}
		}
		if running {
			if run.ReasonCode != "" || run.Reason != reason+"; its running attempts finish" {
				run.ReasonCode, run.Reason = "", reason+"; its running attempts finish"
				if err := tx.UpdateRun(&run.Run); err != nil {
					return err
				}
			}
			continue
		}
		run.State, run.EndDate, run.ReasonCode, run.Reason = vocab.RunFailed, p.now, "", reason
		if err := tx.UpdateRun(&run.Run); err != nil {
			return err
		}
		delete(l.runs, pk)
		p.ended = append(p.ended, run)
	}
	return nil
}

// allTerminal is the cheap test before RunEndState: no task instance is open.
func allTerminal(run *liveRun) bool { return run.open == 0 }
