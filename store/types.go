package store

import (
	"time"

	"github.com/poolflow/poolflow/vocab"
)

// Run is one DAG run row.
type Run struct {
	PK          int64
	DAGID       string
	RunID       string
	RunType     vocab.RunType
	LogicalDate time.Time
	State       vocab.RunState
	Conf        string // JSON object
	// Note is the note a person wrote on the run (a trigger's, or §10.3's), with who and when;
	// UpdateRun leaves them as they are (Tx.SetNote writes them).
	Note      string
	NoteBy    string
	NoteAt    time.Time
	NoQueue   bool // refused unless its ready tasks are admitted at once (§4.6)
	Owner     string
	QueuedAt  time.Time
	StartDate time.Time
	EndDate   time.Time
	// ReasonCode is why the run waits or ended, when that has a code (rejected: a start that
	// asked not to queue could not start at once); Reason says it in words, without the words
	// Say puts before them.
	ReasonCode vocab.ReasonCode
	Reason     string
	// Version is the version of its DAG the run was created with (§12); 0 when unknown (a run
	// from before versions were kept, or one dags trigger created that no daemon took yet).
	// Cleared tasks run the DAG's current version: their attempts say which.
	Version int
	// Backfill is the backfill the run belongs to (§11): one it created, or an ended run it
	// cleared; 0 for none. UpdateRun sets it when given and never unsets it.
	Backfill int64
}

// TaskInstance is one task of one run.
type TaskInstance struct {
	Run       int64
	TaskID    string
	State     vocab.TaskState
	TryNumber int
	StartDate time.Time
	EndDate   time.Time
	NextAt    time.Time
	// ReasonCode is the code of its reason when it has one (rejected, expired, cancelled,
	// timeout); Reason is the words, without the code's own (vocab.ReasonCode.Say).
	ReasonCode vocab.ReasonCode
	Reason     string
	// MaxTries bounds its tries: a failed try k retries while k < MaxTries. 0 means the task's
	// retries + 1; a clear (§10.1) sets it to the last try + retries + 1, so a cleared task
	// gets a fresh set of retries while its try numbers go on.
	MaxTries int
	// Note is the note a person wrote on it (§10.3), with who and when. The scheduler never
	// writes these three: UpdateTI and PutTIs leave them as they are (Tx.SetNote writes them).
	Note   string
	NoteBy string
	NoteAt time.Time
	// Output is the JSON object its successful attempt wrote (§14), "" when it wrote none or
	// the task instance has not succeeded. Read only: it is stored with the attempt.
	Output string
	// MapFirst, MapNext and MapLength are a mapped task's line (§14), on its own row: the queue
	// ID reserved for instance 0 of its expansion (instance i is first queued as MapFirst + i),
	// the map index of the next instance to queue and the length of its list. Its instances
	// from MapNext on that have no row yet are read as none, reason code map_line. 0 on every
	// other row.
	MapFirst  int64
	MapNext   int
	MapLength int
	// Ahead is, for a mapped instance that waits in its task's line without a row yet, how
	// many instances of the line are before it (its map index less the line's MapNext); 0
	// otherwise. Read only: computed by the reads that list them.
	Ahead int
}

// Requirement is one normalized requirement row of a queue entry.
type Requirement struct {
	Pool     string
	Slots    int
	Implicit bool
	Capacity int // implicit pools only
}

// Entry is one queue entry.
type Entry struct {
	ID         int64
	Run        int64
	TaskID     string
	TryNumber  int
	Label      string
	Priority   int
	Due        time.Time
	Deadline   time.Time
	State      vocab.EntryState
	Force      bool
	ReasonCode vocab.ReasonCode
	Reason     string
	Rule       string
	// RuleSkipped says which rules matched the attempt but were skipped because their pool is
	// not open to its DAG's team (§15), and why; "" when none was.
	RuleSkipped string
	Replay      bool
	// NotBefore is a reschedule sensor's next poke; zero for entries eligible at once.
	NotBefore   time.Time
	Fingerprint string
	CreatedAt   time.Time
	AdmittedAt  time.Time
	EndedAt     time.Time
	// Version is the version of its DAG in force when it was admitted (Admit writes it): the
	// one its attempt runs. 0 before.
	Version int
	Needs   []Requirement
	// Owner is the daemon of the entry's run, for admission across daemons; RunType is the
	// run's type (a leader-owned run's entries may be admitted by any live daemon, §9).
	Owner   string
	DAGID   string
	RunID   string
	RunType vocab.RunType
	// Backfill is the backfill of the entry's run (§11), 0 for none: admission orders its
	// entries after fresh ones of the same priority.
	Backfill int64
}

// Changes are the rows write transactions stamped after a change number (Tx.ChangesSince):
// the newest state of each run, task instance and queue entry written since, and the runs
// deleted since (DeleteRun leaves a tombstone: a deleted row cannot be stamped).
type Changes struct {
	Runs          []Run
	TaskInstances []TaskInstance
	Entries       []Entry // with their requirement rows
	DeletedRuns   []int64
}

