package dag

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dominikbraun/graph"
)

// maxCycleWork bounds the edge visits spent deciding which dependencies close a cycle, for
// files whose cycles are tangled enough that the exact answer would cost more than parsing.
const maxCycleWork = 20_000_000

// depEdge is one accepted-or-refused dependency: from the upstream task to the task, both as
// task indexes; task and dep locate the depends_on entry.
type depEdge struct {
	from, to int
	task     int
	path     string
	dep      string
}

// checkDependencies reports unknown and repeated depends_on entries and every cycle. Edges are
// taken in file order and an edge is refused when it would close a cycle with the edges taken
// before it (as a graph that prevents cycles would), so each cycle is reported once, at the
// dependency that closes it, and named task by task.
func (v *validator) checkDependencies(first map[string]int) {
	var edges []depEdge
	for i, t := range v.d.Tasks {
		if v.bad(i, "depends_on") {
			continue
		}
		own := first[t.ID] == i && t.ID != ""
		seen := make(map[string]bool, len(t.DependsOn))
		for j, dep := range t.DependsOn {
			path := fmt.Sprintf("depends_on[%d]", j)
			if v.bad(i, path) {
				continue
			}
			up, ok := first[dep]
			if !ok {
				v.fail(i, path, dep, "unknown task %q", dep)
				continue
			}
			if seen[dep] {
				v.fail(i, path, dep, "%q listed twice", dep)
				continue
			}
			seen[dep] = true
			if !own {
				continue // a duplicate task: its id is already reported
			}
			if up == i {
				v.fail(i, path, dep, "cycle: %s -> %s", dep, dep)
				continue
			}
			edges = append(edges, depEdge{from: up, to: i, task: i, path: path, dep: dep})
		}
	}
	residual := cyclicPart(len(v.d.Tasks), edges)
	if len(residual) == 0 {
		return
	}
	v.refuseCycles(edges, sccOf(residual, edges))
}

