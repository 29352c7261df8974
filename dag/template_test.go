package dag

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// templateVars is one task instance's values for the expression tests.
func templateVars() *TemplateVars {
	v := NewTemplateVars("etl", "manual__1", time.Date(2026, 3, 9, 17, 45, 0, 0, time.UTC),
		map[string]any{"region": "eu", "n": 3, "shards": []any{"a", "b"}}, map[string]any{"full": true}, 2)
	v.Item, v.MapIndex = map[string]any{"shard": "s3", "file": "x.csv", "slots": 2.0}, 7
	v.Tasks = map[string]TaskOutputs{"extract": {Output: map[string]any{"files": []any{"a.csv", "b.csv"}, "rows": 1200.0}}}
	return v
}

// TestTemplateExpressions evaluates one expression per variable and date function, as a
// command item (text) and, where it applies, as a pool's slots.
func TestTemplateExpressions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ src, want string }{
		{"${{ dag_id }}", "etl"},
		{"${{ run_id }}", "manual__1"},
		{"${{ logical_date }}", "2026-03-09T17:45:00Z"},
		{"${{ ds }}/${{ ds_nodash }}", "2026-03-09/20260309"},
		{"${{ logical_date.Format('15:04') }}", "17:45"},
		{"${{ format(logical_date, '2006-01') }}", "2026-03"},
		{"${{ format(add(logical_date, '-24h'), '2006-01-02') }}", "2026-03-08"},
		{"${{ format(add(logical_date, '7d'), '2006-01-02') }}", "2026-03-16"},
		{"${{ format(add(logical_date, duration('90m')), '15:04') }}", "19:15"},
		{"${{ truncate_day(logical_date) }}", "2026-03-09T00:00:00Z"},
		{"${{ params.region }}-${{ params.n * 2 }}", "eu-6"},
		{"${{ join(params.shards, ',') }}", "a,b"},
		{"${{ conf.full }}", "true"},
		{"try ${{ try_number }}", "try 2"},
		{"${{ item.shard }}:${{ item.file }}", "s3:x.csv"},
		{"${{ map_index }}", "7"},
		{"${{ tasks.extract.output.files[1] }}", "b.csv"},
		{"${{ tasks.extract.output.rows / 100 }}", "12"},
		{"${{ len(tasks.extract.outputs) }}", "0"},
		{"no template", "no template"},
		{"${{ 'a' + \"}\" }}", "a}"},
	} {
		d := New("etl")
		d.Command("x", []string{"echo", tc.src})
		d.Command("extract", []string{"true"})
		d.Tasks[0].DependsOn = []string{"extract"}
		if errs := Validate(d, testOptions()); len(errs) != 0 {
			t.Errorf("%s: %v", tc.src, errorLines(errs))
			continue
		}
		r, err := d.Render(d.Tasks[0], templateVars())
		switch {
		case err != nil:
			t.Errorf("%s: %v", tc.src, err)
		case r == nil && tc.src != tc.want:
			t.Errorf("%s: not rendered", tc.src)
		case r != nil && r.Argv[1] != tc.want:
			t.Errorf("%s = %q, want %q", tc.src, r.Argv[1], tc.want)
		}
	}
}

// TestTemplateErrors: what is wrong is said at load where the types tell, else when the task is
// queued, naming the field and the expression.
func TestTemplateErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		build  func(d *DAG)
		load   string // the load-time error, or "" when it loads
		render string // the evaluation error
	}{
		{"unknown variable", func(d *DAG) { d.Command("x", []string{"echo", "${{ nosuch }}"}) }, "command[1]: ${{ nosuch }}: unknown name nosuch", ""},
		{"syntax", func(d *DAG) { d.Command("x", []string{"echo", "${{ 1 + }}"}) }, "command[1]: ${{ 1 + }}: unexpected token", ""},
		{"unclosed", func(d *DAG) { d.Command("x", []string{"echo", "${{ dag_id"}) }, "command[1]: ${{ dag_id: unclosed ${{", ""},
		{"empty", func(d *DAG) { d.Command("x", []string{"${{ }}"}) }, "command[0]: ${{ }}: empty expression", ""},
		{"list in a scalar", func(d *DAG) { d.Command("x", []string{"echo", "${{ [1, 2] }}"}) }, "gives a list, not a single value", ""},
		{"map in a scalar", func(d *DAG) { d.Command("x", []string{"echo", "${{ {'a': 1} }}"}) }, "gives a map, not a single value", ""},
		{"string slots", func(d *DAG) { d.Command("x", []string{"true"}, PoolTemplates(map[string]string{"db": "${{ 'two' }}"})) },
			"pool_requirements.db: ${{ 'two' }}: gives a string; slots need an integer", ""},
		{"unknown task", func(d *DAG) { d.Command("x", []string{"echo", "${{ tasks.nope.output }}"}) }, "the DAG has no task nope", ""},
		{"not upstream", func(d *DAG) {
			d.Command("x", []string{"echo", "${{ tasks.y.output.a }}"})
			d.Command("y", []string{"true"})
		}, "reads tasks.y, which is not upstream of x: add it to depends_on", ""},
		{"dynamic task", func(d *DAG) { d.Command("x", []string{"echo", "${{ tasks[dag_id].output }}"}) }, "tasks must be followed by a task id", ""},
		{"bash", func(d *DAG) { d.Bash("x", "echo ${{ dag_id }}") }, "bash: templates are not expanded in a bash script", ""},
		{"params reads tasks", func(d *DAG) {
			d.Params = map[string]any{"p": "${{ tasks.x.output }}"}
			d.Command("x", []string{"true"})
		}, "params.p: ${{ tasks.x.output }}: unknown name tasks", ""},
		{"index out of range", func(d *DAG) {
			d.Command("x", []string{"echo", "${{ tasks.extract.output.files[5] }}"}, After("extract"))
			d.Command("extract", []string{"true"})
		}, "", "template command[1]: ${{ tasks.extract.output.files[5] }}: index out of range"},
		{"list at run time", func(d *DAG) {
			d.Command("x", []string{"echo", "${{ tasks.extract.output.files }}"}, After("extract"))
			d.Command("extract", []string{"true"})
		}, "", "template command[1]: ${{ tasks.extract.output.files }}: gives a list, not a single value"},
		{"missing key", func(d *DAG) { d.Command("x", []string{"echo", "${{ params.nope }}"}) }, "", "gives nil (a missing key?)"},
		{"slots below 1", func(d *DAG) {
			d.Command("x", []string{"true"}, PoolTemplates(map[string]string{"db": "${{ params.n - 3 }}"}))
		},
			"", "pool_requirements.db: ${{ params.n - 3 }}: slots must be at least 1, got 0"},
		{"reserved pool", func(d *DAG) {
			d.Command("x", []string{"true"}, PoolTemplates(map[string]string{"${{ '_global' }}": "1"}))
		}, "", `gives the pool name "_global"`},
		{"bad add", func(d *DAG) { d.Command("x", []string{"echo", "${{ add(logical_date, 'soon') }}"}) }, "", `add: "soon" is not a duration`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := New("etl")
			tc.build(d)
			errs := Validate(d, testOptions())
			got := errorLines(errs)
			if tc.load != "" {
				if !strings.Contains(got, tc.load) {
					t.Fatalf("load errors %q, want %q", got, tc.load)
				}
				return
			}
			if len(errs) != 0 {
				t.Fatalf("load errors: %s", got)
			}
			_, err := d.Render(d.Tasks[0], templateVars())
			var te *TemplateError
			if !errors.As(err, &te) || !strings.Contains(err.Error(), tc.render) {
				t.Fatalf("render error %v, want %q", err, tc.render)
			}
		})
	}
}

