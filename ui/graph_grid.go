package ui

import (
	"html/template"
	"strconv"
	"strings"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The DAG page's grid: runs × tasks, one row per node of the graph (so a collapsed group is
// one row whose cell per run is its members' most pressing state, counted on hover), then the
// tasks only older runs have.

type gridCell struct {
	State vocab.TaskState
	Href  string
	Title string
	Bar   []statePart // a mapped task's instances by state (§14)
}

type gridRow struct {
	Task  string
	Kind  string
	Group string // the group's page (opened) when the row is a group
	Size  int
	Cells []gridCell
}

func buildGrid(dagID string, def *dag.DAG, nodes []*vnode, runs []store.Run, tis map[int64][]store.TaskCell,
	groupHref func(string) string) []gridRow {
	// states[run pk][task] for lookups in constant time: a 500-task DAG × 25 runs is 12,500 cells.
	byRun := make([]map[string]store.TaskCell, len(runs))
	for i, run := range runs {
		m := make(map[string]store.TaskCell, len(tis[run.PK]))
		for _, ti := range tis[run.PK] {
			m[ti.TaskID] = ti
		}
		byRun[i] = m
	}
	cell := func(i int, task string) gridCell {
		run := runs[i]
		ti, ok := byRun[i][task]
		if !ok {
			return gridCell{State: vocab.TaskNone, Title: task + " in " + run.RunID + ": not in this run"}
		}
		c := gridCell{State: ti.State, Href: taskPath(dagID, run.RunID, task),
			Title: task + " in " + run.RunID + ": " + strings.ReplaceAll(string(ti.State), "_", " ")}
		if ti.TryNumber > 1 {
			c.Title += " (try " + itoa(ti.TryNumber) + ")"
		}
		if def != nil && def.Task(task).Mapped() {
			var states []vocab.TaskState
			for k := 0; ; k++ {
				inst, ok := byRun[i][dag.MapID(task, k)]
				if !ok {
					break
				}
				states = append(states, inst.State)
			}
			if len(states) > 0 {
				c.Bar = instanceCounts(states)
				c.Title += " · " + itoa(len(states)) + " mapped: " + countsText(c.Bar)
			}
		}
		return c
	}
	var rows []gridRow
	known := map[string]bool{}
	for _, n := range nodes {
		for _, m := range n.Members {
			known[m.ID] = true
		}
		if !n.Group() {
			t := n.Members[0]
			row := gridRow{Task: t.ID, Kind: string(t.Kind)}
			for i := range runs {
				row.Cells = append(row.Cells, cell(i, t.ID))
			}
			rows = append(rows, row)
			continue
		}
		label := n.Label + " (" + strconv.Itoa(len(n.Members)) + ")"
		row := gridRow{Task: label, Kind: n.Kind, Group: groupHref(n.ID), Size: len(n.Members)}
		for i, run := range runs {
			states := make([]vocab.TaskState, 0, len(n.Members))
			for _, m := range n.Members {
				if ti, ok := byRun[i][m.ID]; ok {
					states = append(states, ti.State)
				}
			}
			if len(states) == 0 {
				row.Cells = append(row.Cells, gridCell{State: vocab.TaskNone, Title: label + " in " + run.RunID + ": not in this run"})
				continue
			}
			counts := countStates(states)
			row.Cells = append(row.Cells, gridCell{State: counts[0].State, Href: runPath(dagID, run.RunID),
				Title: label + " in " + run.RunID + ": " + countWords(counts)})
		}
		rows = append(rows, row)
	}
	// Tasks only older runs have (removed from the DAG since), in the order they appear.
	var gone []string
	for i := range runs {
		for _, ti := range tis[runs[i].PK] {
			if !known[ti.TaskID] && !isInstance(def, ti.TaskID) { // instances are in their task's cell
				known[ti.TaskID] = true
				gone = append(gone, ti.TaskID)
			}
		}
	}
	for _, task := range gone {
		row := gridRow{Task: task}
		for i := range runs {
			row.Cells = append(row.Cells, cell(i, task))
		}
		rows = append(rows, row)
	}
	return rows
}

// gridBody is the grid's rows as markup, written here rather than by the template: a 500-task
// grid is 5,000 cells, and the template's reflection cost several times this.
func gridBody(rows []gridRow) template.HTML {
	var b strings.Builder
	if len(rows) > 0 {
		b.Grow(len(rows) * (80 + 120*len(rows[0].Cells)))
	}
	// One cell is a tab stop, the others are reached with the arrow keys (static/grid.js): a
	// 500-task grid is not 5,000 stops.
	var rove roving
	for _, row := range rows {
		if row.Group != "" {
			b.WriteString(`<tr class="group-row"><th class="task-col"><a href="`)
			b.WriteString(attr(row.Group))
			b.WriteString(`" title="`)
			b.WriteString(itoa(row.Size))
			b.WriteString(` tasks: open the group">`)
			b.WriteString(attr(row.Task))
			b.WriteString(`</a></th>`)
		} else {
			b.WriteString(`<tr><th class="task-col"><span title="`)
			b.WriteString(attr(row.Kind))
			b.WriteString(`">`)
			b.WriteString(attr(row.Task))
			b.WriteString(`</span></th>`)
		}
		for _, c := range row.Cells {
			if c.Href == "" {
				b.WriteString(`<td><span class="cell absent" title="`)
				b.WriteString(attr(c.Title))
				b.WriteString(`"></span></td>`)
				continue
			}
			b.WriteString(`<td><a class="cell `)
			b.WriteString(attr(stateClass(c.State)))
			if c.Bar != nil {
				b.WriteString(` mapped`)
			}
			b.WriteString(`" href="`)
			b.WriteString(attr(c.Href))
			b.WriteString(`" title="`)
			b.WriteString(attr(c.Title))
			b.WriteString(`" data-state="`)
			b.WriteString(attr(string(c.State)))
			b.WriteString(`"`)
			b.WriteString(rove.next())
			b.WriteString(`>`)
			for _, p := range c.Bar {
				b.WriteString(`<span class="`)
				b.WriteString(attr(stateClass(p.State)))
				b.WriteString(`" style="width: `)
				b.WriteString(strconv.FormatFloat(p.Pct, 'f', 2, 64))
				b.WriteString(`%" data-state="`)
				b.WriteString(attr(string(p.State)))
				b.WriteString(`" data-count="`)
				b.WriteString(itoa(p.N))
				b.WriteString(`"></span>`)
			}
			b.WriteString(`</a></td>`)
		}
		b.WriteString("</tr>\n")
	}
	return template.HTML(b.String()) //nolint:gosec // every value above is escaped by attr
}
