package decide

import (
	"errors"
	"time"

	"github.com/poolflow/poolflow/executor/attempt"
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
	// Who asked: the actor of its audit event (§10.4); "" = api.
	Who string
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

// Trigger is a manual start; its reply waits for the pass that creates the run.
type Trigger struct {
	Req   TriggerRequest
	Reply chan<- TriggerReply
}

// TriggerReply answers a Trigger.
type TriggerReply struct {
	Res TriggerResult
	Err error
}

// Command is an operator command: from this process's API (Reply hears the outcome), or read
// from the store (FromStore: the pass marks it done or refused).
type Command struct {
	Cmd       store.Command
	Reply     chan<- error
	FromStore bool
}

// stop is an entry of this daemon's run that carries a stop request but waits again: the
// daemon that ran it died before it could stop it. The pass fails the task with no retry.
type stop struct{ entry int64 }

// Notice tells an observer (metrics, tests) what a committed pass did.
type Notice struct {
	Kind   NoticeKind
	DAGID  string
	RunID  string
	TaskID string
	Try    int
	State  string // the task's or run's new state
	Reason string
	// Duration is an attempt's run time, or how long an admitted entry waited.
	Duration time.Duration
	Pool     string // admitted: the pool it waited on
	// At is the pass's time (NoticePass): a pass at or after t began after the clock read t.
	At time.Time
}

// NoticeKind names what happened.
type NoticeKind string

const (
	NoticeAttemptEnded NoticeKind = "attempt_ended"
	NoticeRunEnded     NoticeKind = "run_ended"
	NoticeAdmitted     NoticeKind = NoticeKind(vocab.EntryAdmitted)
	NoticeExpired      NoticeKind = NoticeKind(vocab.EntryExpired)
	NoticeRejected     NoticeKind = NoticeKind(vocab.EntryRejected)
	// NoticePass follows every committed pass, after its other notices: a test waits for a
	// pass with it instead of polling the store.
	NoticePass NoticeKind = "pass"
)

// events folds the pass's events into memory: attempt starts (their process groups are
// written together), attempt ends, triggers, operator commands and the stops a load found.
func (ps *pass) events() {
	evs := ps.in.Events
	if len(ps.in.Commands) > 0 || len(ps.stops) > 0 {
		evs = append(evs[:len(evs):len(evs)], nil)[:len(evs)]
		for _, c := range ps.in.Commands {
			evs = append(evs, &Command{Cmd: c, FromStore: true})
		}
		for _, id := range ps.stops {
			evs = append(evs, stop{id})
		}
	}
	finished := map[int64]bool{}
	for _, ev := range evs {
		if f, ok := ev.(*attempt.Ended); ok {
			finished[f.Entry] = true
		}
	}
	for _, ev := range evs {
		switch ev := ev.(type) {
		case *attempt.Started:
			if !finished[ev.Entry] { // its end, written below, carries its start
				ps.started1(ev)
			}
		case *attempt.Ended:
			ps.finish(ev)
		case *Trigger:
			ps.trigger(ev)
		case *Command:
			ps.command(ev)
		case stop:
			ps.applyStop(ev)
		}
	}
	if len(ps.pgids) > 0 {
		ps.p.add(SetPGIDs{ps.pgids})
	}
}

// started1 records an attempt's process group and start time.
func (ps *pass) started1(ev *attempt.Started) {
	le := ps.st.Entries[ev.Entry]
	if le == nil || le.TI == nil {
		return
	}
	if ps.pgids == nil {
		ps.pgids = map[int64]int{}
	}
	ps.pgids[ev.Entry] = ev.PGID // written with the pass's other starts, once its events are applied
	if le.Pokes == 0 {
		le.TI.StartDate = ev.Start
	}
	ps.st.Touch(le.TI)
}
