package ui

import (
	"sort"
	"strconv"
	"strings"

	"github.com/dominikbraun/graph"

	"github.com/poolflow/poolflow/dag"
)

// A big DAG is drawn collapsed, so that its picture reads at a glance: tasks of one layer that
// share a name prefix (extract_table_1 … extract_table_100) become one group node, and long
// chains of tasks with one upstream and one downstream each become one chain node. Each group
// shows how many of its tasks are in each state; opening it (?open=key, any number of them)
// draws its tasks again. Collapsing never makes a cycle: a prefix group's members share a layer
// (every edge still points one way), and a chain's inner tasks have no edge leaving the chain.

const (
	groupAbove = 40 // a DAG with more tasks than this is drawn collapsed by default
	minGroup   = 3  // the fewest tasks sharing a prefix that make a group
	minChain   = 4  // the shortest chain drawn as one node
)

// vnode is a node of the picture: one task, or a group of tasks.
type vnode struct {
	ID      string // the task's id, or the group's key (prefix:…, chain:…)
	Label   string
	Kind    string // task | prefix | chain
	Members []*dag.Task
	Deps    []string // upstream vnode ids
	order   int      // file order of the first member
}

// Group reports whether n stands for several tasks.
func (n *vnode) Group() bool { return n.Kind != "task" }

// taskLayers gives each task its layer: one right of its deepest upstream task.
func taskLayers(d *dag.DAG) map[string]int {
	g := graph.New(graph.StringHash, graph.Directed(), graph.Acyclic())
	order := map[string]int{}
	byID := map[string]*dag.Task{}
	for i, t := range d.Tasks {
		order[t.ID], byID[t.ID] = i, t
		_ = g.AddVertex(t.ID)
	}
	for _, t := range d.Tasks {
		for _, up := range t.DependsOn {
			_ = g.AddEdge(up, t.ID)
		}
	}
	sorted, err := graph.StableTopologicalSort(g, func(a, b string) bool { return order[a] < order[b] })
	if err != nil { // a loaded DAG has no cycle; fall back to file order
		sorted = nil
		for _, t := range d.Tasks {
			sorted = append(sorted, t.ID)
		}
	}
	layer := map[string]int{}
	for _, id := range sorted {
		l := 0
		for _, up := range byID[id].DependsOn {
			l = max(l, layer[up]+1)
		}
		layer[id] = l
	}
	return layer
}

// prefixOf is the part of a task id that its siblings share: without its trailing digits, or
// without its last word when it has none (stage_3_extract → stage_3_).
func prefixOf(id string) string {
	p := strings.TrimRight(id, "0123456789")
	if p != id {
		return p
	}
	if i := strings.LastIndexAny(strings.TrimRight(id, "_.-"), "_.-"); i > 0 {
		return id[:i+1]
	}
	return ""
}

// viewNodes builds the picture's nodes: every task alone when collapse is off, else groups
// and chains except those named in open.
func viewNodes(d *dag.DAG, collapse bool, open map[string]bool) []*vnode {
	layer := taskLayers(d)
	owner := map[string]string{} // task id → its vnode id
	var nodes []*vnode
	byID := map[string]*vnode{}
	add := func(n *vnode) {
		nodes = append(nodes, n)
		byID[n.ID] = n
		for _, m := range n.Members {
			owner[m.ID] = n.ID
		}
	}
	// Prefix groups: the tasks of one layer sharing a prefix.
	if collapse {
		type key struct {
			layer  int
			prefix string
		}
		groups := map[key][]*dag.Task{}
		for _, t := range d.Tasks {
			if p := prefixOf(t.ID); p != "" {
				k := key{layer[t.ID], p}
				groups[k] = append(groups[k], t)
			}
		}
		for i, t := range d.Tasks {
			if _, done := owner[t.ID]; done {
				continue
			}
			k := key{layer[t.ID], prefixOf(t.ID)}
			ms := groups[k]
			id := "prefix:" + strconv.Itoa(k.layer) + ":" + k.prefix
			if k.prefix == "" || len(ms) < minGroup || len(ms) == len(d.Tasks) || open[id] {
				continue
			}
			add(&vnode{ID: id, Label: k.prefix + "*", Kind: "prefix", Members: ms, order: i})
		}
	}
	for i, t := range d.Tasks {
		if _, done := owner[t.ID]; !done {
			add(&vnode{ID: t.ID, Label: t.ID, Kind: "task", Members: []*dag.Task{t}, order: i})
		}
	}
	link := func() {
		for _, n := range nodes {
			seen := map[string]bool{}
			n.Deps = n.Deps[:0]
			for _, m := range n.Members {
				for _, up := range m.DependsOn {
					o := owner[up]
					if o == n.ID || seen[o] {
						continue
					}
					seen[o] = true
					n.Deps = append(n.Deps, o)
				}
			}
			sort.Strings(n.Deps)
		}
	}
	link()
	if collapse {
		nodes = collapseChains(nodes, byID, owner, open)
		link()
	}
	sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].order < nodes[j].order })
	return nodes
}

