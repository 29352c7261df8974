package rules

import (
	"errors"
	"slices"
	"testing"
)

func knownPools(names ...string) func(string) bool {
	return func(name string) bool { return slices.Contains(names, name) }
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	ok := func(name string, priority, line int) Spec {
		return Spec{Name: name, Priority: priority, When: `kind == "go"`, Pool: "warehouse",
			Line: line, Column: 5, WhenLine: line + 2, WhenColumn: 11}
	}
	with := func(sp Spec, edit func(*Spec)) Spec {
		edit(&sp)
		return sp
	}
	tests := []struct {
		name  string
		file  string
		specs []Spec
		want  string
	}{
		{
			name: "unknown name in when",
			file: "poolflow.yaml",
			specs: []Spec{with(ok("heavy-etl", 10, 10), func(s *Spec) {
				s.When = `dag_id startsWith "etl_" and "heavy" in tagz`
			})},
			want: `poolflow.yaml:12:11: rule heavy-etl: when: unknown name tagz (1:41)`,
		},
		{
			name: "position on a later line of a block scalar",
			file: "poolflow.yaml",
			specs: []Spec{with(ok("heavy-etl", 10, 10), func(s *Spec) {
				s.When = "dag_id == \"a\" and\n  try_number > \"x\""
			})},
			want: `poolflow.yaml:12:11: rule heavy-etl: when: invalid operation: > (mismatched types int and string) (2:14)`,
		},
		{
			name:  "not a boolean",
			file:  "poolflow.yaml",
			specs: []Spec{with(ok("r", 1, 3), func(s *Spec) { s.When = "dag_id" })},
			want:  `poolflow.yaml:5:11: rule r: when: expected bool, but got string`,
		},
		{
			name:  "syntax error",
			file:  "poolflow.yaml",
			specs: []Spec{with(ok("r", 1, 3), func(s *Spec) { s.When = "dag_id ==" })},
			want:  `poolflow.yaml:5:11: rule r: when: unexpected token EOF (1:9)`,
		},
		{
			name:  "now is disabled",
			file:  "poolflow.yaml",
			specs: []Spec{with(ok("r", 1, 3), func(s *Spec) { s.When = "now() > logical_date" })},
			want:  `poolflow.yaml:5:11: rule r: when: unknown name now (1:1)`,
		},
		{
			name:  "empty when",
			file:  "poolflow.yaml",
			specs: []Spec{with(ok("r", 1, 3), func(s *Spec) { s.When = "  " })},
			want:  `poolflow.yaml:5:11: rule r: when: must not be empty`,
		},
		{
			name:  "unknown pool",
			file:  "poolflow.yaml",
			specs: []Spec{with(ok("heavy-etl", 10, 8), func(s *Spec) { s.Pool = "warehous" })},
			want:  `poolflow.yaml:8:5: rule heavy-etl: pool: unknown pool "warehous"`,
		},
		{
			name:  "empty pool",
			file:  "poolflow.yaml",
			specs: []Spec{with(ok("heavy-etl", 10, 8), func(s *Spec) { s.Pool = "" })},
			want:  `poolflow.yaml:8:5: rule heavy-etl: pool: must not be empty`,
		},
		{
			name:  "duplicate name",
			file:  "poolflow.yaml",
			specs: []Spec{ok("heavy-etl", 10, 8), ok("heavy-etl", 20, 14)},
			want:  `poolflow.yaml:14:5: rule heavy-etl: name: duplicate; first used by the rule at 8:5`,
		},
		{
			name:  "duplicate priority",
			file:  "poolflow.yaml",
			specs: []Spec{ok("heavy-etl", 10, 8), ok("light", 10, 14)},
			want:  `poolflow.yaml:14:5: rule light: priority: 10 is also the priority of rule heavy-etl`,
		},
		{
			name:  "empty name",
			file:  "poolflow.yaml",
			specs: []Spec{ok("a", 1, 8), ok("", 2, 14)},
			want:  `poolflow.yaml:14:5: rule #2: name: must not be empty`,
		},
		{
			name:  "negative slots",
			file:  "poolflow.yaml",
			specs: []Spec{with(ok("r", 1, 8), func(s *Spec) { s.Slots = -2 })},
			want:  `poolflow.yaml:8:5: rule r: slots: must be at least 1, got -2`,
		},
		{
			name: "no positions, no file",
			specs: []Spec{
				{Name: "a", Priority: 1, When: "true", Pool: "warehouse"},
				{Name: "a", Priority: 1, When: "tagz", Pool: "nope"},
			},
			want: "rule a: name: duplicate; first used by rule #1\n" +
				"rule a: priority: 1 is also the priority of rule a\n" +
				`rule a: pool: unknown pool "nope"` + "\n" +
				"rule a: when: unknown name tagz (1:1)",
		},
		{
			name: "every error is reported, in file order",
			file: "poolflow.yaml",
			specs: []Spec{
				with(ok("heavy-etl", 10, 8), func(s *Spec) { s.When = `"heavy" in tagz` }),
				with(ok("", 20, 14), func(s *Spec) { s.Pool = "gpu"; s.Slots = -1 }),
				ok("heavy-etl", 20, 20),
			},
			want: "poolflow.yaml:10:11: rule heavy-etl: when: unknown name tagz (1:12)\n" +
				"poolflow.yaml:14:5: rule #2: name: must not be empty\n" +
				"poolflow.yaml:14:5: rule #2: slots: must be at least 1, got -1\n" +
				`poolflow.yaml:14:5: rule #2: pool: unknown pool "gpu"` + "\n" +
				"poolflow.yaml:20:5: rule heavy-etl: name: duplicate; first used by the rule at 8:5\n" +
				"poolflow.yaml:20:5: rule heavy-etl: priority: 20 is also the priority of rule #2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			set, err := CompileFile(tt.file, tt.specs, knownPools("warehouse", "default"), "")
			if err == nil {
				t.Fatalf("CompileFile succeeded (%d rules), want error", set.Len())
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error:\n got: %s\nwant: %s", got, tt.want)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Errorf("error %T does not wrap *ConfigError", err)
			}
		})
	}
}

func TestCompileDefaults(t *testing.T) {
	t.Parallel()
	specs := []Spec{
		{Name: "late", Priority: 30, When: "true", Pool: "p"},
		{Name: "early", Priority: -5, When: "true", Pool: "p", Slots: 3},
		{Name: "mid", Priority: 7, When: "true", Pool: "p"},
	}
	set, err := Compile(specs, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := set.DefaultPool(); got != DefaultPool {
		t.Errorf("DefaultPool() = %q, want %q", got, DefaultPool)
	}
	var order []string
	for _, r := range set.rules {
		order = append(order, r.name)
	}
	if got, want := order, []string{"early", "mid", "late"}; !slices.Equal(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
	if got := set.rules[1].slots; got != 1 {
		t.Errorf("slots of a rule without slots = %d, want 1", got)
	}
	if _, err := Compile(nil, nil, "other"); err != nil {
		t.Errorf("Compile(nil) = %v, want no error", err)
	}
}
