package dag

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func parseFixture(t *testing.T, name string) *DAG {
	t.Helper()
	path := filepath.Join("testdata", "valid", name)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return mustParse(t, path, string(data))
}

// plain strips what the loader keeps for itself, so tasks compare with reflect.DeepEqual.
func plain(t *Task) Task {
	c := *t
	c.explicit = 0
	return c
}

func TestParseSpecExample(t *testing.T) {
	t.Parallel()
	d := parseFixture(t, "spec_example.yaml")

	if d.ID != "warehouse_export" || d.Description != "hourly export" || d.Schedule != "0 * * * *" ||
		d.Owner != "data-eng" || d.Catchup || d.IsJob {
		t.Errorf("DAG fields: %+v", d)
	}
	if want := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC); !d.StartDate.Equal(want) {
		t.Errorf("StartDate = %v, want %v", d.StartDate, want)
	}
	if d.MaxActiveRuns != 1 || d.MaxActiveTasks != 16 || d.ConcurrencyPolicy != PolicyAllow {
		t.Errorf("limits: runs %d, tasks %d, policy %q", d.MaxActiveRuns, d.MaxActiveTasks, d.ConcurrencyPolicy)
	}
	if !reflect.DeepEqual(d.Tags, []string{"warehouse"}) || !reflect.DeepEqual(d.Params, map[string]any{"region": "eu"}) {
		t.Errorf("tags %v, params %v", d.Tags, d.Params)
	}

	fromDefaults := Task{
		TriggerRule: AllSuccess, Retries: 2, RetryDelay: 30 * time.Second, RetryExponentialBackoff: true,
		MaxRetryDelay: 10 * time.Minute, ExecutionTimeout: time.Hour, QueueTimeout: 30 * time.Minute,
		PriorityWeight: 1, WeightRule: WeightDownstream,
	}
	task := func(mod func(*Task)) Task {
		t := fromDefaults
		mod(&t)
		return t
	}
	want := []Task{
		task(func(t *Task) {
			t.ID, t.Kind, t.Command = "extract", KindCommand, []string{"python3", "extract.py"}
			t.PoolRequirements = map[string]int{"source_db": 1}
		}),
		task(func(t *Task) {
			t.ID, t.Kind, t.Command, t.DependsOn = "transfer", KindCommand, []string{"run-transfer"}, []string{"extract"}
			t.PoolRequirements = map[string]int{"source_db": 1, "destination_db": 2}
			t.PriorityWeight = 10
		}),
		task(func(t *Task) {
			t.ID, t.Kind = "wait_for_file", KindSensor
			t.Sensor = &Sensor{FileExists: "/data/ready", Mode: ModeReschedule, PokeInterval: 30 * time.Second, Timeout: time.Hour}
		}),
		{
			// An approval gate takes none of the retry, timeout or pool default_args (§5.2).
			ID: "approve", Kind: KindApproval, DependsOn: []string{"transfer", "wait_for_file"},
			Approval: &Approval{Timeout: 24 * time.Hour}, TriggerRule: AllSuccess,
			RetryDelay: DefaultRetryDelay, PriorityWeight: 1, WeightRule: WeightDownstream,
		},
		task(func(t *Task) {
			t.ID, t.Kind, t.Command, t.DependsOn = "publish", KindCommand, []string{"./publish.sh"}, []string{"approve"}
		}),
	}
	if len(d.Tasks) != len(want) {
		t.Fatalf("%d tasks, want %d", len(d.Tasks), len(want))
	}
	for i, got := range d.Tasks {
		if g := plain(got); !reflect.DeepEqual(g, want[i]) {
			t.Errorf("task %d:\n got %+v\nwant %+v", i, g, want[i])
		}
	}
}

func TestParseJob(t *testing.T) {
	t.Parallel()
	d := parseFixture(t, "job.yaml")
	if !d.IsJob || d.ID != "job" || len(d.Tasks) != 1 {
		t.Fatalf("IsJob %v, id %q, %d tasks", d.IsJob, d.ID, len(d.Tasks))
	}
	want := Task{
		ID: "job", Kind: KindBash, Bash: "python export.py", TriggerRule: AllSuccess,
		RetryDelay: DefaultRetryDelay, QueueTimeout: 30 * time.Minute,
		PoolRequirements: map[string]int{"warehouse": 2}, PriorityWeight: 10, WeightRule: WeightDownstream,
	}
	if got := plain(d.Tasks[0]); !reflect.DeepEqual(got, want) {
		t.Errorf("job task:\n got %+v\nwant %+v", got, want)
	}
	if d.Schedule != "0 * * * *" || d.Description == "" {
		t.Errorf("DAG fields of a job: %+v", d)
	}
}

