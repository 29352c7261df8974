package rules

import (
	"reflect"
	"testing"
	"time"
)

func TestEnvCoversEveryName(t *testing.T) {
	t.Parallel()
	ev := newEvaluator()
	ev.load(Attrs{Tags: []string{}, Params: map[string]any{}})
	if len(ev.env) != len(envTypes) {
		t.Errorf("load sets %d names, envTypes declares %d", len(ev.env), len(envTypes))
	}
	for name, sample := range envTypes {
		v, ok := ev.env[name]
		if !ok {
			t.Errorf("load does not set %s", name)
			continue
		}
		if got, want := reflect.TypeOf(v), reflect.TypeOf(sample); got != want {
			t.Errorf("%s: load sets %v, declared %v", name, got, want)
		}
	}
}

// Every attribute reaches the condition under its §6 name.
func TestAssignSeesEveryAttribute(t *testing.T) {
	t.Parallel()
	a := Attrs{DAGID: "d", TaskID: "t", RunID: "r", Owner: "o", Tags: []string{"x", "y"}, Trigger: "catchup",
		Params: map[string]any{"k": "v"}, TryNumber: 3, Kind: "sensor", LogicalDate: time.Date(2024, 5, 1, 4, 0, 0, 0, time.UTC)}
	conds := []string{
		`dag_id == "d"`, `task_id == "t"`, `run_id == "r"`, `owner == "o"`, `"y" in tags and len(tags) == 2`,
		`trigger == "catchup"`, `params.k == "v"`, `try_number == 3`, `kind == "sensor"`,
		`logical_date.Hour() == 4 and logical_date.Year() == 2024`,
		`logical_date >= date("2024-05-01 04:00:00") and logical_date < date("2024-05-01 05:00", "2006-01-02 15:04")`,
	}
	for _, c := range conds {
		set := mustCompile(t, Spec{Name: "r", Priority: 1, When: c, Pool: "p"})
		if got := set.Assign(a); got.Rule != "r" {
			t.Errorf("%s: did not match: %+v", c, got.Rules)
		}
		if got := set.Assign(Attrs{}); got.Rule != "" {
			t.Errorf("%s: matched zero attributes", c)
		}
	}
}
