package decide

import (
	"fmt"
	"time"

	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Approval gates (§5.2) have no queue entry and need no pool: a ready gate waits in
// awaiting_approval for a person, optionally until its timeout.

func (ps *pass) openGate(ti *state.TI) {
	ti.State, ti.TryNumber, ti.StartDate = vocab.TaskAwaitingApproval, 1, ps.now
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
	if c.Kind != vocab.CommandApprove && c.Kind != vocab.CommandReject {
		return fmt.Errorf("unknown command %q", c.Kind)
	}
	if ti.State != vocab.TaskAwaitingApproval {
		return fmt.Errorf("%w: task %s is not awaiting approval (state %s)", store.ErrConflict, ti.TaskID, ti.State)
	}
	who := c.Who
	if who == "" {
		who = "anonymous"
	}
	decided := "approved by"
	if c.Kind == vocab.CommandReject {
		decided = "rejected by"
	}
	reason := fmt.Sprintf("%s %s at %s", decided, who, ps.now.Format(time.RFC3339))
	if c.Note != "" {
		reason += ": " + c.Note
	}
	ps.decideGate(run, ti, c.Kind == vocab.CommandApprove, reason)
	return nil
}

// decideGate ends a gate: approved is success; rejected or timed out fails with no retry.
func (ps *pass) decideGate(run *state.Run, ti *state.TI, approved bool, reason string) {
	ti.EndDate, ti.ReasonCode, ti.Reason = ps.now, "", reason
	ti.State = vocab.TaskSuccess
	if !approved {
		ti.State = vocab.TaskFailed
	}
	ps.addAttempt(&store.Attempt{Run: run.PK, TaskID: ti.TaskID, TryNumber: 1, State: ti.State,
		StartDate: ti.StartDate, EndDate: ti.EndDate, Reason: reason})
	ps.st.Touch(ti)
	ps.tellTry(run, ti, 1, reason, ps.now)
}