// collapseChains replaces each run of at least minChain single tasks, each the only upstream
// of the next and the next its only downstream, with one chain node.
func collapseChains(nodes []*vnode, byID map[string]*vnode, owner map[string]string, open map[string]bool) []*vnode {
	down := map[string][]string{}
	for _, n := range nodes {
		for _, up := range n.Deps {
			down[up] = append(down[up], n.ID)
		}
	}
	single := func(id string) bool { n := byID[id]; return n != nil && n.Kind == "task" }
	// next: the task that continues a chain from id, if any.
	next := func(id string) string {
		if ds := down[id]; len(ds) == 1 && single(ds[0]) && len(byID[ds[0]].Deps) == 1 {
			return ds[0]
		}
		return ""
	}
	continues := map[string]bool{}
	for _, n := range nodes {
		if single(n.ID) {
			if nx := next(n.ID); nx != "" {
				continues[nx] = true
			}
		}
	}
	gone := map[string]bool{}
	var out []*vnode
	for _, n := range nodes {
		if !single(n.ID) || continues[n.ID] {
			continue
		}
		chain := []string{n.ID}
		for nx := next(n.ID); nx != ""; nx = next(nx) {
			chain = append(chain, nx)
		}
		id := "chain:" + n.ID
		if len(chain) < minChain || open[id] {
			continue
		}
		g := &vnode{ID: id, Label: n.ID + " → … → " + chain[len(chain)-1], Kind: "chain", order: n.order}
		for _, c := range chain {
			g.Members = append(g.Members, byID[c].Members...)
			gone[c] = true
			owner[c] = id
		}
		byID[id] = g
		out = append(out, g)
	}
	for _, n := range nodes {
		if !gone[n.ID] {
			out = append(out, n)
		}
	}
	return out
}

// vlayers places the nodes in layers (one right of the deepest upstream node), ordered in each
// by two sweeps of the barycentre heuristic to keep edges short.
func vlayers(nodes []*vnode) [][]*vnode {
	byID := map[string]*vnode{}
	for _, n := range nodes {
		byID[n.ID] = n
	}
	layer := map[string]int{}
	var visit func(n *vnode) int
	visiting := map[string]bool{}
	visit = func(n *vnode) int {
		if l, ok := layer[n.ID]; ok {
			return l
		}
		if visiting[n.ID] { // cannot happen (see above); keep the picture rather than loop
			return 0
		}
		visiting[n.ID] = true
		l := 0
		for _, up := range n.Deps {
			if u := byID[up]; u != nil {
				l = max(l, visit(u)+1)
			}
		}
		layer[n.ID] = l
		return l
	}
	depth := 0
	for _, n := range nodes {
		depth = max(depth, visit(n)+1)
	}
	out := make([][]*vnode, depth)
	for _, n := range nodes {
		out[layer[n.ID]] = append(out[layer[n.ID]], n)
	}
	pos := map[string]float64{}
	place := func(l int) {
		for i, n := range out[l] {
			pos[n.ID] = float64(i)
		}
	}
	for l := range out {
		place(l)
	}
	down := map[string][]string{}
	for _, n := range nodes {
		for _, up := range n.Deps {
			down[up] = append(down[up], n.ID)
		}
	}
	mean := func(ids []string, self string) float64 {
		if len(ids) == 0 {
			return pos[self]
		}
		s := 0.0
		for _, id := range ids {
			s += pos[id]
		}
		return s / float64(len(ids))
	}
	for l := 1; l < len(out); l++ {
		sort.SliceStable(out[l], func(i, j int) bool {
			return mean(out[l][i].Deps, out[l][i].ID) < mean(out[l][j].Deps, out[l][j].ID)
		})
		place(l)
	}
	for l := len(out) - 2; l >= 0; l-- {
		sort.SliceStable(out[l], func(i, j int) bool {
			return mean(down[out[l][i].ID], out[l][i].ID) < mean(down[out[l][j].ID], out[l][j].ID)
		})
		place(l)
	}
	return out
}
