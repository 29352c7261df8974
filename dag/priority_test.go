package dag

import (
	"maps"
	"math"
	"testing"
)

func TestPriorityWeights(t *testing.T) {
	t.Parallel()
	// a -> b -> d, a -> c -> d, plus e alone; d is reached twice from a but counts once.
	diamond := func(rule string, weights map[string]int) *DAG {
		d := New("diamond")
		add := func(id string, after ...string) {
			opts := []TaskOption{After(after...), WeightRuleOpt(rule)}
			if w, ok := weights[id]; ok {
				opts = append(opts, Priority(w))
			}
			d.Bash(id, "true", opts...)
		}
		add("a")
		add("b", "a")
		add("c", "a")
		add("d", "b", "c")
		add("e")
		return d
	}
	tests := []struct {
		name    string
		dag     *DAG
		want    map[string]int
		rulesOf map[string]string
	}{
		{"downstream default weights", diamond(WeightDownstream, nil),
			map[string]int{"a": 4, "b": 2, "c": 2, "d": 1, "e": 1}, nil},
		{"upstream", diamond(WeightUpstream, nil),
			map[string]int{"a": 1, "b": 2, "c": 2, "d": 4, "e": 1}, nil},
		{"absolute", diamond(WeightAbsolute, map[string]int{"a": 5, "d": 7}),
			map[string]int{"a": 5, "b": 1, "c": 1, "d": 7, "e": 1}, nil},
		{"downstream weighted", diamond(WeightDownstream, map[string]int{"a": 10, "b": 0, "c": 3, "d": 100}),
			map[string]int{"a": 113, "b": 100, "c": 103, "d": 100, "e": 1}, nil},
		{"negative weights", diamond(WeightUpstream, map[string]int{"a": -5}),
			map[string]int{"a": -5, "b": -4, "c": -4, "d": -2, "e": 1}, nil},
		{"clamped", diamond(WeightDownstream, map[string]int{"a": math.MaxInt32, "b": math.MaxInt32}),
			map[string]int{"a": math.MaxInt32, "b": math.MaxInt32, "c": 2, "d": 1, "e": 1}, nil},
	}
	for _, tt := range tests {
		if got := PriorityWeights(tt.dag); !maps.Equal(got, tt.want) {
			t.Errorf("%s: PriorityWeights = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPriorityWeightsMixedRules(t *testing.T) {
	t.Parallel()
	// Each task sums the raw weights of its relatives under its own rule, as Airflow does.
	d := New("mixed")
	d.Bash("extract", "true", Priority(2))
	d.Bash("transform", "true", After("extract"), Priority(3), WeightRuleOpt(WeightUpstream))
	d.Bash("load", "true", After("transform"), Priority(4), WeightRuleOpt(WeightAbsolute))
	want := map[string]int{"extract": 9, "transform": 5, "load": 4}
	if got := PriorityWeights(d); !maps.Equal(got, want) {
		t.Errorf("PriorityWeights = %v, want %v", got, want)
	}
}

func TestPriorityWeightsSurvivesBadGraphs(t *testing.T) {
	t.Parallel()
	// Not valid DAGs, but the function must still terminate.
	d := &DAG{Tasks: []*Task{
		{ID: "a", DependsOn: []string{"b", "ghost"}, PriorityWeight: 1},
		{ID: "b", DependsOn: []string{"a"}, PriorityWeight: 1},
		{ID: "c", DependsOn: []string{"c"}, PriorityWeight: 1},
	}}
	want := map[string]int{"a": 2, "b": 2, "c": 1}
	if got := PriorityWeights(d); !maps.Equal(got, want) {
		t.Errorf("PriorityWeights = %v, want %v", got, want)
	}
}