// cyclicPart runs Kahn's algorithm and returns the tasks it could not order (those on a cycle
// or downstream of one); nil for an acyclic graph, which is the common case and costs O(V+E).
func cyclicPart(n int, edges []depEdge) map[int]bool {
	indeg := make([]int, n)
	down := make([][]int, n)
	for _, e := range edges {
		indeg[e.to]++
		down[e.from] = append(down[e.from], e.to)
	}
	queue := make([]int, 0, n)
	for i := range n {
		if indeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	for k := 0; k < len(queue); k++ {
		for _, c := range down[queue[k]] {
			if indeg[c]--; indeg[c] == 0 {
				queue = append(queue, c)
			}
		}
	}
	if len(queue) == n {
		return nil
	}
	left := map[int]bool{}
	for i := range n {
		if indeg[i] > 0 {
			left[i] = true
		}
	}
	return left
}

// sccOf numbers the strongly connected components of more than one task among the residual
// tasks (the graph library's Tarjan); tasks outside them are absent from the result.
func sccOf(residual map[int]bool, edges []depEdge) map[int]int {
	// Vertices are task index + 1: the library's component loop stops at the zero key.
	g := graph.New(graph.IntHash, graph.Directed())
	for i := range residual {
		_ = g.AddVertex(i + 1) // distinct ints: cannot fail
	}
	for _, e := range edges {
		if residual[e.from] && residual[e.to] {
			_ = g.AddEdge(e.from+1, e.to+1) // distinct (from, to) pairs: cannot fail
		}
	}
	comps, _ := graph.StronglyConnectedComponents(g)
	comp := map[int]int{}
	for k, c := range comps {
		if len(c) > 1 {
			for _, v := range c {
				comp[v-1] = k
			}
		}
	}
	return comp
}

// refuseCycles takes the edges inside strongly connected components in file order and reports
// each that would close a cycle with the ones taken before it. Only such edges can: a path
// between two tasks of a component never leaves it.
func (v *validator) refuseCycles(edges []depEdge, comp map[int]int) {
	c := newCycleFinder()
	for _, e := range edges {
		cf, ok1 := comp[e.from]
		ct, ok2 := comp[e.to]
		if !ok1 || !ok2 || cf != ct {
			continue
		}
		closes, ok := c.reaches(e.to, e.from)
		if !ok {
			v.fail(e.task, e.path, e.dep, "dependency cycles too tangled to name each; fix the cycles reported before this one")
			return
		}
		if !closes {
			c.accept(e.from, e.to)
			continue
		}
		seq, from, to := c.seq, e.from, e.to
		v.failLazy(e.task, e.path, e.dep, func() string {
			return "cycle: " + strings.Join(v.cycleNames(c.path(to, from, seq)), " -> ")
		})
	}
}

// cycleNames names the cycle along path (from the refused edge's task back to its upstream),
// rotated to start at the task that comes first in the DAG so that the message does not depend
// on which edge happened to close it, and closed by repeating that task.
func (v *validator) cycleNames(path []int) []string {
	start := 0
	for k, i := range path {
		if i < path[start] {
			start = k
		}
	}
	out := make([]string, 0, len(path)+1)
	for _, i := range append(path[start:], path[:start]...) {
		out = append(out, v.d.Tasks[i].ID)
	}
	return append(out, out[0])
}

// cycleFinder holds the edges taken so far inside cyclic components and answers reachability
// between two tasks by a search from both ends, which stays cheap both for a cycle written in
// file order and for one written backwards.
type cycleFinder struct {
	out, in  map[int][]stamped
	seen     map[int]int // task -> mark of the search that reached it (+ forward, - backward)
	mark     int
	work     int
	seq      int // edges taken so far
	fwd, bwd []int
}

// stamped is an edge end with the number of edges taken before it.
type stamped struct{ node, seq int }

func newCycleFinder() *cycleFinder {
	return &cycleFinder{out: map[int][]stamped{}, in: map[int][]stamped{}, seen: map[int]int{}}
}

func (c *cycleFinder) accept(from, to int) {
	c.out[from] = append(c.out[from], stamped{to, c.seq})
	c.in[to] = append(c.in[to], stamped{from, c.seq})
	c.seq++
}

// reaches reports whether the taken edges lead from a to b; ok is false once the work budget
// is spent.
func (c *cycleFinder) reaches(a, b int) (found, ok bool) {
	c.mark++
	m := c.mark
	c.seen[a], c.fwd = m, append(c.fwd[:0], a)
	if c.seen[b] == m {
		return true, true
	}
	c.seen[b], c.bwd = -m, append(c.bwd[:0], b)
	var fwdWork, bwdWork int
	for len(c.fwd) > 0 && len(c.bwd) > 0 {
		if c.work > maxCycleWork {
			return false, false
		}
		// Expand by one level the side that has cost less so far: a side that ends soon
		// (no edges taken yet at a task) ends the search.
		forward := fwdWork <= bwdWork
		before := c.work
		front, adj, own, other := c.fwd, c.out, m, -m
		if !forward {
			front, adj, own, other = c.bwd, c.in, -m, m
		}
		var next []int
		for _, n := range front {
			for _, e := range adj[n] {
				c.work++
				switch c.seen[e.node] {
				case other:
					return true, true
				case own:
				default:
					c.seen[e.node] = own
					next = append(next, e.node)
				}
			}
		}
		if forward {
			c.fwd, fwdWork = next, fwdWork+c.work-before+1
		} else {
			c.bwd, bwdWork = next, bwdWork+c.work-before+1
		}
	}
	return false, true
}

// path is the shortest path from a to b over the first seq taken edges, found breadth first
// visiting downstream tasks in DAG order so that the result is the same on every run.
func (c *cycleFinder) path(a, b, seq int) []int {
	prev := map[int]int{a: a}
	queue := []int{a}
	for k := 0; k < len(queue); k++ {
		cur := queue[k]
		var next []int
		for _, e := range c.out[cur] {
			if e.seq < seq {
				next = append(next, e.node)
			}
		}
		slices.Sort(next)
		for _, n := range next {
			if _, seen := prev[n]; seen {
				continue
			}
			prev[n] = cur
			if n == b {
				var path []int
				for p := b; p != a; p = prev[p] {
					path = append(path, p)
				}
				path = append(path, a)
				slices.Reverse(path)
				return path
			}
			queue = append(queue, n)
		}
	}
	return []int{a, b} // not reached: the edge was refused because this path existed
}
