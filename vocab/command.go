package vocab

// CommandKind is what a command asks the daemon that owns a run (commands are how another
// process, the CLI or a daemon that does not own the run, acts on it; §9).
type CommandKind string

const (
	CommandForce   CommandKind = "force"   // force-start a waiting task: it jumps the line but must still fit
	CommandCancel  CommandKind = "cancel"  // cancel a waiting entry: a failed attempt under the retry policy
	CommandFail    CommandKind = "fail"    // mark a task failed, no further retry
	CommandApprove CommandKind = "approve" // approve an approval gate
	CommandReject  CommandKind = "reject"  // reject an approval gate: it fails with no retry
	CommandReplace CommandKind = "replace" // stop a run a newer fire replaces (concurrency_policy replace)
	CommandClear   CommandKind = "clear"   // clear task instances (or a whole run) to run again (§10.1)
	CommandMark    CommandKind = "mark"    // mark task instances (or a whole run) success, failed or skipped (§10.2)
	CommandDelete  CommandKind = "delete"  // delete a run with everything it holds (§10.3)
)

// CommandKinds lists every command kind: the task commands in the CLI's order, then replace,
// which is about a whole run.
func CommandKinds() []CommandKind {
	return []CommandKind{CommandForce, CommandCancel, CommandFail, CommandApprove, CommandReject, CommandReplace,
		CommandClear, CommandMark, CommandDelete}
}

// Valid reports whether k is a command kind.
func (k CommandKind) Valid() bool { return in(k, CommandKinds()) }
