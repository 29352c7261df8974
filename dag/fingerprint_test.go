package dag

import (
	"context"
	"testing"
	"time"
)

func baseTask() *Task {
	t := &Task{
		ID: "transfer", DependsOn: []string{"a", "b"}, Kind: KindCommand, Command: []string{"run", "--all"},
		Env: map[string]string{"A": "1", "B": "2"}, Workdir: "/srv", Retries: 2,
		PoolRequirements: map[string]int{"source_db": 1, "destination_db": 2},
	}
	applyTaskDefaults(t)
	return t
}

func TestFingerprintChangesWithTheDefinition(t *testing.T) {
	t.Parallel()
	base := baseTask().Fingerprint()
	if len(base) != 32 {
		t.Fatalf("fingerprint %q", base)
	}
	changes := map[string]func(*Task){
		"id":                        func(t *Task) { t.ID = "other" },
		"depends_on":                func(t *Task) { t.DependsOn = []string{"a"} },
		"kind":                      func(t *Task) { t.Kind = KindBash },
		"command":                   func(t *Task) { t.Command = []string{"run", "--some"} },
		"argv split":                func(t *Task) { t.Command = []string{"run --all"} },
		"bash":                      func(t *Task) { t.Bash = "echo" },
		"sensor":                    func(t *Task) { t.Sensor = &Sensor{FileExists: "/x"} },
		"approval":                  func(t *Task) { t.Approval = &Approval{} },
		"env value":                 func(t *Task) { t.Env = map[string]string{"A": "1", "B": "3"} },
		"workdir":                   func(t *Task) { t.Workdir = "/tmp" },
		"trigger rule":              func(t *Task) { t.TriggerRule = AllDone },
		"retries":                   func(t *Task) { t.Retries = 3 },
		"retry delay":               func(t *Task) { t.RetryDelay = time.Second },
		"backoff":                   func(t *Task) { t.RetryExponentialBackoff = true },
		"max retry delay":           func(t *Task) { t.MaxRetryDelay = time.Hour },
		"execution timeout":         func(t *Task) { t.ExecutionTimeout = time.Hour },
		"queue timeout":             func(t *Task) { t.QueueTimeout = time.Hour },
		"requirement slots":         func(t *Task) { t.PoolRequirements = map[string]int{"source_db": 1, "destination_db": 3} },
		"requirement pool":          func(t *Task) { t.PoolRequirements = map[string]int{"source_db": 1} },
		"no requirements":           func(t *Task) { t.PoolRequirements = nil },
		"priority":                  func(t *Task) { t.PriorityWeight = 2 },
		"weight rule":               func(t *Task) { t.WeightRule = WeightAbsolute },
		"max_active_tis_per_dag":    func(t *Task) { t.MaxActiveTIsPerDAG = 1 },
		"max_active_tis_per_dagrun": func(t *Task) { t.MaxActiveTIsPerDAGRun = 1 },
	}
	for name, change := range changes {
		task := baseTask()
		change(task)
		if task.Fingerprint() == base {
			t.Errorf("changing the %s keeps the fingerprint", name)
		}
	}
}

func TestFingerprintIgnoresWhatDoesNotMatter(t *testing.T) {
	t.Parallel()
	base := baseTask().Fingerprint()
	same := map[string]func(*Task){
		"dependency order": func(t *Task) { t.DependsOn = []string{"b", "a"} },
		"map order":        func(t *Task) { t.Env = map[string]string{"B": "2", "A": "1"} },
		"go function":      func(t *Task) { t.Func = func(context.Context, *TaskContext) error { return nil } },
	}
	for name, change := range same {
		task := baseTask()
		change(task)
		if task.Fingerprint() != base {
			t.Errorf("%s changes the fingerprint", name)
		}
	}
	empty, absent := &Task{ID: "x", Env: map[string]string{}, DependsOn: []string{}, PoolRequirements: map[string]int{}}, &Task{ID: "x"}
	if empty.Fingerprint() != absent.Fingerprint() {
		t.Error("empty and absent maps and lists differ")
	}
}

func TestFingerprintSameForYAMLAndGo(t *testing.T) {
	t.Parallel()
	y := mustParse(t, "same.yaml", "tasks:\n  - id: a\n    command: [run, x]\n    pool_requirements: {db: 1}\n    retries: 2\n")
	g := New("same")
	g.Command("a", []string{"run", "x"}, Pools(map[string]int{"db": 1}), Retries(2))
	if y.Tasks[0].Fingerprint() != g.Tasks[0].Fingerprint() {
		t.Errorf("YAML %+v\nGo %+v", plain(y.Tasks[0]), plain(g.Tasks[0]))
	}
}
