package dag

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dominikbraun/graph"
)

// checkDependencies reports unknown and repeated depends_on entries and every cycle. The graph
// library refuses each edge that would close a cycle; the cycle is then the refused edge plus
// the path the graph already has between its ends, so each is named task by task.
func (v *validator) checkDependencies(first map[string]int) {
	g := graph.New(graph.StringHash, graph.Directed(), graph.PreventCycles())
	for _, t := range v.d.Tasks {
		if i, ok := first[t.ID]; ok && v.d.Tasks[i] == t {
			_ = g.AddVertex(t.ID) // ids in first are unique, so this cannot fail
		}
	}
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
			if _, ok := first[dep]; !ok {
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
			err := g.AddEdge(dep, t.ID)
			if errors.Is(err, graph.ErrEdgeCreatesCycle) {
				cycle := v.cycle(g, first, dep, t.ID)
				v.fail(i, path, dep, "cycle: %s", strings.Join(cycle, " -> "))
			}
		}
	}
}

// cycle names the cycle closed by the refused edge from -> to: to, the graph's shortest path
// from to back to from, then to again. It is rotated to start at the task that comes first in
// the DAG so that the message does not depend on which edge happened to close it.
func (v *validator) cycle(g graph.Graph[string, string], first map[string]int, from, to string) []string {
	path := shortestPath(g, first, to, from)
	if len(path) == 0 {
		path = []string{to} // a task depending on itself
	}
	start := 0
	for k, id := range path {
		if first[id] < first[path[start]] {
			start = k
		}
	}
	out := append(slices.Clone(path[start:]), path[:start]...)
	return append(out, out[0])
}

// shortestPath finds a shortest path in g by breadth-first search, visiting downstream tasks in
// DAG order so that the result is the same on every run.
func shortestPath(g graph.Graph[string, string], order map[string]int, from, to string) []string {
	adj, err := g.AdjacencyMap()
	if err != nil || from == to {
		return nil
	}
	prev := map[string]string{from: from}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		next := make([]string, 0, len(adj[cur]))
		for n := range adj[cur] {
			next = append(next, n)
		}
		slices.SortFunc(next, func(a, b string) int { return order[a] - order[b] })
		for _, n := range next {
			if _, seen := prev[n]; seen {
				continue
			}
			prev[n] = cur
			if n == to {
				var path []string
				for p := to; p != from; p = prev[p] {
					path = append(path, p)
				}
				path = append(path, from)
				slices.Reverse(path)
				return path
			}
			queue = append(queue, n)
		}
	}
	return nil
}
