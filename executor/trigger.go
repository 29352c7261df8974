package executor

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// TriggerRequest is a manual start (CLI, API).
type TriggerRequest struct {
	DAGID       string
	RunID       string // "" = manual__<logical date>
	Conf        map[string]any
	LogicalDate time.Time // zero = now
	Note        string
	// NoQueue asks not to wait: the run is refused unless its ready tasks are admitted at once.
	NoQueue bool
}

// TriggerResult describes a triggered run after its first pass.
type TriggerResult struct {
	Run store.Run
	// Queued is set when a ready task must wait; QueueID and Pool name the first waiting entry.
	Queued  bool
	QueueID int64
	Pool    string
}

// ErrRefused is a start a pool refused (HTTP 409 with the pool's message).
var ErrRefused = errors.New("refused")

type evTrigger struct {
	req   TriggerRequest
	reply chan triggerReply
}

type triggerReply struct {
	res TriggerResult
	err error
}

type evCommand struct {
	cmd       store.Command
	reply     chan error
	fromStore bool // read from the commands table: mark it done, nobody waits for a reply
}

type pendingTrigger struct {
	ev  *evTrigger
	run *liveRun
}

// trigger creates a manual run in this pass; its reply waits for the pass's admission.
func (l *loop) trigger(tx store.Tx, p *passState, ev *evTrigger) error {
	req := ev.req
	d := l.reg.get(req.DAGID)
	// Replies go out after the commit; a failed pass answers every pending trigger instead.
	if d == nil {
		err := fmt.Errorf("%w: dag %s", store.ErrNotFound, req.DAGID)
		p.replies = append(p.replies, func() { ev.reply <- triggerReply{err: err} })
		return nil
	}
	run, err := l.newRun(tx, p, d, vocab.RunManual, req.LogicalDate, req.RunID, req.Conf, req.Note, req.NoQueue)
	if errors.Is(err, store.ErrConflict) {
		err := fmt.Errorf("%w: dag run %s already exists", store.ErrConflict, run.RunID)
		p.replies = append(p.replies, func() { ev.reply <- triggerReply{err: err} })
		return nil
	}
	if err != nil {
		return err
	}
	p.triggers = append(p.triggers, &pendingTrigger{ev: ev, run: run})
	return nil
}

// newRun inserts a run with every task instance in state none. A zero logical date means now.
func (l *loop) newRun(tx store.Tx, p *passState, d *dag.DAG, runType vocab.RunType, logical time.Time, runID string,
	conf map[string]any, note string, noQueue bool) (*liveRun, error) {
	r, err := l.runRecord(d, runType, logical, runID, conf, note, noQueue, p.now)
	if err != nil {
		return nil, err
	}
	if err := tx.InsertRun(&r); err != nil {
		return &liveRun{Run: r}, err
	}
	lr := newLiveRun(r, d)
	for _, t := range d.Tasks {
		ti := &liveTI{TaskInstance: store.TaskInstance{Run: r.PK, TaskID: t.ID, State: vocab.TaskNone}, task: t}
		lr.add(ti)
		l.touch(p, ti)
	}
	l.runs[r.PK] = lr
	p.newRuns = append(p.newRuns, lr)
	l.log.Info("run created", keyDAG, d.ID, keyRun, r.RunID, "run_type", runType)
	return lr, nil
}

// runRecord is the row of a new run. A zero logical date means now; an empty run id is derived
// from the run type and the logical date (a test run's is fixed once per process).
func (l *loop) runRecord(d *dag.DAG, runType vocab.RunType, logical time.Time, runID string, conf map[string]any,
	note string, noQueue bool, now time.Time) (store.Run, error) {
	if logical.IsZero() {
		logical = now
	}
	if runID == "" {
		// Airflow's prefixes: scheduled__ for the scheduler's runs (catch-up too), else the type.
		prefix := string(runType)
		if runType.LeaderOwned() {
			prefix = vocab.RunSchedule.Word()
		}
		runID = prefix + "__" + logical.UTC().Format("2006-01-02T15:04:05.000Z07:00")
		if runType == vocab.RunTest {
			runID += l.testSuffix
		}
	}
	confJSON := "{}"
	if len(conf) > 0 {
		b, err := json.Marshal(conf)
		if err != nil {
			return store.Run{}, fmt.Errorf("conf: %w", err)
		}
		confJSON = string(b)
	}
	return store.Run{DAGID: d.ID, RunID: runID, RunType: runType, LogicalDate: logical, State: vocab.RunQueued,
		Conf: confJSON, Note: note, NoQueue: noQueue, Owner: l.cfg.DaemonID, QueuedAt: now}, nil
}

