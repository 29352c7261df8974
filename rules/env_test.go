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

// A mapped instance's item reaches the conditions whatever its type (§14): a field of an object
// item, a string or a number compared as it is. A field of a scalar item is an error of that
// condition, which does not match; for a task that is not mapped, item has no fields.
func TestAssignSeesItem(t *testing.T) {
	t.Parallel()
	obj := map[string]any{"shard": "eu", "rows": 3}
	cases := []struct {
		when  string
		item  any
		match bool
		fails bool
	}{
		{`item.shard == "eu"`, obj, true, false},
		{`item.rows > 2 and map_index == 4`, obj, true, false},
		{`item == "eu"`, "eu", true, false},
		{`item in ["eu", "us"]`, "us", true, false},
		{`item == "eu"`, obj, false, false},
		{`item >= 7`, 7, true, false},
		{`item >= 7`, 6.5, false, false},
		{`item.shard == "eu"`, "eu", false, true},
		{`item.shard == "eu"`, nil, false, false}, // not mapped
		{`item == nil or map_index < 0`, nil, true, false},
	}
	for _, c := range cases {
		set := mustCompile(t, Spec{Name: "r", Priority: 1, When: c.when, Pool: "p"})
		mapIndex := 4
		if c.item == nil {
			mapIndex = -1
		}
		got := set.Assign(Attrs{Tags: []string{}, Params: map[string]any{}, Item: c.item, MapIndex: mapIndex})
		if matched := got.Rule == "r"; matched != c.match {
			t.Errorf("%s over %#v: matched %v, want %v (%+v)", c.when, c.item, matched, c.match, got.Rules)
		}
		if failed := len(got.Rules) > 0 && got.Rules[0].Error != ""; failed != c.fails {
			t.Errorf("%s over %#v: error %v, want %v (%+v)", c.when, c.item, failed, c.fails, got.Rules)
		}
	}
}