// TestTemplateRenderedFields: every templated field of a task is evaluated, requirements add
// up, and an argv item is one element whatever it holds.
func TestTemplateRenderedFields(t *testing.T) {
	t.Parallel()
	d := New("etl", Params(map[string]any{"day": "${{ ds }}", "list": "${{ [ds, run_id] }}", "kept": "${{ conf.full }}"}))
	d.Command("x", []string{"load", "${{ item.file }} ; rm -rf /"},
		func(t *Task) { t.Env = map[string]string{"SHARD": "${{ item.shard }}", "PLAIN": "p"} },
		Pools(map[string]int{"db": 1}), PoolTemplates(map[string]string{"db_${{ item.shard }}": "${{ int(item.slots) }}", "db": "1"}))
	d.AddSensor("s", Sensor{FileExists: "/data/${{ ds }}.ready"})
	d.AddSensor("h", Sensor{HTTP: &HTTPCheck{URL: "http://h/${{ params.region }}"}})
	if errs := Validate(d, testOptions()); len(errs) != 0 {
		t.Fatal(errorLines(errs))
	}
	r, err := d.Render(d.Tasks[0], templateVars())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Argv) != 2 || r.Argv[1] != "x.csv ; rm -rf /" {
		t.Errorf("argv %q", r.Argv)
	}
	if r.Env["SHARD"] != "s3" || r.Env["PLAIN"] != "p" {
		t.Errorf("env %v", r.Env)
	}
	if r.Pools["db"] != 2 || r.Pools["db_s3"] != 2 || len(r.Pools) != 2 {
		t.Errorf("pools %v", r.Pools)
	}
	s, err := d.Render(d.Tasks[1], templateVars())
	if err != nil || s.Sensor.FileExists != "/data/2026-03-09.ready" {
		t.Errorf("sensor %+v %v", s, err)
	}
	if h, err := d.Render(d.Tasks[2], templateVars()); err != nil || h.Sensor.HTTP.URL != "http://h/eu" || d.Tasks[2].Sensor.HTTP.URL == h.Sensor.HTTP.URL {
		t.Errorf("http sensor %+v %v", h, err)
	}
	params := map[string]any{"day": "${{ ds }}", "list": "", "kept": "x"}
	if err := d.RenderParams(params, "r1", time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC), map[string]any{"kept": "conf's"}); err != nil {
		t.Fatal(err)
	}
	if params["day"] != "2026-03-09" || params["kept"] != "x" || len(params["list"].([]any)) != 2 {
		t.Errorf("params %v", params)
	}
}

// FuzzTemplate compiles arbitrary text as a template of every kind of field: it must never
// panic, and what compiles must evaluate without panicking.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"${{ dag_id }}", "a${{ 1 + 2 }}b${{ ds }}", "${{ tasks.x.output.files[0] }}", "${{",
		"${{ }}", "}}${{ '}}' }}", "${{ format(add(logical_date, '1d'), '2006') }}", "${{ item.shard }}", "${{ [1,2] }}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, w := range []want{wantString, wantAmount, wantValue} {
			tp, err := compileTemplate(s, TemplateVars{}, w, func(string) {})
			if err != nil {
				if err.Error() == "" {
					t.Fatal("empty error")
				}
				continue
			}
			if tp == nil {
				if HasTemplate(s) {
					t.Fatalf("%q holds a template but compiled to nothing", s)
				}
				continue
			}
			switch w {
			case wantString:
				_, _ = tp.evalString(templateVars(), "f")
			case wantAmount:
				_, _ = tp.evalAmount(templateVars(), "f")
			case wantValue:
				_, _ = tp.evalValue(templateVars(), "f")
			}
		}
	})
}
