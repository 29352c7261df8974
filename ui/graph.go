package ui

import (
	"html/template"
	"sort"
	"strings"

	"github.com/dominikbraun/graph"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/vocab"
)

// The graph view: the DAG's tasks in layers from left to right (a task sits one layer right of
// its deepest upstream task), ordered within a layer by the mean position of their upstream
// tasks to keep edges short, each node coloured by its state in the selected run.

// nodeInfo is what a node shows of its task in the selected run.
type nodeInfo struct {
	State  vocab.TaskState
	Reason string // wait reason, shown on hover
	Href   string // the task instance page; "" without a run
}

const (
	nodeW, nodeH = 176.0, 46.0
	gapX, gapY   = 64.0, 18.0
	pad          = 8.0
)

// layers assigns each task its layer and its order within it.
func layers(d *dag.DAG) [][]*dag.Task {
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
	depth := 0
	for _, id := range sorted {
		l := 0
		for _, up := range byID[id].DependsOn {
			l = max(l, layer[up]+1)
		}
		layer[id] = l
		depth = max(depth, l+1)
	}
	out := make([][]*dag.Task, depth)
	for _, t := range d.Tasks {
		out[layer[t.ID]] = append(out[layer[t.ID]], t)
	}
	// Two sweeps of the barycentre heuristic: forward by upstream positions, then backward by
	// downstream ones.
	pos := map[string]float64{}
	place := func(l int) {
		for i, t := range out[l] {
			pos[t.ID] = float64(i)
		}
	}
	for l := range out {
		place(l)
	}
	down := map[string][]string{}
	for _, t := range d.Tasks {
		for _, up := range t.DependsOn {
			down[up] = append(down[up], t.ID)
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
			return mean(out[l][i].DependsOn, out[l][i].ID) < mean(out[l][j].DependsOn, out[l][j].ID)
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

// graphSVG draws the DAG; info gives each task's state in the selected run.
func graphSVG(d *dag.DAG, info map[string]nodeInfo) template.HTML {
	ls := layers(d)
	tallest := 0
	for _, l := range ls {
		tallest = max(tallest, len(l))
	}
	w := pad*2 + float64(len(ls))*nodeW + float64(max(len(ls)-1, 0))*gapX
	h := pad*2 + float64(tallest)*nodeH + float64(max(tallest-1, 0))*gapY
	type xy struct{ x, y float64 }
	at := map[string]xy{}
	for li, l := range ls {
		off := (float64(tallest-len(l)) * (nodeH + gapY)) / 2
		for i, t := range l {
			at[t.ID] = xy{pad + float64(li)*(nodeW+gapX), pad + off + float64(i)*(nodeH+gapY)}
		}
	}
	var s svg
	s.open(w, h, "graph", "graph of "+d.ID)
	s.raw(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker></defs>`)
	for _, t := range d.Tasks {
		to := at[t.ID]
		for _, up := range t.DependsOn {
			from, ok := at[up]
			if !ok {
				continue
			}
			x1, y1 := from.x+nodeW, from.y+nodeH/2
			x2, y2 := to.x-2, to.y+nodeH/2
			mx := (x1 + x2) / 2
			s.raw(`<path class="edge" d="M%s,%s C%s,%s %s,%s %s,%s" marker-end="url(#arrow)"/>`,
				num(x1), num(y1), num(mx), num(y1), num(mx), num(y2), num(x2), num(y2))
		}
	}
	for _, t := range d.Tasks {
		p := at[t.ID]
		in := info[t.ID]
		state := in.State
		if state == "" {
			state = vocab.TaskNone
		}
		if in.Href != "" {
			s.raw(`<a href="%s">`, attr(in.Href))
		}
		s.raw(`<g class="node %s" data-task="%s" data-state="%s" transform="translate(%s,%s)">`,
			attr(stateClass(state)), attr(t.ID), attr(string(state)), num(p.x), num(p.y))
		tip := t.ID + ": " + strings.ReplaceAll(string(state), "_", " ")
		if in.Reason != "" {
			tip += "\n" + in.Reason
		}
		s.title(tip)
		s.raw(`<rect class="box" width="%s" height="%s" rx="7"/>`, num(nodeW), num(nodeH))
		s.raw(`<rect class="strip" width="6" height="%s" rx="3"/>`, num(nodeH))
		s.text(16, 19, "name", "start", truncate(t.ID, 21))
		s.text(16, 36, "sub", "start", truncate(taskSummary(t, state), 27))
		s.raw(`</g>`)
		if in.Href != "" {
			s.raw(`</a>`)
		}
	}
	return s.html()
}

// taskSummary is a node's second line: its state (or kind) and the pools it needs.
func taskSummary(t *dag.Task, state vocab.TaskState) string {
	parts := []string{strings.ReplaceAll(string(state), "_", " ")}
	if state == vocab.TaskNone {
		parts[0] = string(t.Kind)
	}
	for _, ps := range sortedReqs(t.PoolRequirements) {
		parts = append(parts, ps.Pool+"×"+itoa(ps.Slots))
	}
	return strings.Join(parts, " · ")
}
