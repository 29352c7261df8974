package ui

import (
	"html/template"
	"sort"
	"strconv"
	"strings"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/vocab"
)

// The graph view: the DAG's nodes (tasks, or groups of them: graph_groups.go) in layers from
// left to right, each coloured by its state in the selected run. It is drawn at its natural
// size (13 px names); static/graph.js pans, zooms, fits and searches it. Every task is also in
// a list of links under it, for screen readers and for finding a task by name.

// nodeInfo is what a node shows of its task in the selected run.
type nodeInfo struct {
	State  vocab.TaskState
	Reason string // wait reason, shown on hover
	Href   string // the task instance page; "" without a run
	// Instances are a mapped task's instances by state (§14): counts on the node and a bar.
	Instances []statePart
}

const (
	nodeW, nodeH = 176.0, 46.0
	maxNodeW     = 340.0
	gapX, gapY   = 64.0, 18.0
	pad          = 8.0
	charW        = 7.9 // the width of a 13 px monospace character
)

// graphView is the graph card: the picture and what the page says around it.
type graphView struct {
	SVG       template.HTML
	Tasks     int
	Nodes     int
	Groups    int    // group nodes drawn
	Collapsed bool   // grouping is on
	Wide      bool   // wider than the card beside the trigger form: the page gives it the full width
	GroupsOn  string // the page with grouping on, and off
	GroupsOff string
	Items     []graphItem // every task, for the list and the search
}

// graphItem is one task of the list under the graph.
type graphItem struct {
	Task  string
	State vocab.TaskState
	Href  string
	Group string // the id of the group node drawing it, "" when drawn alone
}

// taskList is the graph's tasks as the items of a list, each a link to its task instance when
// the run shown has one, with its state in words. Written here rather than by the template:
// for 500 tasks the template's escaping, call by call, was a fifth of the DAG page's time.
func taskList(items []graphItem) template.HTML {
	var b strings.Builder
	b.Grow(len(items) * 160)
	for _, it := range items {
		task := attr(it.Task)
		b.WriteString(`<li data-task="`)
		b.WriteString(task)
		if it.Group != "" {
			b.WriteString(`" data-group="`)
			b.WriteString(attr(it.Group))
		}
		b.WriteString(`">`)
		if it.Href != "" {
			b.WriteString(`<a href="`)
			b.WriteString(attr(it.Href))
			b.WriteString(`">`)
			b.WriteString(task)
			b.WriteString(`</a>`)
		} else {
			b.WriteString(`<span>`)
			b.WriteString(task)
			b.WriteString(`</span>`)
		}
		b.WriteString(` <span class="muted small">`)
		b.WriteString(attr(strings.ReplaceAll(string(it.State), "_", " ")))
		b.WriteString(`</span></li>`)
	}
	return template.HTML(b.String())
}

// worstFirst orders states by how much they need a look: a group takes the first of its
// members' states in this order.
var worstFirst = []vocab.TaskState{vocab.TaskFailed, vocab.TaskUpstreamFailed, vocab.TaskUpForRetry,
	vocab.TaskAwaitingApproval, vocab.TaskRunning, vocab.TaskScheduled, vocab.TaskUpForReschedule, vocab.TaskNone,
	vocab.TaskSkipped, vocab.TaskSuccess}

// stateCounts counts states, in worstFirst order.
type stateCount struct {
	State vocab.TaskState
	N     int
}

func countStates(states []vocab.TaskState) []stateCount {
	n := map[vocab.TaskState]int{}
	for _, s := range states {
		if s == "" {
			s = vocab.TaskNone
		}
		n[s]++
	}
	var out []stateCount
	for _, s := range worstFirst {
		if n[s] > 0 {
			out = append(out, stateCount{s, n[s]})
			delete(n, s)
		}
	}
	rest := make([]string, 0, len(n))
	for s := range n {
		rest = append(rest, string(s))
	}
	sort.Strings(rest)
	for _, s := range rest {
		out = append(out, stateCount{vocab.TaskState(s), n[vocab.TaskState(s)]})
	}
	return out
}

func countWords(cs []stateCount) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = strconv.Itoa(c.N) + " " + strings.ReplaceAll(string(c.State), "_", " ")
	}
	return strings.Join(parts, " · ")
}

