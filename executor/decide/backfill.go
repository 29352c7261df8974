package decide

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/poolflow/poolflow/backfill"
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Backfills (§11): a pass of the daemon that drives a backfill takes its next dates while
// fewer than its max_active_runs of its runs are open — a new backfill run for a date with no
// run, a clear (§10.1) of an ended run that its reprocess behaviour asks for, a skip otherwise
// — and writes what it did (a BackfillStep op) in the same transaction as the runs it created
// or cleared: a date is taken once, whatever daemon drives the backfill after a crash.

// BackfillClearRuns bounds, per backfill and pass, the ended runs read for a clear: a pass
// clears at most max_active_runs of them.
func BackfillClearRuns(b store.Backfill) int { return b.MaxActiveRuns }

// BackfillTodoLimit is how many pending dates of each open backfill a pass reads.
const BackfillTodoLimit = 64

// WantsClear reports whether a backfill with reprocess r clears an ended run in state s.
func WantsClear(r vocab.Reprocess, s vocab.RunState) bool { return backfill.WantsClear(r, s) }

// backfills takes the dates of the open backfills this daemon drives.
func (ps *pass) backfills() {
	if !ps.serve() {
		return
	}
	for i := range ps.in.Backfills {
		w := &ps.in.Backfills[i]
		b := w.Backfill
		if b.Owner != "" && b.Owner != ps.cfg.DaemonID && ps.st.View.IsAlive(b.Owner) {
			continue // another live daemon drives it
		}
		step := store.BackfillStep{ID: b.ID, From: b.Owner, To: ps.cfg.DaemonID}
		open := ps.backfillOpenRuns(b.ID)
		switch {
		case b.State == vocab.BackfillCancelling:
			ps.cancelBackfill(b, open)
			step.State = vocab.BackfillCancelled
		case b.Paused:
			continue
		default:
			n := len(open)
			for _, td := range w.Todo {
				if n >= b.MaxActiveRuns {
					break
				}
				d, took := ps.takeDate(b, td)
				step.Dates = append(step.Dates, d)
				if took {
					n++
				}
			}
			if len(step.Dates) == w.Pending && n == 0 {
				step.State = vocab.BackfillCompleted
				ps.p.info("backfill completed", keyDAG, b.DAGID, "backfill", b.ID)
			}
		}
		if len(step.Dates) == 0 && step.State == "" && b.Owner == ps.cfg.DaemonID {
			continue // nothing to write
		}
		ps.p.add(BackfillStep{step})
	}
}

// backfillOpenRuns are the open runs of a backfill, every owner's (§9).
func (ps *pass) backfillOpenRuns(id int64) []store.Run {
	var out []store.Run
	for _, r := range ps.st.Runs {
		if r.Backfill == id && r.State.Open() {
			out = append(out, r.Run)
		}
	}
	for _, r := range ps.st.Others {
		if r.Backfill == id && r.State.Open() {
			out = append(out, r)
		}
	}
	return out
}

// takeDate decides one pending date of a backfill: it reports what it did and whether that
// made a run of the backfill open (created or cleared).
func (ps *pass) takeDate(b store.Backfill, td store.BackfillTodo) (store.BackfillDate, bool) {
	d := td.Date
	ex := td.Existing
	g := ps.DAG(b.DAGID)
	switch {
	case g == nil:
		d.Action, d.Reason = vocab.BackfillSkipped, "dag "+b.DAGID+" is not loaded (removed, or invalid)"
		return d, false
	case ex.PK == 0:
		var conf map[string]any
		if b.Conf != "" {
			_ = json.Unmarshal([]byte(b.Conf), &conf) // checked when the backfill was created
		}
		r, err := ps.runRecord(g, vocab.RunBackfill, d.LogicalDate, "", conf, "", false)
		if err != nil {
			d.Action, d.Reason = vocab.BackfillSkipped, err.Error()
			return d, false
		}
		r.Backfill = b.ID
		run := ps.newRun(g, r)
		d.Action, d.Run = vocab.BackfillCreated, run.PK
		return d, true
	case ex.State.Open():
		d.Action, d.Run, d.Reason = vocab.BackfillSkipped, ex.PK, fmt.Sprintf("run %s is %s", ex.RunID, ex.State)
		return d, false
	case !WantsClear(b.Reprocess, ex.State):
		d.Action, d.Run = vocab.BackfillSkipped, ex.PK
		d.Reason = fmt.Sprintf("run %s exists (%s); reprocess %s", ex.RunID, ex.State, b.Reprocess)
		return d, false
	}
	if err := ps.backfillClear(b, ex); err != nil {
		d.Action, d.Run, d.Reason = vocab.BackfillSkipped, ex.PK, "not cleared: "+err.Error()
		return d, false
	}
	d.Action, d.Run = vocab.BackfillCleared, ex.PK
	d.Reason = fmt.Sprintf("run %s was %s; reprocess %s", ex.RunID, ex.State, b.Reprocess)
	return d, true
}

