package dag

import (
	"context"
	"time"
)

// Kind says what an attempt of a task runs.
type Kind string

const (
	KindCommand  Kind = "command"  // argv, no shell
	KindBash     Kind = "bash"     // bash -c SCRIPT
	KindGo       Kind = "go"       // a registered Go function
	KindSensor   Kind = "sensor"   // pokes a check until it is met (§5.1)
	KindApproval Kind = "approval" // waits for a person (§5.2); no queue entry, no pool
)

// Concurrency policies of a scheduled DAG (§3.5).
const (
	PolicyAllow   = "allow"
	PolicyForbid  = "forbid"
	PolicyReplace = "replace"
)

// Weight rules (§4.4), as in Airflow.
const (
	WeightDownstream = "downstream"
	WeightUpstream   = "upstream"
	WeightAbsolute   = "absolute"
)

// Defaults of §2.1.
const (
	DefaultRetryDelay     = 300 * time.Second
	DefaultPriorityWeight = 1
	DefaultMaxActiveRuns  = 16
	DefaultMaxActiveTasks = 16
	DefaultPokeInterval   = 60 * time.Second
	DefaultSensorTimeout  = 7 * 24 * time.Hour
)

// TaskFunc is a Go-authored task. A returned error or a panic fails the attempt.
type TaskFunc func(ctx context.Context, ti *TaskContext) error

// TaskContext is what a Go task sees of its attempt.
type TaskContext struct {
	DAGID       string
	RunID       string
	TaskID      string
	TryNumber   int
	LogicalDate time.Time
	Params      map[string]any
	// Item and MapIndex are a mapped task instance's item and index (MapIndex -1 otherwise).
	Item     any
	MapIndex int
	// Log receives the attempt's log lines (the attempt log file).
	Log func(format string, args ...any)
	// Output is what the task publishes when it succeeds (§14): a value that encodes as one JSON
	// object of at most 64 KiB (a map or a struct), read by downstream templates as
	// tasks.<id>.output. nil publishes nothing; anything else fails the attempt.
	Output any
}

// DAG is one loaded DAG, from YAML or Go. A job is a one-task DAG whose task id is the DAG id.
type DAG struct {
	ID          string
	File        string // source file; "" for Go DAGs
	Description string
	// Schedule is the raw schedule ("" = manual only): 5-field cron, @hourly…, @every D, @reboot.
	Schedule  string
	StartDate time.Time
	Catchup   bool
	// EveryNode fires the schedule on every live serve daemon, each fire a run bound to the
	// daemon that fired it (§9); max_active_runs and the concurrency policy count per daemon.
	EveryNode         bool
	MaxActiveRuns     int
	MaxActiveTasks    int
	ConcurrencyPolicy string
	Tags              []string
	Owner             string
	// Team is the team the DAG belongs to (§15): its tasks may use only the pools open to that
	// team, and a user whose role is scoped to a team acts only on that team's DAGs. "" = none.
	Team   string
	Params map[string]any
	IsJob  bool
	// OnFailure, OnSuccess: notifier names told once per run that ended failed or success;
	// OnDeadlineMiss those told when a run is still open at Deadline (§13).
	OnFailure, OnSuccess, OnDeadlineMiss []string
	// DagrunTimeout fails a run still open that long after it started (0 = none).
	DagrunTimeout time.Duration
	Deadline      *Deadline
	// Tasks in file (or registration) order; queue IDs follow this order (§4.4).
	Tasks []*Task

	// src locates the YAML tokens of the fields, for errors found after parsing; nil for Go DAGs.
	src *lazySource
	// text is the YAML file's bytes, its source (Source); nil for Go DAGs. A clean file's
	// bytes are the ones src keeps, not a copy.
	text []byte
	// derived caches the id index, Order and Weights (graph.go).
	derived derived
}

// Task is one node of a DAG with every default already applied.
type Task struct {
	ID        string
	DependsOn []string
	Kind      Kind
	Command   []string // KindCommand
	Bash      string   // KindBash
	Func      TaskFunc // KindGo
	Sensor    *Sensor  // KindSensor
	Approval  *Approval

	Env     map[string]string
	Workdir string

	TriggerRule      TriggerRule
	Retries          int
	RetryDelay       time.Duration
	MaxRetryDelay    time.Duration // 0 = no cap
	ExecutionTimeout time.Duration // 0 = none
	QueueTimeout     time.Duration // 0 = none

	// PoolRequirements is the named-pool requirement map: from pool_requirements, or from the
	// legacy pool + pool_slots (exactly {pool: pool_slots}); nil when the task declares none
	// (then rules, then {default: 1} apply at enqueue time).
	PoolRequirements map[string]int
	// PoolTemplates are the requirements with a template in the pool name or the slots (§14),
	// the slots as written: evaluated when the task is queued, added to PoolRequirements.
	PoolTemplates map[string]string

	// Expand makes the task mapped (§14): one task instance per item of a list, literal or
	// computed by a template when the task is ready; nil for a plain task.
	Expand *Expand
	// MaxMapLength bounds the items of a mapped task (0: DefaultMaxMapLength); above it the
	// task fails naming the length.
	MaxMapLength int

	PriorityWeight        int
	WeightRule            string
	MaxActiveTIsPerDAG    int // 0 = no limit
	MaxActiveTIsPerDAGRun int // 0 = no limit

	// Handlers are the task's notifiers (§13), nil when it has none: most tasks have none,
	// and a pointer keeps their 80 bytes out of every task of a 95,000-task DAG (issue 25's
	// bytes of memory per byte of YAML). Read them with Notifiers.
	Handlers *TaskHandlers

	RetryExponentialBackoff bool
	// explicit marks zero values that were set on purpose, so ApplyDefaults keeps them.
	explicit explicitFields
}

// TaskHandlers name the notifiers told when a task instance failed (no try left), succeeded,
// failed a try it will retry, or waited OnQueueWait.After for admission.
type TaskHandlers struct {
	OnFailure, OnSuccess, OnRetry []string
	OnQueueWait                   *QueueWait
}

// Notifiers returns the task's handlers, empty when it has none.
func (t *Task) Notifiers() TaskHandlers {
	if t.Handlers == nil {
		return TaskHandlers{}
	}
	return *t.Handlers
}

// handlers returns the task's handlers to be set, making them on first use.
func (t *Task) handlers() *TaskHandlers {
	if t.Handlers == nil {
		t.Handlers = &TaskHandlers{}
	}
	return t.Handlers
}

// Expand is the list a mapped task maps over: Items written out, or Template, one ${{ }}
// giving a list (an upstream output, params, conf).
type Expand struct {
	Items    []any
	Template string
}

// DefaultMaxMapLength is max_map_length when a task does not set it (Airflow's default).
const DefaultMaxMapLength = 1024

// Sensor is a poking task (§5.1).
type Sensor struct {
	Command            []string // exit 0 = met, 1 = not yet, other = error
	FileExists         string
	HTTP               *HTTPCheck
	Mode               string // poke | reschedule
	PokeInterval       time.Duration
	Timeout            time.Duration
	SoftFail           bool
	ExponentialBackoff bool
	MaxWait            time.Duration // cap of the backed-off interval; 0 = none
}

// HTTPCheck is met when GET URL answers Status (default 200).
type HTTPCheck struct {
	URL    string
	Status int
}

// Sensor modes.
const (
	ModePoke       = "poke"
	ModeReschedule = "reschedule"
)

// Approval is a gate waiting for a person (§5.2).
type Approval struct {
	Timeout time.Duration // 0 = none
}
