package dag

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// notifierOpts knows the notifiers ops and mail.
var notifierOpts = LoadOptions{Notifiers: func(name string) bool { return name == "ops" || name == "mail" }}

func TestHandlersParse(t *testing.T) {
	t.Parallel()
	src := `dag_id: nightly
on_failure: [ops, mail]
on_success: ops
on_deadline_miss: [mail]
dagrun_timeout: 2h
deadline: {after: 90m, from: queued}
default_args:
  on_retry: [ops]
  on_queue_wait: {after: 30m, notify: [ops]}
tasks:
  - id: load
    bash: "true"
    on_failure: [mail]
  - id: gate
    approval:
    on_queue_wait: {after: 5m, notify: mail}
`
	d, errs := Parse("nightly.yaml", []byte(src), notifierOpts)
	if len(errs) > 0 {
		t.Fatal(errorLines(errs))
	}
	if !slices.Equal(d.OnFailure, []string{"ops", "mail"}) || !slices.Equal(d.OnSuccess, []string{"ops"}) ||
		!slices.Equal(d.OnDeadlineMiss, []string{"mail"}) || d.DagrunTimeout != 2*time.Hour ||
		d.Deadline == nil || d.Deadline.After != 90*time.Minute || d.Deadline.From != DeadlineFromQueued {
		t.Fatalf("DAG handlers = %+v %+v", d, d.Deadline)
	}
	load, gate := d.Tasks[0], d.Tasks[1]
	if !slices.Equal(load.Notifiers().OnFailure, []string{"mail"}) || !slices.Equal(load.Notifiers().OnRetry, []string{"ops"}) ||
		load.Notifiers().OnQueueWait == nil || load.Notifiers().OnQueueWait.After != 30*time.Minute {
		t.Fatalf("load = %+v", load)
	}
	if gate.Notifiers().OnQueueWait == nil || gate.Notifiers().OnQueueWait.After != 5*time.Minute || !slices.Equal(gate.Notifiers().OnQueueWait.Notify, []string{"mail"}) {
		t.Fatalf("gate's own on_queue_wait = %+v", gate.Notifiers().OnQueueWait)
	}
	if !d.HasHandlers() {
		t.Fatal("HasHandlers false")
	}
	// The deadline counts from where it says.
	lg, q := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)
	if got := d.Deadline.At(lg, q); !got.Equal(q.Add(90 * time.Minute)) {
		t.Fatalf("deadline at %v", got)
	}
}

// TestHandlerErrors: every mistake names file:line:col and the field.
func TestHandlerErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, src, want string }{
		{"unknown notifier on a task", "tasks:\n  - id: a\n    bash: x\n    on_failure: [ops, pager]\n",
			"x.yaml:4:23: dag x, task a: on_failure[1]: unknown notifier \"pager\" (not in notifiers: of poolflow.yaml)"},
		{"unknown notifier on the DAG", "on_success: [nope]\ntasks:\n  - id: a\n    bash: x\n",
			"x.yaml:1:14: dag x: on_success[0]: unknown notifier \"nope\""},
		{"unknown notifier in default_args", "default_args:\n  on_retry: pager\ntasks:\n  - id: a\n    bash: x\n  - id: b\n    bash: x\n",
			"x.yaml:2:13: dag x: default_args.on_retry[0]: unknown notifier \"pager\""},
		{"queue wait without after", "tasks:\n  - id: a\n    bash: x\n    on_queue_wait: {notify: [ops]}\n",
			"task a: on_queue_wait: missing after"},
		{"queue wait unknown notifier", "tasks:\n  - id: a\n    bash: x\n    on_queue_wait: {after: 1m, notify: [pager]}\n",
			"x.yaml:4:41: dag x, task a: on_queue_wait.notify[0]: unknown notifier \"pager\""},
		{"queue wait unknown field", "tasks:\n  - id: a\n    bash: x\n    on_queue_wait: {after: 1m, tell: [ops]}\n",
			"x.yaml:4:32: dag x, task a: on_queue_wait.tell: unknown field"},
		{"deadline from", "deadline: {after: 1h, from: start}\non_deadline_miss: [ops]\ntasks:\n  - id: a\n    bash: x\n",
			"x.yaml:1:29: dag x: deadline.from: invalid value \"start\" (want logical_date or queued)"},
		{"deadline tells nobody", "deadline: {after: 1h}\ntasks:\n  - id: a\n    bash: x\n",
			"a deadline without on_deadline_miss tells nobody"},
		{"negative timeout", "dagrun_timeout: -5s\ntasks:\n  - id: a\n    bash: x\n",
			"x.yaml:1:17: dag x: dagrun_timeout"},
		{"named twice", "on_failure: [ops, ops]\ntasks:\n  - id: a\n    bash: x\n",
			"x.yaml:1:19: dag x: on_failure[1]: notifier ops named twice"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := Parse("x.yaml", []byte(tc.src), notifierOpts)
			if got := errorLines(errs); !strings.Contains(got, tc.want) {
				t.Fatalf("errors:\n%s\nwant one containing %q", got, tc.want)
			}
		})
	}
}

func TestHandlersGo(t *testing.T) {
	t.Parallel()
	d := New("g", RunOnFailure("ops"), OnDeadlineMiss("mail"), WithDeadline(time.Hour, DeadlineFromLogicalDate),
		DagrunTimeout(3*time.Hour))
	d.Bash("a", "true", OnFailure("mail"), OnRetry("ops"), OnQueueWait(time.Minute, "ops"), OnSuccess("ops"))
	if errs := Validate(d, notifierOpts); len(errs) > 0 {
		t.Fatal(errorLines(errs))
	}
	d2 := New("g2", RunOnFailure("pager"))
	d2.Bash("a", "true")
	if errs := Validate(d2, notifierOpts); !strings.Contains(errorLines(errs), `unknown notifier "pager"`) {
		t.Fatalf("errors %q", errorLines(errs))
	}
	if !strings.Contains(d.CanonicalJSON(), `"on_queue_wait"`) {
		t.Fatal("the Go DAG's source leaves out its handlers")
	}
}
