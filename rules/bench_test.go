package rules

import (
	"fmt"
	"testing"
)

// BenchmarkAssign50 is the worst realistic case: 49 rules that do not match, of the shapes
// people write, then one that does. Budget: 20 µs per Assign.
func BenchmarkAssign50(b *testing.B) {
	shapes := []string{
		`dag_id startsWith "etl_%d_" and "heavy" in tags`,
		`dag_id startsWith "etl_" and "gpu%d" in tags`,
		`owner == "team-%d" and trigger == "manual"`,
		`params.region == "region-%d" and kind in ["command", "bash"]`,
		`try_number > %d + 1 and task_id matches "^load"`,
	}
	var specs []Spec
	for i := range 49 {
		when := fmt.Sprintf(shapes[i%len(shapes)], i)
		specs = append(specs, Spec{Name: fmt.Sprintf("r%02d", i), Priority: i, When: when, Pool: "p"})
	}
	specs = append(specs, Spec{Name: "heavy-etl", Priority: 100,
		When: `dag_id startsWith "etl_" and "heavy" in tags`, Pool: "warehouse", Slots: 2})
	set := mustCompile(b, specs...)
	a := Attrs{DAGID: "etl_sales", TaskID: "load_orders", RunID: "scheduled__2024-05-01", Owner: "data",
		Tags: []string{"nightly", "heavy"}, Trigger: "schedule", Params: map[string]any{"region": "eu"},
		TryNumber: 1, Kind: "command"}
	if got := set.Assign(a); got.Rule != "heavy-etl" || len(got.Rules) != 50 {
		b.Fatalf("Assign = %q after %d rules, want heavy-etl after 50", got.Rule, len(got.Rules))
	}
	b.ReportAllocs()
	for b.Loop() {
		set.Assign(a)
	}
}
