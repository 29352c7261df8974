package executor

import (
	"github.com/poolflow/poolflow/vocab"
	"time"
	// Notice tells an observer (metrics, tests) what a committed pass did.
)

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
	Pool     string // admitted: the first named pool of the entry
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

func (l *loop) notify(p *passState, n Notice) {
	if l.cfg.Notify != nil {
		p.notices = append(p.notices, n)
	}
}
