package dag

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"testing"

	"pgregory.net/rapid"
)

// randomDAG draws a valid DAG: each task depends on a few earlier ones (by a random file
// position permutation, so file order is not the topological order), with random weights and
// rules. Shapes with shared descendants (diamonds) are frequent.
func randomDAG(t *rapid.T) *DAG {
	n := rapid.IntRange(1, 40).Draw(t, "n")
	perm := rapid.Permutation(seq(n)).Draw(t, "perm") // perm[k] = file position of topo rank k
	tasks := make([]*Task, n)
	rules := []string{WeightDownstream, WeightUpstream, WeightAbsolute}
	for k := range n {
		var deps []string
		for _, u := range rapid.SliceOfNDistinct(rapid.IntRange(0, max(k-1, 0)), 0, min(k, 4), rapid.ID).Draw(t, fmt.Sprint("deps", k)) {
			if u < k {
				deps = append(deps, fmt.Sprint("t", perm[u]))
			}
		}
		tasks[perm[k]] = &Task{
			ID: fmt.Sprint("t", perm[k]), DependsOn: deps, Bash: "true",
			PriorityWeight: rapid.IntRange(-3, 10).Draw(t, fmt.Sprint("w", k)),
			WeightRule:     rapid.SampledFrom(rules).Draw(t, fmt.Sprint("rule", k)),
		}
	}
	return &DAG{ID: "random", Tasks: tasks}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestWeightsMatchDefinition checks the merge-set sums against one search per task.
func TestWeightsMatchDefinition(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		d := randomDAG(t)
		if got, want := d.Weights(), searchWeights(d); !maps.Equal(got, want) {
			t.Fatalf("Weights = %v, want %v", got, want)
		}
	})
}

// TestClosureSumsFallbackAgrees checks the search used when merge sets would not fit.
func TestClosureSumsFallbackAgrees(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		d := randomDAG(t)
		g := newTaskGraph(d)
		order := g.topological()
		slices.Reverse(order)
		w := make([]int64, len(d.Tasks))
		for i, task := range d.Tasks {
			w[i] = int64(task.PriorityWeight)
		}
		if got, want := closureSums(order, g.down, g.up, w), searchSums(order, g.down, w); !slices.Equal(got, want) {
			t.Fatalf("closureSums = %v, searchSums %v", got, want)
		}
	})
}

// refOrder is the executor's former topoOrder: Kahn's algorithm re-sorting the ready tasks by
// file position before each pick.
func refOrder(d *DAG) []string {
	indeg, down, pos := map[string]int{}, map[string][]string{}, map[string]int{}
	for i, t := range d.Tasks {
		pos[t.ID] = i
		indeg[t.ID] += 0
		for _, u := range t.DependsOn {
			indeg[t.ID]++
			down[u] = append(down[u], t.ID)
		}
	}
	var ready, out []string
	for _, t := range d.Tasks {
		if indeg[t.ID] == 0 {
			ready = append(ready, t.ID)
		}
	}
	for len(ready) > 0 {
		sort.Slice(ready, func(i, j int) bool { return pos[ready[i]] < pos[ready[j]] })
		id := ready[0]
		ready = ready[1:]
		out = append(out, id)
		for _, dn := range down[id] {
			if indeg[dn]--; indeg[dn] == 0 {
				ready = append(ready, dn)
			}
		}
	}
	return out
}

func TestOrderMatchesFormerTopoOrder(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		d := randomDAG(t)
		if got, want := d.Order(), refOrder(d); !slices.Equal(got, want) {
			t.Fatalf("Order = %v, want %v", got, want)
		}
	})
}

func TestOrderOfInvalidDAGs(t *testing.T) {
	t.Parallel()
	d := &DAG{Tasks: []*Task{
		{ID: "a"},
		{ID: "b", DependsOn: []string{"c"}},
		{ID: "c", DependsOn: []string{"b"}},
		{ID: "d", DependsOn: []string{"ghost"}},
		{ID: "e", DependsOn: []string{"a", "a"}},
	}}
	if got, want := d.Order(), []string{"a", "e"}; !slices.Equal(got, want) {
		t.Errorf("Order = %v, want %v", got, want)
	}
}

func TestDerivedIsResetWhenTasksAreAdded(t *testing.T) {
	t.Parallel()
	d := New("grow")
	d.Bash("a", "true")
	if w := d.Weights(); w["a"] != 1 || len(d.Order()) != 1 || d.Task("a") == nil {
		t.Fatalf("weights %v order %v", w, d.Order())
	}
	d.Bash("b", "true", After("a"))
	if w := d.Weights(); w["a"] != 2 || !slices.Equal(d.Order(), []string{"a", "b"}) || d.Task("b") == nil {
		t.Errorf("after adding b: weights %v order %v", w, d.Order())
	}
}

