package executor

import (
	"fmt"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Approval gates (§5.2) have no queue entry and need no pool: a ready gate waits in
// awaiting_approval for a person, optionally until its timeout.

func (l *loop) openGate(tx store.Tx, p *passState, run *liveRun, ti *liveTI) error {
	ti.State, ti.TryNumber, ti.StartDate = vocab.TaskAwaitingApproval, 1, p.now
	l.touch(p, ti)
	return nil
}

func gateDeadline(ti *liveTI) time.Time {
	if ti.task == nil || ti.task.Approval == nil || ti.task.Approval.Timeout <= 0 {
		return time.Time{}
	}
	return ti.StartDate.Add(ti.task.Approval.Timeout)
}

func (l *loop) checkGateTimeout(tx store.Tx, p *passState, run *liveRun, ti *liveTI) error {
	dl := gateDeadline(ti)
	if dl.IsZero() || p.now.Before(dl) {
		return nil
	}
	return l.decideGate(tx, p, run, ti, false, fmt.Sprintf("approval timeout %s passed", ti.task.Approval.Timeout))
}

func (l *loop) applyGateCommand(tx store.Tx, p *passState, run *liveRun, ti *liveTI, c store.Command) error {
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
	reason := fmt.Sprintf("%s %s at %s", decided, who, p.now.Format(time.RFC3339))
	if c.Note != "" {
		reason += ": " + c.Note
	}
	return l.decideGate(tx, p, run, ti, c.Kind == vocab.CommandApprove, reason)
}

// decideGate ends a gate: approved is success; rejected or timed out fails with no retry.
func (l *loop) decideGate(tx store.Tx, p *passState, run *liveRun, ti *liveTI, approved bool, reason string) error {
	ti.EndDate, ti.ReasonCode, ti.Reason = p.now, "", reason
	ti.State = vocab.TaskSuccess
	if !approved {
		ti.State = vocab.TaskFailed
	}
	if err := tx.InsertAttempt(&store.Attempt{Run: run.PK, TaskID: ti.TaskID, TryNumber: 1, State: ti.State,
		StartDate: ti.StartDate, EndDate: ti.EndDate, Reason: reason}); err != nil {
		return err
	}
	l.touch(p, ti)
	return nil
}
