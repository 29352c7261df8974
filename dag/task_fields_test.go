package dag

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// sampleYAML is a value of the field's type, written as YAML; "" for the fields this test
// cannot give a value on its own (the id, the kinds, the legacy pool form).
func sampleYAML(f *taskField) string {
	switch f.name {
	case "", "id", "depends_on", "command", "bash", "sensor", "approval", "pool", "pool_slots":
		return ""
	}
	switch f.value(&taskSpec{}).(type) {
	case *int:
		return "3"
	case *string:
		return "x"
	case *TriggerRule:
		return string(AllDone)
	case *bool:
		return "true"
	case *time.Duration:
		return "90s"
	case *[]string:
		return "[a, b]"
	case *map[string]string:
		return "{A: b}"
	case *map[string]int:
		return "{db: 1}"
	}
	return ""
}

// TestEveryTaskFieldIsDrivenByTheTable checks, for each row of taskFields, what a row alone
// must give a new field: read in tasks, default_args and jobs where its use says and refused
// as unknown elsewhere, inherited from default_args (not by approval gates when marked so),
// and part of the fingerprint. A row of a new type needs a case in sampleYAML.
func TestEveryTaskFieldIsDrivenByTheTable(t *testing.T) {
	t.Parallel()
	tested := 0
	for i := range taskFields {
		f := &taskFields[i]
		sample := sampleYAML(f)
		if sample == "" {
			continue
		}
		tested++
		t.Run(f.name, func(t *testing.T) {
			value := func(task *Task) any { return f.value(&taskSpec{t: *task}) }
			parse := func(src string) (*DAG, string) {
				d, errs := decode(f.name+".yaml", []byte(src))
				return d, errorLines(errs)
			}
			// What a task and an approval gate have without the field (defaults applied).
			base, _ := parse("tasks:\n  - id: a\n    bash: x\n  - id: gate\n    approval:\n")
			zero, gateZero := value(base.Tasks[0]), value(base.Tasks[1])

			d, errs := parse(fmt.Sprintf("tasks:\n  - id: a\n    bash: x\n    %s: %s\n", f.name, sample))
			switch {
			case f.use&inTask == 0 && !strings.Contains(errs, f.name+": unknown field"):
				t.Errorf("in a task: errors %q, want unknown field", errs)
			case f.use&inTask != 0 && errs != "":
				t.Errorf("in a task: %s", errs)
			case f.use&inTask != 0 && reflect.DeepEqual(value(d.Tasks[0]), zero):
				t.Errorf("in a task: not read")
			}

			d, errs = parse(fmt.Sprintf("default_args:\n  %s: %s\ntasks:\n  - id: a\n    bash: x\n  - id: gate\n    approval:\n", f.name, sample))
			switch {
			case f.use&inDefaults == 0 && !strings.Contains(errs, "default_args."+f.name+": unknown field"):
				t.Errorf("in default_args: errors %q, want unknown field", errs)
			case f.use&inDefaults != 0 && errs != "":
				t.Errorf("in default_args: %s", errs)
			case f.use&inDefaults != 0:
				if reflect.DeepEqual(value(d.Tasks[0]), zero) {
					t.Errorf("not inherited from default_args")
				}
				if got := value(d.Tasks[1]); reflect.DeepEqual(got, gateZero) != (f.use&notApproval != 0) {
					t.Errorf("approval gate inherits %v (notApproval %v)", got, f.use&notApproval != 0)
				}
			}

			d, errs = parse(fmt.Sprintf("bash: x\n%s: %s\n", f.name, sample))
			switch {
			case f.use&inJob == 0 && isDAGField(f.name):
				// A job's top-level on_failure and on_success are its DAG's (once per run, §13).
				if errs != "" || d.OnFailure == nil && d.OnSuccess == nil {
					t.Errorf("in a job: errors %q or not read as the DAG's", errs)
				}
			case f.use&inJob == 0 && !strings.Contains(errs, f.name+": unknown field"):
				t.Errorf("in a job: errors %q, want unknown field", errs)
			case f.use&inJob != 0 && errs != "":
				t.Errorf("in a job: %s", errs)
			case f.use&inJob != 0 && reflect.DeepEqual(value(d.Tasks[0]), zero):
				t.Errorf("in a job: not read")
			}

			if f.fp != "" && f.use&inTask != 0 {
				set, _ := parse(fmt.Sprintf("tasks:\n  - id: a\n    bash: x\n    %s: %s\n", f.name, sample))
				if base.Tasks[0].Fingerprint() == set.Tasks[0].Fingerprint() {
					t.Errorf("the fingerprint does not change with %s", f.name)
				}
			}
		})
	}
	if tested < 15 {
		t.Errorf("only %d fields tested", tested)
	}
}

func isDAGField(name string) bool {
	for _, f := range dagFields {
		if f.name == name {
			return true
		}
	}
	return false
}