func TestTaskLookup(t *testing.T) {
	t.Parallel()
	d := &DAG{Tasks: []*Task{{ID: "a"}, {ID: "b"}, {ID: "a", Bash: "second"}}}
	if got := d.Task("a"); got != d.Tasks[0] {
		t.Errorf("Task(a) is not the first a")
	}
	if d.Task("zz") != nil {
		t.Errorf("Task(zz) found something")
	}
	d.Tasks = append(d.Tasks[:1], &Task{ID: "c"}) // changed behind the index
	if got := d.Task("c"); got == nil || got.ID != "c" {
		t.Errorf("Task(c) = %v after the tasks changed", got)
	}
}

// shapes builds the DAGs the benchmarks and the scale tests use, with every task's weight
// rule set to rule.
func shapeDAG(shape string, n int, rule string) *DAG {
	d := &DAG{ID: shape}
	for i := range n {
		t := &Task{ID: fmt.Sprint("t", i), Bash: "true", PriorityWeight: 1, WeightRule: rule}
		switch {
		case i == 0:
		case shape == "chain":
			t.DependsOn = []string{fmt.Sprint("t", i-1)}
		case shape == "fanout":
			t.DependsOn = []string{"t0"}
		case shape == "diamonds": // t0 -> (t1, t2) -> t3 -> (t4, t5) -> t6 ...
			switch i % 3 {
			case 0:
				t.DependsOn = []string{fmt.Sprint("t", i-2), fmt.Sprint("t", i-1)}
			default:
				t.DependsOn = []string{fmt.Sprint("t", i-i%3)}
			}
		}
		d.Tasks = append(d.Tasks, t)
	}
	if shape == "fanin" {
		sink := &Task{ID: "sink", Bash: "true", PriorityWeight: 1, WeightRule: rule}
		for _, t := range d.Tasks {
			sink.DependsOn = append(sink.DependsOn, t.ID)
		}
		d.Tasks = append(d.Tasks, sink)
	}
	return d
}

func TestWeightsOfShapes(t *testing.T) {
	t.Parallel()
	const n = 3001
	tests := []struct {
		shape, rule string
		task        string
		want        int
	}{
		{"chain", WeightDownstream, "t0", n},
		{"chain", WeightDownstream, "t3000", 1},
		{"chain", WeightUpstream, "t3000", n},
		{"fanout", WeightDownstream, "t0", n},
		{"fanout", WeightUpstream, "t7", 2},
		{"fanin", WeightDownstream, "t5", 2},
		{"fanin", WeightUpstream, "sink", n + 1},
		{"diamonds", WeightDownstream, "t0", n},
		{"diamonds", WeightDownstream, "t1", n - 1 - 1},
		{"diamonds", WeightUpstream, "t3000", n},
	}
	for _, tt := range tests {
		d := shapeDAG(tt.shape, n, tt.rule)
		if got := d.Weights()[tt.task]; got != tt.want {
			t.Errorf("%s %s: weight of %s = %d, want %d", tt.shape, tt.rule, tt.task, got, tt.want)
		}
	}
}

func BenchmarkWeights(b *testing.B) {
	for _, shape := range []string{"chain", "fanout", "fanin", "diamonds"} {
		for _, n := range []int{1_000, 10_000, 100_000} {
			d := shapeDAG(shape, n, WeightDownstream)
			b.Run(fmt.Sprintf("%s/%d", shape, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					computeWeights(d)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/task")
			})
		}
	}
}

func BenchmarkOrder(b *testing.B) {
	for _, shape := range []string{"chain", "fanout"} {
		for _, n := range []int{1_000, 10_000, 100_000} {
			d := shapeDAG(shape, n, WeightDownstream)
			b.Run(fmt.Sprintf("%s/%d", shape, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					newTaskGraph(d).topological()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/task")
			})
		}
	}
}

// TestLayoutAgreesWithTasks: Layout's order is Order, Pos inverts it, and Up and Down are the
// distinct depends_on edges seen from either end.
func TestLayoutAgreesWithTasks(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		d := randomDAG(t)
		l := d.Layout()
		ids := make([]string, len(l.Order))
		for k, i := range l.Order {
			ids[k] = d.Tasks[i].ID
			if l.Pos[i] != int32(k) {
				t.Fatalf("Pos[%d] = %d, want %d", i, l.Pos[i], k)
			}
		}
		if !slices.Equal(ids, d.Order()) {
			t.Fatalf("Layout order %v, Order %v", ids, d.Order())
		}
		for i, task := range d.Tasks {
			var ups []string
			for _, u := range l.Up[i] {
				ups = append(ups, d.Tasks[u].ID)
				if !slices.Contains(l.Down[u], int32(i)) {
					t.Fatalf("edge %s→%s missing from Down", d.Tasks[u].ID, task.ID)
				}
			}
			if !slices.Equal(ups, task.DependsOn) { // randomDAG draws distinct upstream tasks
				t.Fatalf("Up of %s = %v, depends_on %v", task.ID, ups, task.DependsOn)
			}
			if j, ok := d.TaskIndex(task.ID); !ok || j != i {
				t.Fatalf("TaskIndex(%s) = %d, %v", task.ID, j, ok)
			}
		}
	})
}
