package decide

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

type pendingTrigger struct {
	ev  *Trigger
	run *state.Run
}

// trigger creates a manual run in this pass; its reply waits for the pass's admission.
func (ps *pass) trigger(ev *Trigger) {
	req := ev.Req
	reply := ev.Reply
	d := ps.DAG(req.DAGID)
	// Replies go out after the commit; a failed pass answers every pending trigger instead.
	if d == nil {
		err := fmt.Errorf("%w: dag %s", store.ErrNotFound, req.DAGID)
		ps.auditTrigger(req, req.RunID, err)
		ps.p.reply(func() { reply <- TriggerReply{Err: err} })
		return
	}
	r, err := ps.runRecord(d, vocab.RunManual, req.LogicalDate, req.RunID, req.Conf, req.Note, req.NoQueue)
	if err == nil && ps.in.TakenRunIDs[RunKey(d.ID, r.RunID)] {
		err = fmt.Errorf("%w: dag run %s already exists", store.ErrConflict, r.RunID)
	}
	if err == nil {
		for _, pt := range ps.triggers {
			if pt.run.DAGID == r.DAGID && pt.run.RunID == r.RunID {
				err = fmt.Errorf("%w: dag run %s already exists", store.ErrConflict, r.RunID)
			}
		}
	}
	if err != nil {
		ps.auditTrigger(req, r.RunID, err)
		ps.p.reply(func() { reply <- TriggerReply{Err: err} })
		return
	}
	if r.Note != "" {
		r.NoteBy, r.NoteAt = orDefault(req.Who, "api"), ps.now // who wrote it, and when (§10.3)
	}
	run := ps.newRun(d, r)
	ps.triggers = append(ps.triggers, &pendingTrigger{ev: ev, run: run})
}

// RunKey names a run for TakenRunIDs.
func RunKey(dagID, runID string) string { return dagID + "\x00" + runID }

// TriggerRunID is the run id a trigger asks for, as the pass at now will make it: the daemon
// checks, before the pass, whether it exists already.
func (d *Decider) TriggerRunID(req TriggerRequest, now time.Time) string {
	if req.RunID != "" {
		return req.RunID
	}
	logical := req.LogicalDate
	if logical.IsZero() {
		logical = now
	}
	return runID(vocab.RunManual, logical, d.cfg.TestSuffix)
}

// newRun puts a new run in memory with every task instance in state none, with the next run id
// of the store, and queues its insert.
func (ps *pass) newRun(d *dag.DAG, r store.Run) *state.Run {
	r.PK = ps.nextRunPK()
	r.Version = ps.versionOf(d) // the version it is created with (§12)
	lr := state.NewRun(r, d)
	ps.p.add(InsertRun{&lr.Run})
	for _, t := range d.Tasks {
		ti := &state.TI{TaskInstance: store.TaskInstance{Run: r.PK, TaskID: t.ID, State: vocab.TaskNone}, Task: t}
		lr.Add(ti)
		ps.st.Touch(ti)
	}
	ps.st.AddRun(lr)
	ps.p.info("run created", keyDAG, d.ID, keyRun, r.RunID, "run_type", r.RunType)
	return lr
}

// nextRunPK takes the id of the next run inserted.
func (ps *pass) nextRunPK() int64 {
	id := ps.st.NextRunPK
	ps.st.NextRunPK++
	return id
}

// runRecord is the row of a new run. A zero logical date means now; an empty run id is derived
// from the run type and the logical date (a test run's is fixed once per process).
func (ps *pass) runRecord(d *dag.DAG, runType vocab.RunType, logical time.Time, id string, conf map[string]any,
	note string, noQueue bool) (store.Run, error) {
	if logical.IsZero() {
		logical = ps.now
	}
	switch {
	case id != "":
	case runType == vocab.RunNode:
		id = nodeRunID(logical, ps.cfg.DaemonID)
	default:
		id = runID(runType, logical, ps.cfg.TestSuffix)
	}
	confJSON := "{}"
	if len(conf) > 0 {
		b, err := json.Marshal(conf)
		if err != nil {
			return store.Run{}, fmt.Errorf("conf: %w", err)
		}
		confJSON = string(b)
	}
	return store.Run{DAGID: d.ID, RunID: id, RunType: runType, LogicalDate: logical, State: vocab.RunQueued,
		Conf: confJSON, Note: note, NoQueue: noQueue, Owner: ps.cfg.DaemonID, QueuedAt: ps.now}, nil
}

// runID is the id of a run of this type at logical: Airflow's prefixes, scheduled__ for the
// scheduler's runs (catch-up too), else the type (backfill__ for a backfill's).
func runID(runType vocab.RunType, logical time.Time, testSuffix string) string {
	prefix := string(runType)
	if runType.Scheduled() {
		prefix = vocab.RunSchedule.Word()
	}
	id := prefix + "__" + logical.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	if runType == vocab.RunTest {
		id += testSuffix
	}
	return id
}

// nodeRunID is the run id of an every_node fire at logical on daemon: every daemon fires the
// same dates, so the id names the daemon too, by its host and a hash of its id (which holds a
// path, not for a URL).
func nodeRunID(logical time.Time, daemon string) string {
	host, _, _ := strings.Cut(daemon, ":")
	host = strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, host)
	if len(host) > 40 {
		host = host[:40]
	}
	h := fnv.New32a()
	h.Write([]byte(daemon))
	return fmt.Sprintf("%s__%s-%08x", runID(vocab.RunNode, logical, ""), host, h.Sum32())
}