// graphSVG draws the DAG laid out as lay; info gives each task's state in the selected run; groupHref is the
// page with a group opened.
func graphSVG(d *dag.DAG, lay *graphLayout, info map[string]nodeInfo, collapse bool, groupHref func(id string) string) graphView {
	nodes, ls := lay.nodes, lay.layers
	view := graphView{Tasks: len(d.Tasks), Nodes: len(nodes), Collapsed: collapse}
	// Each layer is as wide as its longest name needs, within bounds.
	widths := make([]float64, len(ls))
	tallest := 0
	for li, l := range ls {
		tallest = max(tallest, len(l))
		widths[li] = nodeW
		for _, n := range l {
			label := n.Label
			if n.Group() {
				label += " (" + strconv.Itoa(len(n.Members)) + ")"
			}
			widths[li] = max(widths[li], min(maxNodeW, 30+charW*float64(len([]rune(label)))))
		}
	}
	type xy struct{ x, y, w float64 }
	at := map[string]xy{}
	w := pad
	for li, l := range ls {
		off := (float64(tallest-len(l)) * (nodeH + gapY)) / 2
		for i, n := range l {
			at[n.ID] = xy{w, pad + off + float64(i)*(nodeH+gapY), widths[li]}
		}
		w += widths[li] + gapX
	}
	w += pad - gapX
	if len(ls) == 0 {
		w = pad * 2
	}
	h := pad*2 + float64(tallest)*nodeH + float64(max(tallest-1, 0))*gapY
	var s svg
	s.openGroup(w, h, "graph", "graph of "+d.ID)
	s.raw(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker></defs>`)
	s.raw(`<g class="edges" aria-hidden="true">`)
	for _, n := range nodes {
		to := at[n.ID]
		for _, up := range n.Deps {
			from, ok := at[up]
			if !ok {
				continue
			}
			x1, y1 := from.x+from.w, from.y+nodeH/2
			x2, y2 := to.x-2, to.y+nodeH/2
			mx := (x1 + x2) / 2
			s.raw(`<path class="edge" d="M%s,%s C%s,%s %s,%s %s,%s" marker-end="url(#arrow)"/>`,
				num(x1), num(y1), num(mx), num(y1), num(mx), num(y2), num(x2), num(y2))
		}
	}
	s.raw(`</g>`)
	// One node is a tab stop, the others are reached with the arrow keys (graph.js): a 500-task
	// graph is not 500 stops; each node stays a link for screen readers and in the list below.
	var rove roving
	for _, n := range nodes {
		p := at[n.ID]
		maxChars := int((p.w - 26) / charW)
		if !n.Group() {
			t := n.Members[0]
			in := info[t.ID]
			state := in.State
			if state == "" {
				state = vocab.TaskNone
			}
			view.Items = append(view.Items, graphItem{Task: t.ID, State: state, Href: in.Href})
			tip := t.ID + ": " + strings.ReplaceAll(string(state), "_", " ")
			if in.Reason != "" {
				tip += "\n" + in.Reason
			}
			// A node link's accessible name is its title, the task's whole id and state (an
			// aria-label would not contain the visible, shortened name: WCAG 2.5.3).
			if in.Href != "" {
				s.raw(`<a href="%s"%s>`, attr(in.Href), rove.next())
			}
			s.raw(`<g class="node %s" data-task="%s" data-state="%s" transform="translate(%s,%s)">`,
				attr(stateClass(state)), attr(t.ID), attr(string(state)), num(p.x), num(p.y))
			total := 0
			for _, c := range in.Instances {
				total += c.N
			}
			if total > 0 {
				tip += "\n" + itoa(total) + " mapped instances: " + countsText(in.Instances)
			}
			s.title(tip)
			s.raw(`<rect class="box" width="%s" height="%s" rx="7"/>`, num(p.w), num(nodeH))
			s.raw(`<rect class="strip" width="6" height="%s" rx="3"/>`, num(nodeH))
			name := maxChars
			if pill := waitPill(state); pill != "" {
				name -= len(pill) + 2
				s.pill(p.w, pill, state)
			}
			label := t.ID
			if t.Mapped() {
				label += " [ ]" // a mapped task (§14), as Airflow marks one
			}
			s.text(16, 19, "name", "start", truncate(label, name))
			if total > 0 {
				s.text(16, 32, "sub", "start", truncate(mappedSummary(total, in.Instances), maxChars+4))
				// The instances' states as one bar along the node's foot.
				x, barW := 16.0, p.w-26
				for _, c := range in.Instances {
					w := barW * c.Pct / 100
					s.raw(`<rect class="mbar %s" data-state="%s" data-count="%d" x="%s" y="%s" width="%s" height="5"/>`,
						attr(stateClass(c.State)), attr(string(c.State)), c.N, num(x), num(nodeH-10), num(w))
					x += w
				}
			} else {
				sub := taskSummary(t, state)
				if state == vocab.TaskScheduled && in.Reason != "" {
					sub = in.Reason
				}
				s.text(16, 36, "sub", "start", truncate(sub, maxChars+4))
			}
			s.raw(`</g>`)
			if in.Href != "" {
				s.raw(`</a>`)
			}
			continue
		}
		view.Groups++
		states := make([]vocab.TaskState, len(n.Members))
		names := make([]string, len(n.Members))
		for i, m := range n.Members {
			states[i] = info[m.ID].State
			names[i] = m.ID
			st := states[i]
			if st == "" {
				st = vocab.TaskNone
			}
			view.Items = append(view.Items, graphItem{Task: m.ID, State: st, Href: info[m.ID].Href, Group: n.ID})
		}
		counts := countStates(states)
		state := counts[0].State
		what := "tasks"
		if n.Kind == "chain" {
			what = "tasks in a chain"
		}
		label := n.Label + " (" + strconv.Itoa(len(n.Members)) + ")"
		tip := label + ": " + strconv.Itoa(len(n.Members)) + " " + what + ": " + countWords(counts) +
			"\nopen the group to draw each task\n" + strings.Join(names[:min(len(names), 24)], ", ")
		if len(names) > 24 {
			tip += ", …"
		}
		s.raw(`<a href="%s"%s>`, attr(groupHref(n.ID)), rove.next())
		s.raw(`<g class="node group %s %s" data-group="%s" data-state="%s" data-size="%d" transform="translate(%s,%s)">`,
			attr(n.Kind), attr(stateClass(state)), attr(n.ID), attr(string(state)), len(n.Members), num(p.x), num(p.y))
		s.title(tip)
		s.raw(`<rect class="box stack" x="4" y="-4" width="%s" height="%s" rx="7"/>`, num(p.w), num(nodeH))
		s.raw(`<rect class="box" width="%s" height="%s" rx="7"/>`, num(p.w), num(nodeH))
		s.raw(`<rect class="strip" width="6" height="%s" rx="3"/>`, num(nodeH))
		name := maxChars
		for _, c := range counts {
			if c.State == vocab.TaskAwaitingApproval {
				name -= len(waitPill(c.State)) + 2
				s.pill(p.w, waitPill(c.State), c.State)
			}
		}
		s.text(16, 19, "name", "start", truncate(label, name))
		s.text(16, 34, "sub", "start", truncate(countWords(counts), maxChars+4))
		// A bar of the members' states along the bottom edge.
		x, bw := 10.0, p.w-16
		for _, c := range counts {
			cw := bw * float64(c.N) / float64(len(n.Members))
			s.raw(`<rect class="seg %s" x="%s" y="%s" width="%s" height="4"/>`, attr(stateClass(c.State)), num(x),
				num(nodeH-7), num(cw))
			x += cw
		}
		s.raw(`</g></a>`)
	}
	view.Wide = w > 720
	view.SVG = s.html()
	return view
}

// roving gives the first of many links the tab stop and takes the others out of the tab
// order (tabindex -1), for a script to move the stop with the arrow keys.
type roving struct{ started bool }

func (r *roving) next() string {
	if !r.started {
		r.started = true
		return ""
	}
	return ` tabindex="-1"`
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

// waitPill is the word a node shows in its corner when its task waits: for a pool, for a
// person, or for its retry; "" otherwise. A wait must never look like a run.
func waitPill(state vocab.TaskState) string {
	switch state {
	case vocab.TaskScheduled:
		return string(vocab.EntryWaiting) // its queue entry waits for admission
	case vocab.TaskAwaitingApproval:
		return "needs you"
	case vocab.TaskUpForRetry:
		return "retry"
	}
	return ""
}

// pill draws a node's wait word at its top right corner.
func (s *svg) pill(w float64, word string, state vocab.TaskState) {
	pw := 10 + 6.6*float64(len([]rune(word)))
	s.raw(`<g class="pill %s" transform="translate(%s,5)"><rect width="%s" height="15" rx="7.5"/>`,
		attr(stateClass(state)), num(w-pw-6), num(pw))
	s.text(pw/2, 11.5, "pill-text", "middle", word)
	s.raw(`</g>`)
}

// mappedSummary is a mapped node's second line: how many instances, and how many ended well.
func mappedSummary(total int, parts []statePart) string {
	done := 0
	for _, p := range parts {
		if p.State == vocab.TaskSuccess {
			done = p.N
		}
	}
	return itoa(total) + " mapped · " + itoa(done) + " done"
}
