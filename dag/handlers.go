package dag

import (
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// Handlers and deadlines (§13). A handler is a list of notifier names (notifiers: in
// poolflow.yaml) that an event is sent to:
//   - on a DAG: on_failure and on_success fire once per run when it ends failed or success
//     (a job's top-level ones are these), on_deadline_miss when a run is still open at its
//     deadline;
//   - on a task (or in default_args for every task): on_failure when the task instance failed
//     with no try left, on_success when it succeeded, on_retry for each failed try that will be
//     retried, on_queue_wait once per queue entry still not admitted after `after`.
//
// dagrun_timeout fails a run still open after it (its running attempts stopped, its waiting
// entries retired, reason dagrun_timeout); deadline only notifies.

// QueueWait is on_queue_wait: notify when an entry has waited After for admission.
type QueueWait struct {
	After  time.Duration
	Notify []string
}

// Deadline is a run's deadline (§13): After counted From its logical date or its queueing.
type Deadline struct {
	After time.Duration
	From  string // DeadlineFromLogicalDate (the default) or DeadlineFromQueued
}

// Where a deadline counts from.
const (
	DeadlineFromLogicalDate = "logical_date"
	DeadlineFromQueued      = "queued"
)

// At is when a run with this logical date, queued at queued, misses the deadline.
func (dl *Deadline) At(logical, queued time.Time) time.Time {
	if dl.From == DeadlineFromQueued {
		return queued.Add(dl.After)
	}
	return logical.Add(dl.After)
}

// HasHandlers reports whether anything of d sends notifications.
func (d *DAG) HasHandlers() bool {
	if len(d.OnFailure)+len(d.OnSuccess)+len(d.OnDeadlineMiss) > 0 {
		return true
	}
	for _, t := range d.Tasks {
		if t.Handlers != nil {
			return true
		}
	}
	return false
}

var (
	queueWaitFields = []subField[QueueWait]{
		sub("after", (*reader).positiveDuration, func(q *QueueWait) *time.Duration { return &q.After }),
		sub("notify", (*reader).ids, func(q *QueueWait) *[]string { return &q.Notify }),
	}
	deadlineFields = []subField[Deadline]{
		sub("after", (*reader).positiveDuration, func(dl *Deadline) *time.Duration { return &dl.After }),
		sub("from", (*reader).str, func(dl *Deadline) *string { return &dl.From }),
	}
)

func (r *reader) queueWait(n *yaml.Node, a at) (*QueueWait, bool) {
	q := &QueueWait{}
	readFields(r, n, a, queueWaitFields, q)
	return q, true
}

func (r *reader) deadline(n *yaml.Node, a at) (*Deadline, bool) {
	dl := &Deadline{}
	readFields(r, n, a, deadlineFields, dl)
	return dl, true
}

// checkHandlers checks the notifier names of one handler list (path: on_failure, …) of task i
// (srcDAG for the DAG's own).
func (v *validator) checkHandlers(i int, path string, names []string) {
	if v.bad(i, path) {
		return
	}
	seen := map[string]bool{}
	for k, name := range names {
		p := fmt.Sprintf("%s[%d]", path, k)
		switch {
		case name == "":
			v.fail(i, p, name, "empty notifier name")
		case seen[name]:
			v.fail(i, p, name, "notifier %s named twice", name)
		case v.opts.Notifiers != nil && !v.opts.Notifiers(name):
			v.fail(i, p, name, "unknown notifier %q (not in notifiers: of poolflow.yaml)", name)
		}
		seen[name] = true
	}
}

func (v *validator) checkTaskHandlers(i int, t *Task) {
	h := t.Notifiers()
	v.checkHandlers(i, "on_failure", h.OnFailure)
	v.checkHandlers(i, "on_success", h.OnSuccess)
	v.checkHandlers(i, "on_retry", h.OnRetry)
	if q := h.OnQueueWait; q != nil && !v.bad(i, "on_queue_wait") {
		if q.After <= 0 && !v.bad(i, "on_queue_wait.after") {
			v.fail(i, "on_queue_wait", "", "missing after (how long an entry waits before it is said, e.g. 30m)")
		}
		if len(q.Notify) == 0 && !v.bad(i, "on_queue_wait.notify") {
			v.fail(i, "on_queue_wait", "", "missing notify (a list of notifier names)")
		}
		v.checkHandlers(i, "on_queue_wait.notify", q.Notify)
	}
}

func (v *validator) checkDAGHandlers() {
	d := v.d
	v.checkHandlers(srcDAG, "on_failure", d.OnFailure)
	v.checkHandlers(srcDAG, "on_success", d.OnSuccess)
	v.checkHandlers(srcDAG, "on_deadline_miss", d.OnDeadlineMiss)
	v.nonNegativeDuration(srcDAG, "dagrun_timeout", d.DagrunTimeout)
	if dl := d.Deadline; dl != nil && !v.bad(srcDAG, "deadline") {
		if dl.After <= 0 && !v.bad(srcDAG, "deadline.after") {
			v.fail(srcDAG, "deadline", "", "missing after (e.g. 2h)")
		}
		switch dl.From {
		case "", DeadlineFromLogicalDate, DeadlineFromQueued:
		default:
			if !v.bad(srcDAG, "deadline.from") {
				v.fail(srcDAG, "deadline.from", dl.From, "invalid value %q (want logical_date or queued)", dl.From)
			}
		}
		if len(d.OnDeadlineMiss) == 0 && !v.bad(srcDAG, "on_deadline_miss") {
			v.fail(srcDAG, "deadline", "", "a deadline without on_deadline_miss tells nobody (add on_deadline_miss: [notifier])")
		}
	}
}
