package dag

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/poolflow/poolflow/vocab"
)

// FuzzParse feeds arbitrary bytes to Parse: it must never panic, must return either a DAG or
// errors, and a DAG it returns must pass Validate again and survive the functions the daemon
// calls on it. Seeded with every YAML fixture and example DAG.
func FuzzParse(f *testing.F) {
	for _, pattern := range []string{"testdata/*/*.yaml", "testdata/*/*.yml", "../dags/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil {
				f.Add(data)
			}
		}
	}
	opts := testOptions()
	f.Fuzz(func(t *testing.T, data []byte) {
		d, errs := Parse("fuzz.yaml", data, opts)
		if (d == nil) == (len(errs) == 0) {
			t.Fatalf("Parse returned DAG %v with %d errors", d != nil, len(errs))
		}
		for _, e := range errs {
			if e.Error() == "" || e.Msg == "" {
				t.Fatalf("empty error %+v", *e)
			}
		}
		if d == nil {
			return
		}
		if again := Validate(d, opts); len(again) != 0 {
			t.Fatalf("a parsed DAG fails Validate: %v", errorLines(again))
		}
		if _, _, err := ParseSchedule(d.Schedule); err != nil {
			t.Fatalf("a parsed DAG has a bad schedule: %v", err)
		}
		weights := PriorityWeights(d)
		states := map[string]vocab.TaskState{}
		for _, task := range d.Tasks {
			if _, ok := weights[task.ID]; !ok {
				t.Fatalf("no weight for %s", task.ID)
			}
			if task.Fingerprint() == "" {
				t.Fatal("empty fingerprint")
			}
			_ = RetryDelay(task, task.Retries+1)
			up := make([]vocab.TaskState, len(task.DependsOn))
			for i := range up {
				up[i] = vocab.TaskSuccess
			}
			if Trigger(task.TriggerRule, up) == vocab.TaskNone {
				t.Fatalf("%s waits although its upstream succeeded", task.ID)
			}
			states[task.ID] = vocab.TaskSuccess
		}
		if ended, state := RunEndState(d, states); !ended || state != vocab.RunSuccess {
			t.Fatalf("all success ends as %v %s", ended, state)
		}
	})
}
