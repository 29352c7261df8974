package dag

import (
	"reflect"
	"testing"
	"time"
)

func TestApplyDefaults(t *testing.T) {
	t.Parallel()
	d := &DAG{ID: "bare", Tasks: []*Task{
		{ID: "cmd", Command: []string{"true"}},
		{ID: "script", Bash: "true"},
		{ID: "poke", Sensor: &Sensor{HTTP: &HTTPCheck{URL: "http://localhost/"}}},
		{ID: "gate", Approval: &Approval{}},
		{ID: "both", Bash: "true", Command: []string{"true"}},
	}}
	ApplyDefaults(d)
	if d.MaxActiveRuns != 16 || d.MaxActiveTasks != 16 || d.ConcurrencyPolicy != PolicyAllow || d.Params == nil || d.Catchup {
		t.Errorf("DAG defaults: %+v", d)
	}
	kinds := []Kind{KindCommand, KindBash, KindSensor, KindApproval, ""}
	for i, task := range d.Tasks {
		if task.Kind != kinds[i] {
			t.Errorf("%s: kind %q, want %q", task.ID, task.Kind, kinds[i])
		}
		if task.TriggerRule != AllSuccess || task.WeightRule != WeightDownstream || task.PriorityWeight != 1 ||
			task.RetryDelay != 300*time.Second || task.Retries != 0 || task.ExecutionTimeout != 0 || task.QueueTimeout != 0 {
			t.Errorf("%s: task defaults %+v", task.ID, plain(task))
		}
	}
	s := d.Tasks[2].Sensor
	if s.Mode != ModePoke || s.PokeInterval != time.Minute || s.Timeout != 7*24*time.Hour || s.HTTP.Status != 200 {
		t.Errorf("sensor defaults %+v, http %+v", s, s.HTTP)
	}

	before := snapshot(d)
	ApplyDefaults(d)
	if !reflect.DeepEqual(before, snapshot(d)) {
		t.Error("ApplyDefaults is not idempotent")
	}
}

func snapshot(d *DAG) []Task {
	var out []Task
	for _, t := range d.Tasks {
		out = append(out, plain(t))
	}
	return out
}

func TestApplyDefaultsKeepsSetValues(t *testing.T) {
	t.Parallel()
	task := &Task{
		Bash: "true", TriggerRule: OneFailed, WeightRule: WeightAbsolute, PriorityWeight: 7, RetryDelay: time.Second,
		Sensor: nil,
	}
	d := &DAG{MaxActiveRuns: 1, MaxActiveTasks: 2, ConcurrencyPolicy: PolicyForbid, Tasks: []*Task{task}}
	ApplyDefaults(d)
	if d.MaxActiveRuns != 1 || d.MaxActiveTasks != 2 || d.ConcurrencyPolicy != PolicyForbid {
		t.Errorf("DAG %+v", d)
	}
	if task.TriggerRule != OneFailed || task.WeightRule != WeightAbsolute || task.PriorityWeight != 7 || task.RetryDelay != time.Second {
		t.Errorf("task %+v", plain(task))
	}
}

func TestExplicitZerosSurviveDefaults(t *testing.T) {
	t.Parallel()
	g := New("zeros")
	g.Bash("a", "true", Priority(0), RetryDelayOpt(0))
	g.Bash("b", "true")
	y := mustParse(t, "zeros.yaml", "tasks:\n  - {id: a, bash: 'true', priority_weight: 0, retry_delay: 0}\n  - {id: b, bash: 'true'}\n")
	for _, d := range []*DAG{g, y} {
		ApplyDefaults(d)
		a, b := d.Task("a"), d.Task("b")
		if a.PriorityWeight != 0 || a.RetryDelay != 0 {
			t.Errorf("%s: explicit zeros replaced: %+v", d.ID, plain(a))
		}
		if b.PriorityWeight != 1 || b.RetryDelay != DefaultRetryDelay {
			t.Errorf("%s: defaults missing: %+v", d.ID, plain(b))
		}
	}
}
