package dag

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
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

// fingerprintV1 is Fingerprint as it was written before taskFields drove it: a struct of the
// fields, marshalled whole. Fingerprints are stored with queue entries and compared across
// reloads and upgrades, so the table must encode the same bytes.
func fingerprintV1(t *Task) string {
	var deps []string
	if len(t.DependsOn) > 0 {
		deps = slices.Sorted(slices.Values(t.DependsOn))
	}
	env, reqs := t.Env, t.PoolRequirements
	if len(env) == 0 {
		env = nil
	}
	if len(reqs) == 0 {
		reqs = nil
	}
	def := struct {
		V                       int
		ID                      string
		Kind                    Kind
		DependsOn               []string
		Command                 []string
		Bash                    string
		Sensor                  *Sensor
		Approval                *Approval
		Env                     map[string]string
		Workdir                 string
		TriggerRule             TriggerRule
		Retries                 int
		RetryDelay              time.Duration
		RetryExponentialBackoff bool
		MaxRetryDelay           time.Duration
		ExecutionTimeout        time.Duration
		QueueTimeout            time.Duration
		PoolRequirements        map[string]int
		PriorityWeight          int
		WeightRule              string
		MaxActiveTIsPerDAG      int
		MaxActiveTIsPerDAGRun   int
	}{
		1, t.ID, t.Kind, deps, t.Command, t.Bash, t.Sensor, t.Approval, env,
		t.Workdir, t.TriggerRule, t.Retries, t.RetryDelay, t.RetryExponentialBackoff,
		t.MaxRetryDelay, t.ExecutionTimeout, t.QueueTimeout, reqs,
		t.PriorityWeight, t.WeightRule, t.MaxActiveTIsPerDAG, t.MaxActiveTIsPerDAGRun,
	}
	b, _ := json.Marshal(def)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// TestFingerprintEncodingUnchanged holds the table-driven fingerprint to the bytes of the
// struct it replaced, for the tasks of every example DAG and fixture and a few by hand.
func TestFingerprintEncodingUnchanged(t *testing.T) {
	t.Parallel()
	tasks := []*Task{baseTask(), {ID: "empty"}, {ID: "<&>", Bash: "echo <b>", Env: map[string]string{}, DependsOn: []string{}},
		{ID: "s", Sensor: &Sensor{HTTP: &HTTPCheck{URL: "http://x", Status: 200}, Mode: ModeReschedule}},
		{ID: "a", Approval: &Approval{Timeout: time.Hour}, PoolRequirements: map[string]int{}}}
	files, _ := filepath.Glob("testdata/valid/*.yaml")
	more, _ := filepath.Glob("../dags/*.yaml")
	for _, file := range append(files, more...) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		d, errs := decode(file, data)
		if d == nil {
			t.Fatalf("%s: %v", file, errs)
		}
		tasks = append(tasks, d.Tasks...)
	}
	if len(tasks) < 20 {
		t.Fatalf("only %d tasks", len(tasks))
	}
	for _, task := range tasks {
		if task.Expand != nil || task.PoolTemplates != nil || task.MaxMapLength != 0 {
			// Fields of §14, which the old struct did not have: they are in the fingerprint.
			plain := *task
			plain.Expand, plain.PoolTemplates, plain.MaxMapLength = nil, nil, 0
			if task.Fingerprint() == plain.Fingerprint() {
				t.Errorf("task %s: its mapping or templated pools are not in its fingerprint", task.ID)
			}
			continue
		}
		if got, want := task.Fingerprint(), fingerprintV1(task); got != want {
			t.Errorf("task %s: fingerprint %s, was %s", task.ID, got, want)
		}
	}
}
