// Package bigdag builds a DAG of 500 tasks shaped like a real warehouse rebuild, for the UI's
// tests and benchmarks and for `make run`: the graph, grid and pages must read well at that
// size (issue 21).
package bigdag

import (
	"fmt"

	"github.com/poolflow/poolflow/dag"
)

// Tables is how many tables Warehouse rebuilds: 4 tasks each, plus marts and the ends, 500 in all.
const Tables = 100

// Warehouse is a DAG of 500 tasks: start; per table extract → clean → load → check; 96 marts
// each joining four tables' checks; publish after every mart; then notify and archive. argv is
// every task's command (["true"] in tests).
func Warehouse(id string, argv []string) *dag.DAG {
	d := dag.New(id, dag.Description("a generated warehouse rebuild: 500 tasks"), dag.Tags("example", "big"),
		dag.Owner("poolflow"))
	d.Command("start", argv)
	for t := range Tables {
		prev := "start"
		for _, step := range []string{"extract", "clean", "load", "check"} {
			name := fmt.Sprintf("%s_table_%03d", step, t)
			d.Command(name, argv, dag.After(prev))
			prev = name
		}
	}
	var marts []string
	for m := range 96 {
		var ups []string
		for k := range 4 {
			ups = append(ups, fmt.Sprintf("check_table_%03d", (m*4+k)%Tables))
		}
		name := fmt.Sprintf("mart_%02d", m)
		d.Command(name, argv, dag.After(ups...))
		marts = append(marts, name)
	}
	d.Command("publish", argv, dag.After(marts...))
	d.Command("notify", argv, dag.After("publish"))
	d.Command("archive", argv, dag.After("publish"))
	return d
}