// Claim is the slots one admitted entry holds in one pool.
type Claim struct {
	Entry      int64
	Pool       string
	Slots      int
	Daemon     string
	Epoch      int64
	PGID       int
	LeaseUntil time.Time
	Label      string
}

// Pool is one row of the pools table: file pools synced from poolflow.yaml, and pools kept in
// the store (created over the CLI or API).
type Pool struct {
	Name            string
	Slots           int // capacity admission uses now
	TargetSlots     int // on_resize drain: capacity after the drain; -2 = none
	Ordering        vocab.Ordering
	MaxQueued       int
	StarvationAfter time.Duration
	IncludeDeferred bool
	OnResize        vocab.OnResize
	Description     string
	Source          string
	// Teams are the teams whose DAGs may use the pool (§15); none = every team.
	Teams []string
}

// NoTarget marks a pool that is not draining toward a new capacity.
const NoTarget = -2

// Command is a request from another process to the daemon that owns a run.
//
// Params holds a clear's or a mark's arguments as JSON (ClearParams, MarkParams).
type Command struct {
	ID     int64
	Kind   vocab.CommandKind
	Run    int64
	TaskID string
	Who    string
	Note   string
	Params string
}

// ClearParams are a clear's arguments (§10.1): the task instances named (none: every one of
// the run), with those reachable downstream or upstream, and of those only the failed and
// upstream_failed ones, or only the running ones.
type ClearParams struct {
	TaskIDs     []string `json:"task_ids,omitempty"`
	Downstream  bool     `json:"include_downstream,omitempty"`
	Upstream    bool     `json:"include_upstream,omitempty"`
	OnlyFailed  bool     `json:"only_failed,omitempty"`
	OnlyRunning bool     `json:"only_running,omitempty"`
}

// MarkParams are a mark's arguments (§10.2): the state, and the task instances named with those
// reachable downstream or upstream; none named marks the whole run (state success, failed, or
// queued: clear the run).
type MarkParams struct {
	State      string   `json:"state"`
	TaskIDs    []string `json:"task_ids,omitempty"`
	Downstream bool     `json:"include_downstream,omitempty"`
	Upstream   bool     `json:"include_upstream,omitempty"`
}

// DeleteParams are a deletion's arguments (§10.3): force stops the run's attempts first.
type DeleteParams struct {
	Force bool `json:"force,omitempty"`
}

// Event is one audit event (§10.4): a change a person or a client asked for, refused or done,
// or a scheduler decision, written in the transaction of what it records.
type Event struct {
	ID     int64
	At     time.Time
	Actor  string // cli:<os user>@<host>, api:<remote address>, scheduler:<daemon id>, or a user (§15)
	Action vocab.Action
	DAGID  string
	RunID  string
	TaskID string
	Try    int
	Pool   string
	// Params are the request's arguments as JSON ("" for none); Outcome is "ok", or why it was
	// refused.
	Params  string
	Outcome string
}

// EventFilter selects events for ListEvents: each set field must match (After and Before bound
// At, After inclusive, Before exclusive); newest first, Limit (0: 100) from Offset.
type EventFilter struct {
	DAGID, RunID, TaskID string
	Action               vocab.Action
	Actor                string
	After, Before        time.Time
	Limit, Offset        int
	// CountAtMost bounds the count ListEvents returns beside the page, as RunFilter's does: 0
	// counts every event selected; past n > 0 the total is n+1, "more than n".
	CountAtMost int
}

// Attempt is an ended attempt.
type Attempt struct {
	Run       int64
	TaskID    string
	TryNumber int
	State     vocab.TaskState // success, failed or skipped
	StartDate time.Time
	EndDate   time.Time
	// ReasonCode and Reason are why it ended as it did, as a task instance's are.
	ReasonCode vocab.ReasonCode
	Reason     string
	// Daemon is the daemon that ran it ("" when none did: it expired, was cancelled or
	// rejected while waiting); the attempt's log is in that daemon's state folder.
	Daemon string
	// Version is the version of its DAG it ran (§12), or for one that never started the
	// version in force when it ended; 0 when unknown.
	Version int
	// Output is the JSON object a successful attempt wrote (§14), compact; "" for none.
	Output string
}

// Owner is one row of the owners table: a process that can own runs, entries and claims, with
// its liveness lease and fencing epoch.
type Owner struct {
	ID   string
	Kind vocab.OwnerKind
	Host string
	PID  int
	// ProcStart is the process's start time in clock ticks after boot (/proc/<pid>/stat), so a
	// reused pid is not mistaken for the owner; 0 = unknown.
	ProcStart  int64
	Epoch      int64
	StartedAt  time.Time
	Heartbeat  time.Time
	LeaseUntil time.Time
	// HandledEpoch is the epoch whose end a live daemon has handled: its claims released, its
	// leader-owned runs moved. 0 = none.
	HandledEpoch int64
	// API is the base URL of its HTTP API as it advertises it (http://host:port), where the
	// other daemons read the logs of the attempts it ran; "" when it serves none.
	API string
}

