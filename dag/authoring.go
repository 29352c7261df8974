package dag

import (
	"maps"
	"slices"
	"time"
)

// DAGOption sets a field of a DAG built with New.
type DAGOption func(*DAG)

// TaskOption sets a field of a task added with the DAG's Go, Command, Bash, AddSensor or
// AddApproval methods.
type TaskOption func(*Task)

// New starts a Go-authored DAG (§2.2). Add tasks with its methods, then check it with Validate;
// the daemon validates registered DAGs the same way as YAML ones.
func New(id string, opts ...DAGOption) *DAG {
	d := &DAG{ID: id}
	for _, o := range opts {
		o(d)
	}
	ApplyDefaults(d)
	return d
}

// Schedule sets the schedule: 5-field cron, @hourly…, "@every 10m" or @reboot (§2.1).
func Schedule(s string) DAGOption { return func(d *DAG) { d.Schedule = s } }

// StartDate sets where catch-up starts.
func StartDate(t time.Time) DAGOption { return func(d *DAG) { d.StartDate = t } }

// Catchup turns catch-up of missed fires on or off (default off).
func Catchup(b bool) DAGOption { return func(d *DAG) { d.Catchup = b } }

// EveryNode fires the schedule on every live serve daemon, each fire bound to its daemon (§9).
func EveryNode(b bool) DAGOption { return func(d *DAG) { d.EveryNode = b } }

// MaxActiveRuns limits the DAG's runs running at once (default 16).
func MaxActiveRuns(n int) DAGOption { return func(d *DAG) { d.MaxActiveRuns = n } }

// MaxActiveTasks limits the running tasks of each run (default 16).
func MaxActiveTasks(n int) DAGOption { return func(d *DAG) { d.MaxActiveTasks = n } }

// Tags labels the DAG.
func Tags(tags ...string) DAGOption {
	return func(d *DAG) { d.Tags = append(d.Tags, tags...) }
}

// Team names the team the DAG belongs to (§15).
func Team(s string) DAGOption { return func(d *DAG) { d.Team = s } }

// Owner names who owns the DAG.
func Owner(s string) DAGOption { return func(d *DAG) { d.Owner = s } }

// Params sets the default params a manual trigger may override with conf.
func Params(p map[string]any) DAGOption { return func(d *DAG) { d.Params = maps.Clone(p) } }

// Description describes the DAG.
func Description(s string) DAGOption { return func(d *DAG) { d.Description = s } }

// ConcurrencyPolicy sets what a new fire does while a previous run is active: PolicyAllow,
// PolicyForbid or PolicyReplace (§3.5).
func ConcurrencyPolicy(s string) DAGOption { return func(d *DAG) { d.ConcurrencyPolicy = s } }

// Go adds a task running fn in the daemon's process.
func (d *DAG) Go(id string, fn TaskFunc, opts ...TaskOption) *Task {
	return d.add(&Task{ID: id, Kind: KindGo, Func: fn}, opts)
}

// Command adds a task running argv as a child process, without a shell.
func (d *DAG) Command(id string, argv []string, opts ...TaskOption) *Task {
	return d.add(&Task{ID: id, Kind: KindCommand, Command: slices.Clone(argv)}, opts)
}

// Bash adds a task running script with bash -c.
func (d *DAG) Bash(id, script string, opts ...TaskOption) *Task {
	return d.add(&Task{ID: id, Kind: KindBash, Bash: script}, opts)
}

// AddSensor adds a sensor (§5.1); unset sensor fields get their defaults.
func (d *DAG) AddSensor(id string, s Sensor, opts ...TaskOption) *Task {
	if s.HTTP != nil {
		h := *s.HTTP
		s.HTTP = &h
	}
	s.Command = slices.Clone(s.Command)
	return d.add(&Task{ID: id, Kind: KindSensor, Sensor: &s}, opts)
}

// AddApproval adds an approval gate (§5.2).
func (d *DAG) AddApproval(id string, a Approval, opts ...TaskOption) *Task {
	return d.add(&Task{ID: id, Kind: KindApproval, Approval: &a}, opts)
}

func (d *DAG) add(t *Task, opts []TaskOption) *Task {
	for _, o := range opts {
		o(t)
	}
	applyTaskDefaults(t)
	d.Tasks = append(d.Tasks, t)
	d.derived.reset()
	return t
}

// After makes the task depend on the given upstream tasks.
func After(ids ...string) TaskOption {
	return func(t *Task) { t.DependsOn = append(t.DependsOn, ids...) }
}

// Pools sets the task's pool requirements, e.g. {"source_db": 1, "destination_db": 2}.
func Pools(req map[string]int) TaskOption {
	return func(t *Task) {
		t.PoolRequirements = nil
		if len(req) > 0 {
			t.PoolRequirements = maps.Clone(req)
		}
	}
}

// PoolTemplates adds pool requirements with a template in the pool name or the slots (§14),
// evaluated when the task is queued, e.g. {"db_${{ item.shard }}": "1"}.
func PoolTemplates(req map[string]string) TaskOption {
	return func(t *Task) {
		t.PoolTemplates = nil
		if len(req) > 0 {
			t.PoolTemplates = maps.Clone(req)
		}
	}
}

