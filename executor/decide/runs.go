package decide

import (
	"sort"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Runs as wholes: starting queued runs under max_active_runs and the concurrency policy (counted
// across owners, §9), replacing, ending, and retiring the runs of removed DAGs.

// startQueuedRuns starts queued runs while their DAG's max_active_runs allows (a test run
// always starts), applying the concurrency policy of scheduled runs (§3.5): forbid keeps the new
// run queued while a previous run is active; replace cancels the previous run's unfinished tasks.
// Active runs are counted across every owner (§9), but for an every_node DAG's runs, which are
// each daemon's own instance of the job: only the daemon's.
func (ps *pass) startQueuedRuns() {
	active := map[string][]*state.Run{}
	var queued []*state.Run
	for _, run := range ps.st.Runs {
		switch {
		case run.State == vocab.RunRunning && run.Backfill != 0:
			// A backfill's runs count toward its own max_active_runs, never the DAG's (§11):
			// a backfill does not hold back the schedule's fresh runs.
		case run.State == vocab.RunRunning:
			active[run.DAGID] = append(active[run.DAGID], run)
		case run.State == vocab.RunQueued && !run.Away && !run.Shared:
			queued = append(queued, run)
		}
	}
	for _, r := range ps.st.Others {
		// A dags test run ignores max_active_runs (§3.5), and does not count toward it.
		if r.State == vocab.RunRunning && r.RunType != vocab.RunTest && r.Backfill == 0 {
			active[r.DAGID] = append(active[r.DAGID], &state.Run{Run: r, Away: true})
		}
	}
	sort.Slice(queued, func(i, j int) bool { return queued[i].PK < queued[j].PK })
	for _, run := range queued {
		if run.DAG == nil {
			continue
		}
		switch {
		case run.Backfill != 0:
			// Its backfill created or cleared it within its own max_active_runs; like every run
			// of a paused DAG it waits while the DAG is paused.
			if ps.st.DAGStates[run.DAGID].Paused {
				continue
			}
		case run.RunType != vocab.RunTest:
			scheduled := run.RunType.Fired()
			if ps.st.DAGStates[run.DAGID].Paused && scheduled {
				continue
			}
			prev := active[run.DAGID]
			if run.DAG.EveryNode {
				prev = sameOwner(prev, run.Owner)
			}
			if scheduled && len(prev) > 0 {
				switch run.DAG.ConcurrencyPolicy {
				case dag.PolicyForbid:
					ps.setRunReason(run, "forbid: waits for the previous run "+prev[0].RunID)
					continue
				case dag.PolicyReplace:
					if ps.replacePrevious(run, prev) {
						continue
					}
					prev = nil
				}
			}
			if len(prev) >= run.DAG.MaxActiveRuns {
				continue
			}
		}
		run.State, run.StartDate, run.ReasonCode, run.Reason = vocab.RunRunning, ps.now, "", ""
		ps.started = append(ps.started, run)
		if run.Backfill == 0 {
			active[run.DAGID] = append(active[run.DAGID], run)
		}
		ps.st.TouchRun(run)
	}
}

// sameOwner keeps the runs of one owner.
func sameOwner(runs []*state.Run, owner string) []*state.Run {
	var out []*state.Run
	for _, r := range runs {
		if r.Owner == owner {
			out = append(out, r)
		}
	}
	return out
}

// replacePrevious stops the previous runs of a run whose DAG's policy is replace. Runs this
// daemon holds are replaced at once; a run another live daemon runs gets a replace command for
// its owner, and the new run waits (reported true) until that run has ended.
func (ps *pass) replacePrevious(run *state.Run, prev []*state.Run) bool {
	waiting := false
	for _, old := range prev {
		if mine, ok := ps.st.Runs[old.PK]; ok && !mine.Away && !mine.Shared {
			if err := ps.replaceRun(mine); err != nil {
				ps.p.warn("replace: a task of the previous run could not be stopped yet", keyDAG, old.DAGID,
					keyRun, old.RunID, "err", err)
			}
			continue
		}
		waiting = true
		ps.p.add(EnsureCommand{store.Command{Kind: vocab.CommandReplace, Run: old.PK, Who: "poolflow", Note: "replaced by " + run.RunID}})
		ps.setRunReason(run, "replace: waits for "+orDefault(old.Owner, "its owner")+" to stop the previous run "+old.RunID)
	}
	return waiting
}

func (ps *pass) setRunReason(run *state.Run, reason string) {
	if run.ReasonCode == "" && run.Reason == reason {
		return
	}
	run.ReasonCode, run.Reason = "", reason
	ps.st.TouchRun(run)
}

// replaceRun fails every unfinished task of a run replaced by a newer fire (reason replaced):
// waiting entries are retired, running attempts are stopped, no retry follows.
func (ps *pass) replaceRun(run *state.Run) error {
	var first error
	for _, ti := range run.InOrder() {
		if ti.State.Terminal() {
			continue
		}
		if err := ps.markFailed(run, ti, "replaced"); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// endRuns ends every run in which no task can change state (§3.1).
func (ps *pass) endRuns() {
	for _, run := range ps.st.Runs {
		if run.DAG == nil || run.State != vocab.RunRunning || run.Shared {
			continue
		}
		if !run.AllTerminal() {
			continue
		}
		states := make(map[string]vocab.TaskState, len(run.TIs))
		for id, ti := range run.TIs {
			states[id] = ti.State
		}
		ended, st := dag.RunEndState(run.DAG, states)
		if !ended {
			continue
		}
		if to, marked := run.ReasonCode.StopsTo(); marked {
			// A person marked the run (§10.2): it ends as asked, whatever its leaves say.
			st, run.ReasonCode = vocab.RunState(to), vocab.ReasonMarked
		}
		if run.ReasonCode == vocab.ReasonDagrunTimeout {
			st = vocab.RunFailed // its skipped leaves would say success
		}
		run.State, run.EndDate = st, ps.now
		ps.end(run)
	}
}

// end records that a run ended in this pass: its row is written, memory forgets it, and the
// daemon tells who waits for it. A backfill's run ending makes the next pass take its
// backfill's next date at once.
func (ps *pass) end(run *state.Run) {
	if run.Backfill != 0 {
		ps.p.Wake = true
	}
	ps.st.TouchRun(run)
	ps.st.RemoveRun(run)
	ps.p.Ended = append(ps.p.Ended, run)
	ps.p.info("run ended", keyDAG, run.DAGID, keyRun, run.RunID, "state", run.State)
	ps.notify(Notice{Kind: NoticeRunEnded, DAGID: run.DAGID, RunID: run.RunID, State: string(run.State),
		Reason: run.ReasonCode.Say(run.Reason)})
	ps.tellRunEnd(run)
}

// retireRemoved ends the open runs whose DAG was removed or became invalid (§3.5): waiting
// entries are retired (nothing runs, nothing is retried), unfinished tasks fail. A run with a
// running attempt stays tracked until that attempt ends (§9): its end is recorded and its
// claims released like any other, then the run fails.
func (ps *pass) retireRemoved() {
	for _, run := range ps.st.Runs {
		if run.DAG != nil || run.Away || run.Shared {
			continue // a dead owner's bound run, or a live one's shared run, is its owner's to retire
		}
		const reason = "dag removed"
		running := false
		for _, ti := range run.TIs {
			if le := ti.Entry; le != nil && le.State == vocab.EntryWaiting {
				ps.p.add(EndEntry{le.ID, vocab.EntryRetired, vocab.ReasonRetired, reason})
				ps.st.Release(le.ID)
				ps.st.DropEntry(le)
			}
			if le := ti.Entry; le != nil && le.State == vocab.EntryAdmitted {
				running = true
				continue
			}
			if !ti.State.Terminal() {
				ti.State, ti.ReasonCode, ti.Reason, ti.NextAt = vocab.TaskFailed, "", reason, time.Time{}
				ps.st.Touch(ti)
			}
		}
		if running {
			ps.setRunReason(run, reason+"; its running attempts finish")
			continue
		}
		run.State, run.EndDate, run.ReasonCode, run.Reason = vocab.RunFailed, ps.now, "", reason
		ps.end(run)
	}
}
