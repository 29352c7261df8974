package dag

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"
)

func noop(context.Context, *TaskContext) error { return nil }

func TestNewSetsDAGOptions(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	params := map[string]any{"region": "eu"}
	d := New("export",
		Schedule("@hourly"), StartDate(start), Catchup(true), MaxActiveRuns(1), MaxActiveTasks(4),
		Tags("warehouse", "nightly"), Owner("data-eng"), Params(params), Description("hourly export"),
		ConcurrencyPolicy(PolicyForbid),
	)
	params["region"] = "us" // New keeps its own copy
	want := DAG{
		ID: "export", Description: "hourly export", Schedule: "@hourly", StartDate: start, Catchup: true,
		MaxActiveRuns: 1, MaxActiveTasks: 4, ConcurrencyPolicy: PolicyForbid, Tags: []string{"warehouse", "nightly"},
		Owner: "data-eng", Params: map[string]any{"region": "eu"},
	}
	if !reflect.DeepEqual(*d, want) {
		t.Errorf("New:\n got %+v\nwant %+v", *d, want)
	}
	if bare := New("bare"); bare.MaxActiveRuns != 16 || bare.MaxActiveTasks != 16 || bare.ConcurrencyPolicy != PolicyAllow {
		t.Errorf("defaults: %+v", bare)
	}
}

func TestTaskMethodsAndOptions(t *testing.T) {
	t.Parallel()
	d := New("etl")
	argv := []string{"extract", "--all"}
	extract := d.Command("extract", argv,
		Pools(map[string]int{"source_db": 1}), Retries(3), RetryDelayOpt(10*time.Second), RetryBackoff(time.Minute),
		ExecutionTimeout(time.Hour), QueueTimeout(30*time.Minute), Priority(5), WeightRuleOpt(WeightUpstream),
		Env(map[string]string{"A": "1"}), Env(map[string]string{"B": "2"}), Workdir("/srv"),
		MaxActiveTIsPerDAG(1), MaxActiveTIsPerDAGRun(1),
	)
	argv[0] = "changed" // the task keeps its own argv
	transform := d.Go("transform", noop, After("extract"), TriggerRuleOpt(AllDone))
	load := d.Bash("load", "echo load", After("transform"), After("extract"))
	sensor := Sensor{HTTP: &HTTPCheck{URL: "http://localhost/health"}, Mode: ModeReschedule}
	wait := d.AddSensor("wait", sensor)
	sensor.HTTP.URL = "changed"
	gate := d.AddApproval("gate", Approval{Timeout: time.Hour}, After("load", "wait"))

	if got := []*Task{extract, transform, load, wait, gate}; !slices.Equal(got, d.Tasks) {
		t.Fatalf("the methods return the tasks they add, in order")
	}
	wantExtract := Task{
		ID: "extract", Kind: KindCommand, Command: []string{"extract", "--all"},
		Env: map[string]string{"A": "1", "B": "2"}, Workdir: "/srv", TriggerRule: AllSuccess,
		Retries: 3, RetryDelay: 10 * time.Second, RetryExponentialBackoff: true, MaxRetryDelay: time.Minute,
		ExecutionTimeout: time.Hour, QueueTimeout: 30 * time.Minute, PoolRequirements: map[string]int{"source_db": 1},
		PriorityWeight: 5, WeightRule: WeightUpstream, MaxActiveTIsPerDAG: 1, MaxActiveTIsPerDAGRun: 1,
	}
	if got := plain(extract); !reflect.DeepEqual(got, wantExtract) {
		t.Errorf("extract:\n got %+v\nwant %+v", got, wantExtract)
	}
	if transform.Kind != KindGo || transform.Func == nil || transform.TriggerRule != AllDone || transform.PriorityWeight != 1 {
		t.Errorf("transform %+v", plain(transform))
	}
	if load.Kind != KindBash || !slices.Equal(load.DependsOn, []string{"transform", "extract"}) {
		t.Errorf("load %+v", plain(load))
	}
	if s := wait.Sensor; wait.Kind != KindSensor || s.HTTP.URL != "http://localhost/health" || s.HTTP.Status != 200 ||
		s.PokeInterval != DefaultPokeInterval || s.Timeout != DefaultSensorTimeout || s.Mode != ModeReschedule {
		t.Errorf("wait %+v, sensor %+v", plain(wait), s)
	}
	if gate.Kind != KindApproval || gate.Approval.Timeout != time.Hour {
		t.Errorf("gate %+v", plain(gate))
	}
	if errs := Validate(d, testOptions()); len(errs) != 0 {
		t.Errorf("Validate: %v", errorLines(errs))
	}
}

