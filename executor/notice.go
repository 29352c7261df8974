package executor

import "github.com/poolflow/poolflow/executor/decide"

// Notice tells an observer (metrics, tests) what a committed pass did.
type Notice = decide.Notice

// NoticeKind names what happened.
type NoticeKind = decide.NoticeKind

// The notices a pass gives (see decide.Notice).
const (
	NoticeAttemptEnded = decide.NoticeAttemptEnded
	NoticeRunEnded     = decide.NoticeRunEnded
	NoticeAdmitted     = decide.NoticeAdmitted
	NoticeExpired      = decide.NoticeExpired
	NoticeRejected     = decide.NoticeRejected
	NoticePass         = decide.NoticePass
)
