package dag

import (
	"container/heap"
	"sync/atomic"
)

// derived holds what is computed from a DAG's tasks once and then shared: the id index, the
// topological order and the effective priority weights. A DAG is not changed after it is
// loaded (or, for a Go DAG, after its tasks are added: adding one resets this), so each is
// computed at most once per DAG version, whoever asks first.
type derived struct {
	// atomic.Value rather than atomic.Pointer, which may not be copied: tests compare DAGs by
	// value.
	index, order, weights, layout, fingerprints, sourceHash, templates atomic.Value
}

func (m *derived) reset() { *m = derived{} }

// memo returns the value in v, computing it with f unless another caller already has;
// concurrent first callers may both compute it, and one result wins.
func memo[T any](v *atomic.Value, f func() T) T {
	if x := v.Load(); x != nil {
		return x.(T)
	}
	v.CompareAndSwap(nil, f())
	return v.Load().(T)
}

// Task returns the task with the given id, or nil.
func (d *DAG) Task(id string) *Task {
	if i, ok := d.TaskIndex(id); ok {
		return d.Tasks[i]
	}
	return nil
}

// TaskIndex returns the index in Tasks of the task with the given id (the first one, if the id
// is duplicated).
func (d *DAG) TaskIndex(id string) (int, bool) {
	index := memo(&d.derived.index, func() map[string]int {
		m := make(map[string]int, len(d.Tasks))
		for i := len(d.Tasks) - 1; i >= 0; i-- {
			m[d.Tasks[i].ID] = i // the first task of a duplicated id wins, as before
		}
		return m
	})
	if i, ok := index[id]; ok && i < len(d.Tasks) && d.Tasks[i].ID == id {
		return i, true
	}
	// Tasks changed behind the index's back (a test building a DAG by hand): look it up.
	for i, t := range d.Tasks {
		if t.ID == id {
			return i, true
		}
	}
	return 0, false
}

// Order returns the task ids in topological order: every task after its upstream tasks, and
// among tasks that are free to go in any order, the one that comes first in the file first.
// It is computed once per DAG and shared: the caller must not modify it. A DAG that fails
// Validate gets the tasks that can be ordered (none on or after a cycle or an unknown
// upstream).
func (d *DAG) Order() []string {
	return memo(&d.derived.order, func() []string {
		order := d.Layout().Order
		out := make([]string, len(order))
		for k, i := range order {
			out[k] = d.Tasks[i].ID
		}
		return out
	})
}

// Layout is the dependency graph by task index, for walking a run: the topological order of
// Order, each task's position in it, and each task's distinct upstream and downstream tasks.
type Layout struct {
	Order []int32   // task indexes in Order's order
	Pos   []int32   // by task index: its position in Order, -1 for a task that cannot be ordered
	Up    [][]int32 // by task index, in depends_on order
	Down  [][]int32 // by task index, in file order
}

// Layout returns the DAG's Layout, computed once per DAG and shared: the caller must not
// modify it.
func (d *DAG) Layout() *Layout {
	return memo(&d.derived.layout, func() *Layout {
		g := newTaskGraph(d)
		l := &Layout{Order: g.topological(), Pos: make([]int32, len(d.Tasks)), Up: g.up, Down: g.down}
		for i := range l.Pos {
			l.Pos[i] = -1
		}
		for k, i := range l.Order {
			l.Pos[i] = int32(k)
		}
		return l
	})
}

// taskGraph is the dependency graph by task index. Only the first task of an id is a vertex;
// an upstream listed twice is one edge; an unknown upstream adds no edge, but blocked counts it
// so that a task with an unknown upstream is never ordered.
type taskGraph struct {
	up, down [][]int32 // distinct upstream (depends_on order) and downstream (file order) tasks
	blocked  []int     // depends_on entries of each task that no edge stands for
	unique   bool      // no two tasks share an id
}

func newTaskGraph(d *DAG) *taskGraph {
	n := len(d.Tasks)
	g := &taskGraph{up: make([][]int32, n), down: make([][]int32, n), blocked: make([]int, n), unique: true}
	index := make(map[string]int32, n)
	for i, t := range d.Tasks {
		if _, dup := index[t.ID]; dup {
			g.unique = false
			g.blocked[i]++ // a second task of an id is never ordered
			continue
		}
		index[t.ID] = int32(i)
	}
	var seen map[int32]bool
	for i, t := range d.Tasks {
		if len(t.DependsOn) > 1 {
			seen = make(map[int32]bool, len(t.DependsOn))
		}
		for _, dep := range t.DependsOn {
			u, ok := index[dep]
			switch {
			case !ok:
				g.blocked[i]++
				continue
			case len(t.DependsOn) > 1 && seen[u]:
				continue // listed twice: one edge
			case len(t.DependsOn) > 1:
				seen[u] = true
			}
			g.up[i] = append(g.up[i], u)
			g.down[u] = append(g.down[u], int32(i))
		}
	}
	return g
}

// topological is Kahn's algorithm taking the smallest ready index first: O((V+E) log V). The
// graph library's sorts scan every vertex for each vertex placed (O(V²)) and order by
// levels rather than by file position, so they do not fit here.
func (g *taskGraph) topological() []int32 {
	n := len(g.up)
	indeg := make([]int, n)
	ready := &indexHeap{}
	for i := range n {
		indeg[i] = len(g.up[i]) + g.blocked[i]
		if indeg[i] == 0 {
			*ready = append(*ready, int32(i))
		}
	}
	heap.Init(ready)
	out := make([]int32, 0, n)
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int32)
		out = append(out, i)
		for _, c := range g.down[i] {
			if indeg[c]--; indeg[c] == 0 {
				heap.Push(ready, c)
			}
		}
	}
	return out
}

// indexHeap is a min-heap of task indexes.
type indexHeap []int32

func (h indexHeap) Len() int           { return len(h) }
func (h indexHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h indexHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *indexHeap) Push(x any)        { *h = append(*h, x.(int32)) }
func (h *indexHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
