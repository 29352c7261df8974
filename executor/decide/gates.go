package decide

import (
	"fmt"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/store"
)

// Approval gates (§5.2) have no queue entry and need no pool: a ready gate waits in
// awaiting_approval for a person, optionally until its timeout.

func (ps *pass) openGate(ti *state.TI) {
	ti.State, ti.TryNumber, ti.StartDate = string(dag.StateAwaitingApproval), 1, ps.now
	ps.st.Touch(ti)
}

func gateDeadline(ti *state.TI) time.Time {
	if ti.Task == nil || ti.Task.Approval == nil || ti.Task.Approval.Timeout <= 0 {
		return time.Time{}
	}
	return ti.StartDate.Add(ti.Task.Approval.Timeout)
}

func (ps *pass) checkGateTimeout(run *state.Run, ti *state.TI) {
	dl := gateDeadline(ti)
	if dl.IsZero() || ps.now.Before(dl) {
		return
	}
	ps.decideGate(run, ti, false, fmt.Sprintf("approval timeout %s passed", ti.Task.Approval.Timeout))
}

func (ps *pass) applyGateCommand(run *state.Run, ti *state.TI, c store.Command) error {
	if c.Kind != "approve" && c.Kind != "reject" {
		return fmt.Errorf("unknown command %q", c.Kind)
	}
	if ti.State != string(dag.StateAwaitingApproval) {
		return fmt.Errorf("%w: task %s is not awaiting approval (state %s)", store.ErrConflict, ti.TaskID, ti.State)
	}
	who := c.Who
	if who == "" {
		who = "anonymous"
	}
	verb := "approved"
	if c.Kind == "reject" {
		verb = "rejected"
	}
	reason := fmt.Sprintf("%s by %s at %s", verb, who, ps.now.Format(time.RFC3339))
	if c.Note != "" {
		reason += ": " + c.Note
	}
	ps.decideGate(run, ti, c.Kind == "approve", reason)
	return nil
}

// decideGate ends a gate: approved is success; rejected or timed out fails with no retry.
func (ps *pass) decideGate(run *state.Run, ti *state.TI, approved bool, reason string) {
	ti.EndDate, ti.Reason = ps.now, reason
	st := "success"
	ti.State = string(dag.StateSuccess)
	if !approved {
		st, ti.State = "failed", string(dag.StateFailed)
	}
	ps.attempts = append(ps.attempts, &store.Attempt{Run: run.PK, TaskID: ti.TaskID, TryNumber: 1, State: st,
		StartDate: ti.StartDate, EndDate: ti.EndDate, Reason: reason})
	ps.st.Touch(ti)
}