func TestParseAnchorsAndMergeKeys(t *testing.T) {
	t.Parallel()
	d := parseFixture(t, "anchors.yaml")
	a, b := d.Task("a"), d.Task("b")
	if a == nil || b == nil {
		t.Fatalf("tasks %v", d.Tasks)
	}
	env := map[string]string{"STAGE": "prod", "PORT": "8080"}
	if a.Retries != 3 || !reflect.DeepEqual(a.Env, env) || !reflect.DeepEqual(a.Command, []string{"sleep", "1"}) {
		t.Errorf("a merged from the anchor: %+v", plain(a))
	}
	if b.Retries != 1 || !reflect.DeepEqual(b.DependsOn, []string{"a"}) {
		t.Errorf("b overrides the merged retries and depends on a: %+v", plain(b))
	}
}

func TestParseDetails(t *testing.T) {
	t.Parallel()
	d := parseFixture(t, "details.yaml")
	if d.ID != "details" || d.MaxActiveTasks != 4 || d.MaxActiveRuns != DefaultMaxActiveRuns || d.ConcurrencyPolicy != PolicyReplace {
		t.Errorf("DAG fields: %+v", d)
	}
	if want := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC); !d.StartDate.Equal(want) {
		t.Errorf("a plain start_date is midnight UTC: %v", d.StartDate)
	}
	wantParams := map[string]any{
		"region":  "eu",
		"limits":  map[string]any{"rows": int64(1000), "ratio": 0.5, "strict": true},
		"targets": []any{"a", "b"},
	}
	if !reflect.DeepEqual(d.Params, wantParams) {
		t.Errorf("params %#v", d.Params)
	}

	tests := []struct {
		id    string
		check func(*Task) bool
		what  string
	}{
		{"inherits", func(t *Task) bool { return t.Bash == "echo one\necho two\n" }, "block scalar script"},
		{"inherits", func(t *Task) bool { return t.RetryDelay == 0 && t.PriorityWeight == 0 }, "explicit zeros from default_args kept"},
		{"inherits", func(t *Task) bool { return reflect.DeepEqual(t.PoolRequirements, map[string]int{"warehouse": 2}) }, "legacy pool from default_args"},
		{"inherits", func(t *Task) bool { return t.Workdir == "/srv" && t.Env["FROM_DEFAULTS"] == "1" }, "env and workdir from default_args"},
		{"own_requirements", func(t *Task) bool {
			return reflect.DeepEqual(t.PoolRequirements, map[string]int{"source_db": 1, "destination_db": 2})
		}, "own pool_requirements replace the default pool"},
		{"own_slots", func(t *Task) bool { return reflect.DeepEqual(t.PoolRequirements, map[string]int{"warehouse": 3}) }, "own pool_slots with the default pool"},
		{"own_slots", func(t *Task) bool {
			return t.TriggerRule == NoneFailedMinOneSuccess && t.WeightRule == WeightAbsolute
		}, "rules"},
		{"gate", func(t *Task) bool {
			return t.Kind == KindApproval && t.Approval.Timeout == 0 && t.PoolRequirements == nil && t.Retries == 0
		}, "null approval is a gate without timeout, without pool or retries"},
		{"gate", func(t *Task) bool { return t.PriorityWeight == 0 && t.Env["FROM_DEFAULTS"] == "1" }, "a gate takes the other default_args"},
		{"probe", func(t *Task) bool {
			s := t.Sensor
			return s.HTTP.URL == "https://example.com/health" && s.HTTP.Status == DefaultHTTPStatus && s.Mode == ModePoke &&
				s.PokeInterval == DefaultPokeInterval && s.Timeout == DefaultSensorTimeout && s.ExponentialBackoff &&
				s.MaxWait == 5*time.Minute && s.SoftFail
		}, "sensor defaults"},
		{"legacy_default_slots", func(t *Task) bool {
			return reflect.DeepEqual(t.PoolRequirements, map[string]int{"source_db": 2})
		}, "own pool with the default pool_slots"},
		{"legacy_default_slots", func(t *Task) bool {
			return t.MaxActiveTIsPerDAG == 1 && t.MaxActiveTIsPerDAGRun == 1 && t.ExecutionTimeout == 90*time.Second
		}, "limits and integer seconds"},
	}
	for _, tt := range tests {
		task := d.Task(tt.id)
		if task == nil {
			t.Fatalf("no task %s", tt.id)
		}
		if !tt.check(task) {
			t.Errorf("%s: %s: %+v", tt.id, tt.what, plain(task))
		}
	}
}

func TestParseNoRequirementsIsNil(t *testing.T) {
	t.Parallel()
	d := mustParse(t, "none.yaml", "tasks:\n  - {id: a, bash: echo a}\n  - {id: b, bash: echo b, pool_requirements: {}}\n")
	for _, task := range d.Tasks {
		if task.PoolRequirements != nil {
			t.Errorf("%s: PoolRequirements = %v, want nil", task.ID, task.PoolRequirements)
		}
	}
}

