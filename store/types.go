package store

import "time"

// Run is one DAG run row.
type Run struct {
	PK          int64
	DAGID       string
	RunID       string
	RunType     string // schedule | catchup | manual | test
	LogicalDate time.Time
	State       string
	Conf        string // JSON object
	Note        string
	NoQueue     bool // refused unless its ready tasks are admitted at once (§4.6)
	Owner       string
	QueuedAt    time.Time
	StartDate   time.Time
	EndDate     time.Time
	Reason      string
}

// TaskInstance is one task of one run.
type TaskInstance struct {
	Run       int64
	TaskID    string
	State     string
	TryNumber int
	StartDate time.Time
	EndDate   time.Time
	NextAt    time.Time
	Reason    string
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
	State      string
	Force      bool
	ReasonCode string
	Reason     string
	Rule       string
	Replay     bool
	// NotBefore is a reschedule sensor's next poke; zero for entries eligible at once.
	NotBefore   time.Time
	Fingerprint string
	CreatedAt   time.Time
	AdmittedAt  time.Time
	EndedAt     time.Time
	Needs       []Requirement
	// Owner is the daemon of the entry's run, for admission across daemons.
	Owner string
	DAGID string
	RunID string
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
	Ordering        string
	MaxQueued       int
	StarvationAfter time.Duration
	IncludeDeferred bool
	OnResize        string
	Description     string
	Source          string
}

// NoTarget marks a pool that is not draining toward a new capacity.
const NoTarget = -2

// Command is a request from another process to the daemon that owns a run.
type Command struct {
	ID     int64
	Kind   string
	Run    int64
	TaskID string
	Who    string
	Note   string
}

// Attempt is an ended attempt.
type Attempt struct {
	Run       int64
	TaskID    string
	TryNumber int
	State     string
	StartDate time.Time
	EndDate   time.Time
	Reason    string
}