func TestValidateGoDAG(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		build func(d *DAG)
		want  []string
	}{
		{"valid", func(d *DAG) {
			d.Go("a", noop, Pools(map[string]int{"warehouse": 4}))
			d.Bash("b", "true", After("a"), Pools(map[string]int{"unlimited": 99}))
		}, nil},
		{"duplicate id", func(d *DAG) {
			d.Go("a", noop)
			d.Go("a", noop)
		}, []string{`go:g: dag g, task a: id: duplicate task id "a"`}},
		{"cycle", func(d *DAG) {
			d.Bash("a", "true", After("c"))
			d.Bash("b", "true", After("a"))
			d.Bash("c", "true", After("b"))
		}, []string{"go:g: dag g, task c: depends_on[0]: cycle: a -> b -> c -> a"}},
		{"unknown upstream", func(d *DAG) {
			d.Bash("a", "true", After("ghost"))
		}, []string{`go:g: dag g, task a: depends_on[0]: unknown task "ghost"`}},
		{"pools", func(d *DAG) {
			d.Bash("a", "true", Pools(map[string]int{"two": 3, "nope": 1, "one": 0, "_dag": 1}))
		}, []string{
			`go:g: dag g, task a: pool_requirements._dag: pool names starting with "_" are reserved for implicit pools`,
			`go:g: dag g, task a: pool_requirements.nope: unknown pool "nope"`,
			`go:g: dag g, task a: pool_requirements.one: slots must be at least 1, got 0`,
			`go:g: dag g, task a: pool_requirements.two: 3 slots exceed capacity 2`,
		}},
		{"nil function", func(d *DAG) {
			d.Go("a", nil)
		}, []string{"go:g: dag g, task a: needs exactly one of command, bash, sensor, approval or a Go function"}},
		{"kind mismatch", func(d *DAG) {
			d.Go("a", noop).Kind = KindBash
		}, []string{`go:g: dag g, task a: kind "bash" does not match the task's func`}},
		{"rules and values", func(d *DAG) {
			d.Bash("a", "true", TriggerRuleOpt("whenever"), WeightRuleOpt("heavy"), Retries(-1),
				ExecutionTimeout(-time.Second), MaxActiveTIsPerDAG(-1))
		}, []string{
			`go:g: dag g, task a: trigger_rule: invalid trigger rule "whenever"`,
			`go:g: dag g, task a: weight_rule: invalid weight rule "heavy" (want downstream, upstream or absolute)`,
			`go:g: dag g, task a: retries: must not be negative, got -1`,
			`go:g: dag g, task a: max_active_tis_per_dag: must not be negative, got -1`,
			`go:g: dag g, task a: execution_timeout: must not be negative, got -1s`,
		}},
		{"sensor", func(d *DAG) {
			d.AddSensor("s", Sensor{FileExists: "/x", Command: []string{"test"}, Mode: "sometimes"})
		}, []string{
			`go:g: dag g, task s: sensor.file_exists: two check kinds in one sensor: command and file_exists`,
			`go:g: dag g, task s: sensor.mode: invalid sensor mode "sometimes" (want poke or reschedule)`,
		}},
		{"approval with a pool", func(d *DAG) {
			d.AddApproval("gate", Approval{}, Pools(map[string]int{"one": 1}), Retries(1))
		}, []string{
			"go:g: dag g, task gate: pool_requirements: an approval task needs no pool",
			"go:g: dag g, task gate: retries: an approval task is never retried",
		}},
		{"no tasks", func(*DAG) {}, []string{"go:g: dag g: tasks: a DAG needs at least one task"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := New("g")
			tt.build(d)
			var got []string
			for _, e := range Validate(d, testOptions()) {
				got = append(got, e.Error())
				if e.File != "" || e.Line != 0 {
					t.Errorf("a Go DAG error has no file position: %+v", *e)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Validate:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestValidateDAGLevel(t *testing.T) {
	t.Parallel()
	d := New("bad id", Schedule("every day"), ConcurrencyPolicy("queue"), MaxActiveRuns(-1))
	d.Bash("a", "true")
	got := map[string]bool{}
	for _, e := range Validate(d, LoadOptions{}) {
		got[e.Field] = true
	}
	want := map[string]bool{"dag_id": true, "schedule": true, "concurrency_policy": true, "max_active_runs": true}
	if !maps.Equal(got, want) {
		t.Errorf("fields with errors %v, want %v", got, want)
	}
}