// backfillClear clears an ended run for a backfill (§10.1, as a person's clear does: reprocess
// failed clears its failed and upstream_failed tasks, completed every task) and makes the run
// the backfill's; its audit event says which backfill cleared it.
func (ps *pass) backfillClear(b store.Backfill, ex store.Run) error {
	cr := ps.in.BackfillRuns[ex.PK]
	if cr == nil {
		return fmt.Errorf("%w: run %s was not read", store.ErrConflict, ex.RunID)
	}
	g := ps.DAG(ex.DAGID)
	run := state.NewRun(cr.Run, g)
	for _, row := range cr.TIs {
		run.Add(&state.TI{TaskInstance: row, Task: g.Task(row.TaskID)})
	}
	p := store.ClearParams{OnlyFailed: b.Reprocess == vocab.ReprocessFailed}
	who := fmt.Sprintf("backfill %d", b.ID)
	n := 0
	for _, ti := range run.InOrder() {
		if ti.Task == nil || !explain.Clears(p, ti.State) {
			continue
		}
		if err := ps.setTask(run, ti, vocab.TaskNone, vocab.ReasonCleared, "cleared by "+who); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("run %s has no task to clear", ex.RunID)
	}
	run.Backfill = b.ID
	ps.reopen(run)
	params, _ := json.Marshal(map[string]any{"backfill_id": b.ID, "only_failed": p.OnlyFailed})
	ps.p.add(Event{store.Event{At: ps.now, Actor: vocab.ActorScheduler + ":" + ps.cfg.DaemonID, Action: vocab.ActionClear,
		DAGID: ex.DAGID, RunID: ex.RunID, Params: string(params), Outcome: "ok"}})
	return nil
}

// cancelBackfill cancels a backfill's open runs (§11): a run not started yet fails; a running
// one's waiting and not yet ready tasks fail, and its running attempts finish.
func (ps *pass) cancelBackfill(b store.Backfill, open []store.Run) {
	reason := fmt.Sprintf("backfill %d cancelled", b.ID)
	for _, r := range open {
		run := ps.st.Runs[r.PK]
		if run == nil || run.Away || run.Shared {
			continue // another daemon's: it fails when its tasks end; nothing new is created
		}
		if run.State == vocab.RunQueued {
			for _, ti := range run.TIs {
				if !ti.State.Terminal() {
					ps.becomes(ti, vocab.TaskFailed, "", reason)
				}
			}
			run.State, run.EndDate, run.ReasonCode, run.Reason = vocab.RunFailed, ps.now, "", reason
			ps.end(run)
			continue
		}
		for _, ti := range run.InOrder() {
			if ti.State.Terminal() || ti.State == vocab.TaskRunning {
				continue
			}
			if err := ps.setTask(run, ti, vocab.TaskFailed, "", reason); err != nil {
				ps.p.warn("backfill cancel: a task could not be failed", keyDAG, run.DAGID, keyRun, run.RunID, keyTask,
					ti.TaskID, "err", err)
			}
		}
		ps.setRunReason(run, reason+"; its running attempts finish")
	}
	params, _ := json.Marshal(map[string]any{"backfill_id": b.ID, "state": vocab.BackfillCancelled, "open_runs": len(open)})
	ps.p.add(Event{store.Event{At: ps.now, Actor: vocab.ActorScheduler + ":" + ps.cfg.DaemonID, Action: vocab.ActionBackfill,
		DAGID: b.DAGID, Params: string(params), Outcome: "ok"}})
}

// backfillCaps adds to the requirements of a backfill run's attempt its backfill's share of
// each pool it caps (max_slots, §11): an implicit pool _backfill/<id>/<pool> of that capacity,
// needing as many slots as the pool itself, so admission debits both in one step (§4.3).
func (ps *pass) backfillCaps(run *state.Run, needs []store.Requirement) []store.Requirement {
	if run.Backfill == 0 {
		return needs
	}
	var caps map[string]int
	for _, w := range ps.in.Backfills {
		if w.Backfill.ID == run.Backfill {
			caps = w.Backfill.MaxSlots
		}
	}
	if len(caps) == 0 {
		return needs
	}
	n := len(needs)
	for _, r := range needs[:n] {
		if c, ok := caps[r.Pool]; ok && !r.Implicit {
			needs = append(needs, store.Requirement{Pool: pools.BackfillCap(run.Backfill, r.Pool), Slots: r.Slots,
				Implicit: true, Capacity: c})
		}
	}
	if len(needs) > n {
		sort.Slice(needs, func(i, j int) bool { return needs[i].Pool < needs[j].Pool })
	}
	return needs
}