func TestParseDurations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value string
		want  time.Duration
	}{
		{"30s", 30 * time.Second},
		{"1h30m", 90 * time.Minute},
		{"45", 45 * time.Second},
		{"0", 0},
		{`"10m"`, 10 * time.Minute},
		{"0x10", 16 * time.Second},
	}
	for _, tt := range tests {
		d := mustParse(t, "dur.yaml", "tasks:\n  - id: a\n    bash: echo\n    execution_timeout: "+tt.value+"\n")
		if got := d.Tasks[0].ExecutionTimeout; got != tt.want {
			t.Errorf("execution_timeout: %s = %v, want %v", tt.value, got, tt.want)
		}
	}
}

func TestParseNullMeansUnset(t *testing.T) {
	t.Parallel()
	d := mustParse(t, "null.yaml", "schedule:\ndefault_args:\n  retries: 4\ntasks:\n  - id: a\n    bash: echo\n    retries: ~\n    priority_weight:\n")
	task := d.Tasks[0]
	if d.Schedule != "" || task.Retries != 4 || task.PriorityWeight != DefaultPriorityWeight {
		t.Errorf("schedule %q, retries %d, priority %d", d.Schedule, task.Retries, task.PriorityWeight)
	}
}

func TestParseAliasBomb(t *testing.T) {
	t.Parallel()
	// Each level doubles the previous one: expanded, the params would have 2^31 leaves.
	var b strings.Builder
	b.WriteString("params:\n  a0: &a0 [x, x]\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "  a%d: &a%d [*a%d, *a%d]\n", i, i, i-1, i-1)
	}
	b.WriteString("tasks: [{id: a, bash: echo}]\n")
	d, errs := Parse("bomb.yaml", []byte(b.String()), LoadOptions{})
	if d != nil || len(errs) == 0 {
		t.Fatal("alias bomb loaded")
	}
	if !strings.Contains(errs[0].Msg, "too large") {
		t.Errorf("error: %v", errs[0])
	}
}

func TestImportErrorFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  ImportError
		want string
	}{
		{
			ImportError{File: "dags/s4.yaml", Line: 3, Column: 5, DAGID: "s4", TaskID: "cannot_run",
				Field: "pool_requirements.two", Value: "4", Msg: "4 slots exceed capacity 2"},
			"dags/s4.yaml:3:5: dag s4, task cannot_run: pool_requirements.two: 4 slots exceed capacity 2",
		},
		{ImportError{File: "dags/a.yaml", Line: 1, Column: 11, DAGID: "a", Field: "schedule", Msg: "bad"}, "dags/a.yaml:1:11: dag a: schedule: bad"},
		{ImportError{File: "dags/a.yaml", Line: 2, Column: 1, DAGID: "a", TaskID: "t", Msg: "bad"}, "dags/a.yaml:2:1: dag a, task t: bad"},
		{ImportError{File: "dags/a.yaml", DAGID: "a", Msg: "read file: denied"}, "dags/a.yaml: dag a: read file: denied"},
		{ImportError{DAGID: "go_dag", TaskID: "t", Field: "retries", Msg: "must not be negative, got -1"}, "go:go_dag: dag go_dag, task t: retries: must not be negative, got -1"},
		{ImportError{File: "dags", Msg: "read dags folder: gone"}, "dags: read dags folder: gone"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestParseKeepsPositionsForLaterValidation(t *testing.T) {
	t.Parallel()
	src := "tasks:\n  - id: a\n    bash: echo\n    pool_requirements: {warehouse: 3}\n"
	d := mustParse(t, "dags/later.yaml", src)
	// The pool shrank after loading: the daemon validates again and still gets the position.
	errs := Validate(d, LoadOptions{Pools: func(string) (int, bool) { return 2, true }})
	want := "dags/later.yaml:4:36: dag later, task a: pool_requirements.warehouse: 3 slots exceed capacity 2"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("Validate after a shrink:\n got %v\nwant %s", errorLines(errs), want)
	}
	if e := errs[0]; e.Value != "3" || e.Field != "pool_requirements.warehouse" || e.TaskID != "a" {
		t.Errorf("structured fields: %+v", *e)
	}
}

func TestParseUnlimitedAndNilLookup(t *testing.T) {
	t.Parallel()
	src := "tasks:\n  - id: a\n    bash: echo\n    pool_requirements: {unlimited: 100000}\n  - id: b\n    bash: echo\n    pool: nowhere\n"
	if _, errs := Parse("u.yaml", []byte(src), LoadOptions{}); len(errs) != 0 {
		t.Errorf("nil PoolLookup skips pool checks: %v", errorLines(errs))
	}
	errs := errorLines(mustFail(t, "u.yaml", src))
	if want := "u.yaml:7:11: dag u, task b: pool: unknown pool \"nowhere\"\n"; errs != want {
		t.Errorf("unlimited pool has no capacity check; got\n%s", errs)
	}
}

func mustFail(t *testing.T, name, src string) []*ImportError {
	t.Helper()
	d, errs := Parse(name, []byte(src), testOptions())
	if d != nil || len(errs) == 0 {
		t.Fatalf("Parse(%s) succeeded", name)
	}
	return errs
}