// settleTriggers refuses the runs started in this pass that asked not to wait and still have a
// waiting entry (§4.6), then answers each manual start: admitted, queued, or refused.
func (l *loop) settleTriggers(tx store.Tx, p *passState) error {
	for _, run := range p.started {
		if !run.NoQueue {
			continue
		}
		first := firstWaiting(run)
		if first == nil {
			continue
		}
		why := l.explain(first, p.now)
		msg := fmt.Sprintf("pool %s cannot admit %s at once and the start asked not to queue", firstPool(first), first.Label)
		if why != "" {
			msg += " (" + why + ")"
		}
		run.ReasonCode, run.Reason = vocab.ReasonRejected, msg
		if err := l.refuseRun(tx, p, run, msg); err != nil {
			return err
		}
	}
	for _, pt := range p.triggers {
		run, reply := pt.run, pt.ev.reply
		if run.NoQueue && run.State == vocab.RunQueued {
			why := fmt.Sprintf("dag %s cannot start a run at once (max_active_runs %d) and the start asked not to queue",
				run.DAGID, run.dag.MaxActiveRuns)
			if run.Reason != "" {
				why += " (" + run.Reason + ")"
			}
			run.State, run.EndDate, run.ReasonCode, run.Reason = vocab.RunFailed, p.now, vocab.ReasonRejected, why
			if err := tx.UpdateRun(&run.Run); err != nil {
				return err
			}
			delete(l.runs, run.PK)
		}
		if run.ReasonCode == vocab.ReasonRejected {
			msg := run.Reason
			p.replies = append(p.replies, func() { reply <- triggerReply{err: fmt.Errorf("%w: %s", ErrRefused, msg)} })
			continue
		}
		res := TriggerResult{}
		if first := firstWaiting(run); first != nil {
			l.explain(first, p.now)
			res.Queued, res.QueueID, res.Pool = true, first.ID, firstPool(first)
		}
		// A run waiting for max_active_runs or forbid waits too, with no queue entry yet.
		res.Queued = res.Queued || run.State == vocab.RunQueued
		p.replies = append(p.replies, func() {
			res.Run = run.Run
			reply <- triggerReply{res: res}
		})
	}
	return nil
}

// firstWaiting is the run's waiting entry with the lowest queue ID.
func firstWaiting(run *liveRun) *liveEntry {
	var first *liveEntry
	for _, ti := range run.tis {
		if le := ti.entry; le != nil && le.State == vocab.EntryWaiting && (first == nil || le.ID < first.ID) {
			first = le
		}
	}
	return first
}

// firstPool names the pool an entry waits on, for the 202 of a manual start, the no-queue
// refusal, notices and metrics: the pool of its current reason (pools.Admit gives a named
// pool's wait precedence over a limit's, and among equal kinds the first in requirement order);
// an entry with no reason yet, or one about no pool (paused, forbid), names its first named
// pool in requirement order. This is the one place that decides it.
func firstPool(le *liveEntry) string {
	if le.reason != nil && le.reason.Pool != "" {
		return le.reason.Pool
	}
	return firstNamed(le.Needs)
}

// firstNamed is the first named pool of needs (sorted rows: requirement order), else the first.
func firstNamed(needs []store.Requirement) string {
	for _, n := range needs {
		if !n.Implicit {
			return n.Pool
		}
	}
	if len(needs) > 0 {
		return needs[0].Pool
	}
	return ""
}

// refuseRun ends a run that may not wait: its waiting entries are rejected for reason and it
// fails.
func (l *loop) refuseRun(tx store.Tx, p *passState, run *liveRun, reason string) error {
	for _, ti := range run.inOrder() {
		if le := ti.entry; le != nil && le.State == vocab.EntryWaiting {
			if err := tx.EndEntry(le.ID, vocab.EntryRejected, vocab.ReasonRejected, reason, p.now); err != nil {
				return err
			}
			l.dropEntry(le.ID)
			ti.entry = nil
			// The refused try is used up (§3.3) with no retry: the task shows it, not try 0.
			if err := l.failAttempt(tx, p, run, ti, le.TryNumber, vocab.ReasonRejected, reason, p.now, true); err != nil {
				return err
			}
		}
	}
	return nil
}