// settleTriggers refuses the runs started in this pass that asked not to wait and still have a
// waiting entry (§4.6), then answers each manual start: admitted, queued, or refused.
func (ps *pass) settleTriggers() {
	for _, run := range ps.started {
		if !run.NoQueue {
			continue
		}
		first := firstWaiting(run)
		if first == nil {
			continue
		}
		why := ps.explain(first)
		msg := fmt.Sprintf("pool %s cannot admit %s at once and the start asked not to queue", first.FirstPool(), first.Label)
		if why != "" {
			msg += " (" + why + ")"
		}
		run.ReasonCode, run.Reason = vocab.ReasonRejected, msg
		ps.st.TouchRun(run)
		ps.refuseRun(run, msg)
	}
	for _, pt := range ps.triggers {
		run, reply := pt.run, pt.ev.Reply
		if run.NoQueue && run.State == vocab.RunQueued {
			why := fmt.Sprintf("dag %s cannot start a run at once (max_active_runs %d) and the start asked not to queue",
				run.DAGID, run.DAG.MaxActiveRuns)
			if run.Reason != "" {
				why += " (" + run.Reason + ")"
			}
			run.State, run.EndDate, run.ReasonCode, run.Reason = vocab.RunFailed, ps.now, vocab.ReasonRejected, why
			ps.st.TouchRun(run)
			ps.st.RemoveRun(run)
		}
		if run.ReasonCode == vocab.ReasonRejected {
			msg := run.Reason
			ps.auditTrigger(pt.ev.Req, run.RunID, fmt.Errorf("%w: %s", ErrRefused, msg))
			ps.p.reply(func() { reply <- TriggerReply{Err: fmt.Errorf("%w: %s", ErrRefused, msg)} })
			continue
		}
		res := TriggerResult{}
		if first := firstWaiting(run); first != nil {
			ps.explain(first)
			res.Queued, res.QueueID, res.Pool = true, first.ID, first.FirstPool()
		}
		// A run waiting for max_active_runs or forbid waits too, with no queue entry yet.
		res.Queued = res.Queued || run.State == vocab.RunQueued
		ps.auditTrigger(pt.ev.Req, run.RunID, nil)
		row := run.Run
		ps.p.reply(func() {
			res.Run = row
			reply <- TriggerReply{Res: res}
		})
	}
}

// explain sets le.Reason to why one of memory's entries waits after this pass, by the same
// pure walk the reads use (§4.5), and returns it in words; "" when it does not wait. A pass
// does not compute reasons; this is for the few answers that name one (a manual start's).
func (ps *pass) explain(le *state.Entry) string {
	le.Why = nil
	r, ok := pools.Admit(ps.st.Queue().Snapshot(), ps.now).Reason(le.ID)
	if !ok {
		return ""
	}
	le.Why = &r
	if r.Kind == vocab.ReasonNodeAway && ps.st.View != nil {
		return ps.st.View.AwayText(le.Run.Owner)
	}
	return r.String()
}

// firstWaiting is the run's waiting entry with the lowest queue ID.
func firstWaiting(run *state.Run) *state.Entry {
	var first *state.Entry
	for _, ti := range run.TIs {
		if le := ti.Entry; le != nil && le.State == vocab.EntryWaiting && (first == nil || le.ID < first.ID) {
			first = le
		}
	}
	return first
}

// refuseRun ends a run that may not wait: its waiting entries are rejected for reason and it
// fails.
func (ps *pass) refuseRun(run *state.Run, reason string) {
	for _, ti := range run.InOrder() {
		if le := ti.Entry; le != nil && le.State == vocab.EntryWaiting {
			ps.p.add(EndEntry{le.ID, vocab.EntryRejected, vocab.ReasonRejected, reason})
			ps.st.Release(le.ID)
			ps.st.DropEntry(le)
			// The refused try is used up (§3.3) with no retry: the task shows it, not try 0.
			ps.failAttempt(run, ti, le.TryNumber, vocab.ReasonRejected, reason, ps.now, true)
		}
	}
}

// auditTrigger writes a manual start's audit event (§10.4): the run it created, or why not.
func (ps *pass) auditTrigger(req TriggerRequest, runID string, err error) {
	e := store.Event{At: ps.now, Actor: orDefault(req.Who, "api"), Action: vocab.ActionTrigger, DAGID: req.DAGID,
		RunID: runID, Outcome: "ok"}
	params := map[string]any{}
	if len(req.Conf) > 0 {
		params["conf"] = req.Conf
	}
	if req.Note != "" {
		params["note"] = req.Note
	}
	if req.NoQueue {
		params["queue"] = false
	}
	if len(params) > 0 {
		b, _ := json.Marshal(params)
		e.Params = string(b)
	}
	if err != nil {
		e.Outcome = err.Error()
	}
	ps.p.add(Event{e})
}

// schedEvent writes an audit event of the scheduler's own (§10.4): an entry expired or rejected.
func (ps *pass) schedEvent(action vocab.Action, run *state.Run, taskID string, try int, pool, outcome string) {
	ps.p.add(Event{store.Event{At: ps.now, Actor: vocab.ActorScheduler + ":" + ps.cfg.DaemonID, Action: action,
		DAGID: run.DAGID, RunID: run.RunID, TaskID: taskID, Try: try, Pool: pool, Outcome: outcome}})
}
