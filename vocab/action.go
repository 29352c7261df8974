package vocab

// Action is what an audit event records (§10.4): a change a person or a client asked for, or a
// scheduler decision a person should be able to find later.
type Action string

// What people and clients ask for.
const (
	ActionTrigger    Action = "trigger"     // a manual run
	ActionClear      Action = "clear"       // task instances or a run cleared to run again
	ActionMark       Action = "mark"        // task instances or a run marked success, failed or skipped
	ActionNote       Action = "note"        // a run's or a task instance's note edited
	ActionDeleteRun  Action = "delete_run"  // a run deleted
	ActionPause      Action = "pause"       // a DAG paused
	ActionUnpause    Action = "unpause"     // a DAG unpaused
	ActionBackfill   Action = "backfill"    // a backfill created, paused, unpaused or cancelled
	ActionPoolSet    Action = "pool_set"    // a stored pool created or changed
	ActionPoolDelete Action = "pool_delete" // a stored pool deleted
	ActionApprove    Action = "approve"     // an approval gate approved
	ActionReject     Action = "reject"      // an approval gate rejected
	ActionCancel     Action = "cancel"      // a waiting entry cancelled
	ActionForce      Action = "force"       // a waiting entry force-started
	ActionFail       Action = "fail"        // a task marked failed (tasks fail)
	ActionReload     Action = "reload"      // poolflow.yaml reloaded
	ActionDBClean    Action = "db_clean"    // history deleted by poolflow db clean (§12)
	// Users, tokens and sign-in (§15).
	ActionUserCreate  Action = "user_create"   // a user created
	ActionUserDelete  Action = "user_delete"   // a user deleted, with its tokens
	ActionUserPass    Action = "user_password" // a user's password set
	ActionUserRoles   Action = "user_roles"    // a user's roles set
	ActionTokenCreate Action = "token_create"  // an API token created
	ActionTokenRevoke Action = "token_revoke"  // an API token revoked
	ActionSignIn      Action = "sign_in"       // a UI sign-in (outcome ok, or why it was refused)
	ActionSignOut     Action = "sign_out"      // a UI sign-out
)

// What the scheduler decides that a person should find later.
const (
	ActionTakeover  Action = "takeover"   // a dead owner's work handled by a live daemon
	ActionLeaseLost Action = "lease_lost" // this daemon's lease lapsed; its attempts were stopped
	ActionReplay    Action = "replay"     // an interrupted attempt put back in the queue with its try
	ActionExpired   Action = "expired"    // a waiting entry's queue_timeout passed
	ActionRejected  Action = "rejected"   // a pool refused an entry
)

// Actions lists every action: people's, then the scheduler's.
func Actions() []Action {
	return []Action{ActionTrigger, ActionClear, ActionMark, ActionNote, ActionDeleteRun, ActionPause, ActionUnpause,
		ActionBackfill, ActionPoolSet, ActionPoolDelete, ActionApprove, ActionReject, ActionCancel, ActionForce,
		ActionFail, ActionReload, ActionDBClean, ActionUserCreate, ActionUserDelete, ActionUserPass, ActionUserRoles,
		ActionTokenCreate, ActionTokenRevoke, ActionSignIn, ActionSignOut, ActionTakeover, ActionLeaseLost, ActionReplay, ActionExpired, ActionRejected}
}

// Valid reports whether a is one of Actions.
func (a Action) Valid() bool { return in(a, Actions()) }

// ActorScheduler is the actor of the scheduler's own events; a daemon id follows it
// ("scheduler:<daemon id>").
const ActorScheduler = "scheduler"