// ExpandOver maps the task over a list computed when it is ready (§14): one ${{ }} giving a list,
// e.g. "${{ tasks.extract.output.files }}". Each item runs as a task instance of its own, with
// its item in TaskContext.Item (a Go task) or ${{ item }} (templates).
func ExpandOver(template string) TaskOption {
	return func(t *Task) { t.Expand = &Expand{Template: template} }
}

// ExpandItems maps the task over a literal list (§14).
func ExpandItems(items ...any) TaskOption {
	return func(t *Task) { t.Expand = &Expand{Items: slices.Clone(items)} }
}

// MaxMapLength bounds the items of a mapped task (default 1,024).
func MaxMapLength(n int) TaskOption { return func(t *Task) { t.MaxMapLength = n } }

// Retries allows n retries, so n+1 attempts (§3.3).
func Retries(n int) TaskOption { return func(t *Task) { t.Retries = n } }

// RetryDelayOpt sets the delay before a retry; 0 retries at once (default 300s).
func RetryDelayOpt(d time.Duration) TaskOption {
	return func(t *Task) {
		t.RetryDelay = d
		t.explicit |= explicitRetryDelay
	}
}

// RetryBackoff doubles the retry delay after each failed attempt, up to maxDelay (0 = no cap).
func RetryBackoff(maxDelay time.Duration) TaskOption {
	return func(t *Task) {
		t.RetryExponentialBackoff = true
		t.MaxRetryDelay = maxDelay
	}
}

// ExecutionTimeout bounds one attempt's run time.
func ExecutionTimeout(d time.Duration) TaskOption { return func(t *Task) { t.ExecutionTimeout = d } }

// QueueTimeout bounds how long an attempt may wait for admission, counted from its due time.
func QueueTimeout(d time.Duration) TaskOption { return func(t *Task) { t.QueueTimeout = d } }

// Priority sets the task's priority_weight (default 1; 0 is kept).
func Priority(n int) TaskOption {
	return func(t *Task) {
		t.PriorityWeight = n
		t.explicit |= explicitPriorityWeight
	}
}

// WeightRuleOpt sets how the priority adds up: WeightDownstream (default), WeightUpstream or
// WeightAbsolute.
func WeightRuleOpt(rule string) TaskOption { return func(t *Task) { t.WeightRule = rule } }

// TriggerRuleOpt sets when the task runs given its upstream states (default AllSuccess).
func TriggerRuleOpt(r TriggerRule) TaskOption { return func(t *Task) { t.TriggerRule = r } }

// Env adds environment variables to the task's process.
func Env(env map[string]string) TaskOption {
	return func(t *Task) {
		if t.Env == nil {
			t.Env = map[string]string{}
		}
		maps.Copy(t.Env, env)
	}
}

// Workdir sets the task's working directory.
func Workdir(dir string) TaskOption { return func(t *Task) { t.Workdir = dir } }

// MaxActiveTIsPerDAG limits the task's attempts running at once across all runs.
func MaxActiveTIsPerDAG(n int) TaskOption { return func(t *Task) { t.MaxActiveTIsPerDAG = n } }

// MaxActiveTIsPerDAGRun limits the task's attempts running at once within one run.
func MaxActiveTIsPerDAGRun(n int) TaskOption {
	return func(t *Task) { t.MaxActiveTIsPerDAGRun = n }
}

// RunOnFailure names the notifiers told once per run that ends failed (a DAG's on_failure, §13).
func RunOnFailure(notifiers ...string) DAGOption {
	return func(d *DAG) { d.OnFailure = slices.Clone(notifiers) }
}

// RunOnSuccess names the notifiers told once per run that ends success (a DAG's on_success).
func RunOnSuccess(notifiers ...string) DAGOption {
	return func(d *DAG) { d.OnSuccess = slices.Clone(notifiers) }
}

// OnDeadlineMiss names the notifiers told when a run is still open at its deadline.
func OnDeadlineMiss(notifiers ...string) DAGOption {
	return func(d *DAG) { d.OnDeadlineMiss = slices.Clone(notifiers) }
}

// DagrunTimeout fails a run still open that long after it started (§13).
func DagrunTimeout(t time.Duration) DAGOption { return func(d *DAG) { d.DagrunTimeout = t } }

// WithDeadline sets the run's deadline: after, counted from DeadlineFromLogicalDate or
// DeadlineFromQueued; it only notifies (OnDeadlineMiss).
func WithDeadline(after time.Duration, from string) DAGOption {
	return func(d *DAG) { d.Deadline = &Deadline{After: after, From: from} }
}

// OnFailure names the notifiers told when the task instance failed with no try left (§13).
func OnFailure(notifiers ...string) TaskOption {
	return func(t *Task) { t.handlers().OnFailure = slices.Clone(notifiers) }
}

// OnSuccess names the notifiers told when the task instance succeeded.
func OnSuccess(notifiers ...string) TaskOption {
	return func(t *Task) { t.handlers().OnSuccess = slices.Clone(notifiers) }
}

// OnRetry names the notifiers told for each failed try the task will retry.
func OnRetry(notifiers ...string) TaskOption {
	return func(t *Task) { t.handlers().OnRetry = slices.Clone(notifiers) }
}

// OnQueueWait names the notifiers told once per queue entry still not admitted after after.
func OnQueueWait(after time.Duration, notifiers ...string) TaskOption {
	return func(t *Task) { t.handlers().OnQueueWait = &QueueWait{After: after, Notify: slices.Clone(notifiers)} }
}