// DAGState is the stored part of a DAG: pause flag and scheduling checkpoint.
type DAGState struct {
	DAGID      string
	Paused     bool
	Checkpoint time.Time
}

// DAGRow is a DAG as the store knows it, loaded now or not.
type DAGRow struct {
	DAGID     string
	Paused    bool
	File      string
	Schedule  string
	UpdatedAt time.Time
	// Version is its current version (the one the last load recorded); 0 when none was.
	Version int
}

// DAGVersion is one version of a DAG (§12): a distinct source, kept once, numbered per DAG
// from 1. Source is a YAML file's text or a Go DAG's canonical JSON (Format says which); lists
// leave it "".
type DAGVersion struct {
	DAGID     string
	Version   int
	Hash      string
	Format    string // "yaml" or "go" (dag.SourceYAML, dag.SourceGo)
	File      string
	Source    string
	FirstSeen time.Time
	LastSeen  time.Time
	// Current: it is the DAG's current version (reads only).
	Current bool
}

// VersionKey names a stored version by its number and hash, without its text.
type VersionKey struct {
	DAGID   string
	Version int
	Hash    string
}

// ImportErrorRow is one stored import error.
type ImportErrorRow struct {
	File      string
	Message   string
	UpdatedAt time.Time
}

// Holding is one admission's hold on one named pool: from its admission to its end (zero while
// still held).
type Holding struct {
	Entry      int64
	Pool       string
	Slots      int
	AdmittedAt time.Time
	EndedAt    time.Time
}

// HolderAt is an admission that held slots of a pool at some instant, with the attempt it was
// for (PoolHoldersAt).
type HolderAt struct {
	Holding
	DAGID, RunID, TaskID string
	TryNumber            int
	State                vocab.EntryState // the entry's state now
}

// UseBucket is a slice of a pool's timeline (PoolUse).
type UseBucket struct {
	Start  time.Time
	Peak   int       // the most slots held at once within it
	PeakAt time.Time // when that peak was first reached
	Mean   float64   // the slots held on average over it (up to now for the bucket now is in)
}

// CapacityChange is a change of a pool's capacity (PoolCapacity): from At on it had Slots
// (-1 unlimited), or, when !Exists, there was no such pool.
type CapacityChange struct {
	At     time.Time
	Slots  int
	Exists bool
}

// PrunedRun is a run retention deleted (or would delete): its logs go after the commit.
type PrunedRun struct {
	PK    int64
	DAGID string
	RunID string
}

// PruneCounts are the rows a retention with given cutoffs would delete (a dry run): the runs
// with their task instances, attempts and queue entries, the audit events, the DAG versions
// no row records any more.
type PruneCounts struct {
	Runs, TaskInstances, Attempts, Entries, Events, Versions int
	// Notifications are the settled ones (delivered or failed, §13) of the events' cutoff;
	// one still to send is never deleted.
	Notifications int
}

// Notification is one event for one notifier in the outbox (§13): written in the transaction
// of the state change that causes it, then claimed, sent and settled by one live daemon.
type Notification struct {
	ID int64
	// Key is the idempotency key the receiver gets; one occurrence of an event for one
	// notifier has one key, and InsertNotifications drops a second insert of it.
	Key                  string
	Event                vocab.NotifyEvent
	Notifier             string
	DAGID, RunID, TaskID string
	Try                  int
	Payload              string // the event as JSON
	State                vocab.DeliveryState
	CreatedAt            time.Time
	NextAt               time.Time // a pending row's next try
	Tries                int       // tries begun so far
	Sender               string    // the daemon that claimed it last
	LeaseUntil           time.Time // while sending: the sender's lease
	SentAt               time.Time // when it was delivered, or failed for good
	LastError            string
}

// NotificationFilter selects notifications for ListNotifications: each set field must match
// (After and Before bound CreatedAt); newest first, Limit (0: 100, at most 1,000) from Offset.
type NotificationFilter struct {
	DAGID, RunID, TaskID, Notifier string
	Event                          vocab.NotifyEvent
	State                          vocab.DeliveryState
	After, Before                  time.Time
	Limit, Offset                  int
}

// NotificationOutcome settles a try of a claimed notification: State delivered or failed (for
// good), or pending again until NextAt; Error says why a try failed.
type NotificationOutcome struct {
	State  vocab.DeliveryState
	NextAt time.Time
	Error  string
	At     time.Time
}

// TaskCell is a task instance as a cell of the runs × tasks grid: its state and try.
type TaskCell struct {
	Run       int64
	TaskID    string
	State     vocab.TaskState
	TryNumber int
}

// RunWaits is what a DAG's open runs wait for (Store.OpenRunWaits): how many wait for a person
// (a task awaiting approval) and how many for a pool (a task scheduled).
type RunWaits struct {
	Approval int
	Pool     int
}
