package ui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// A mapped task (§14) is one node of the graph and one row of the grid: its instances are shown
// inside them as counts per state and a bar of their states, and listed on its task page.

// statePart is one state's share of a mapped task's instances.
type statePart struct {
	State vocab.TaskState
	N     int
	Pct   float64 // of all instances, for the bar's width
}

// instanceCounts counts the instances of a mapped task by state, in vocab's order of states.
func instanceCounts(states []vocab.TaskState) []statePart {
	n := map[vocab.TaskState]int{}
	for _, s := range states {
		n[s]++
	}
	var out []statePart
	for _, s := range vocab.TaskStates() {
		if n[s] > 0 {
			out = append(out, statePart{State: s, N: n[s], Pct: 100 * float64(n[s]) / float64(len(states))})
		}
	}
	return out
}

// countsText says the counts in words: "38 success, 2 running".
func countsText(parts []statePart) string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = fmt.Sprintf("%d %s", p.N, strings.ReplaceAll(string(p.State), "_", " "))
	}
	return strings.Join(out, ", ")
}

// instancesOf are the mapped instances of task id among a run's task instances, by map_index.
func instancesOf(tis []store.TaskInstance, id string) []store.TaskInstance {
	type inst struct {
		i  int
		ti store.TaskInstance
	}
	var found []inst
	for _, ti := range tis {
		if base, i, ok := dag.SplitMapID(ti.TaskID); ok && base == id {
			found = append(found, inst{i, ti})
		}
	}
	slices.SortFunc(found, func(a, b inst) int { return a.i - b.i })
	out := make([]store.TaskInstance, len(found))
	for k, f := range found {
		out[k] = f.ti
	}
	return out
}

// isInstance reports whether id is a mapped instance of a mapped task of d.
func isInstance(d *dag.DAG, id string) bool {
	if d == nil {
		return false
	}
	base, _, ok := dag.SplitMapID(id)
	return ok && d.Task(base).Mapped()
}

// mapIndexOf is a mapped instance's index.
func mapIndexOf(id string) int {
	_, i, _ := dag.SplitMapID(id)
	return i
}
