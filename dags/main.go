// Command dags is the daemon `make run` starts: the poolflow CLI with the example Go-authored
// DAG below registered beside the YAML DAGs of this folder. It is also the example of using
// poolflow as a library (SPEC §2.2).
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/poolflow/poolflow"
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/internal/bigdag"
)

func main() {
	poolflow.Main(goExample(), bigdag.Warehouse("warehouse_500", []string{"sh", "-c", "sleep 0.2"}))
}

// goExample is a Go-authored DAG: two Go functions around a command, the transfer needing
// slots of two pools at once.
func goExample() *dag.DAG {
	d := dag.New("go_example", dag.Description("a DAG written in Go"), dag.Tags("example", "go"),
		dag.Params(map[string]any{"rows": 3}))
	d.Go("extract", func(ctx context.Context, ti *dag.TaskContext) error {
		ti.Log("extracting %v rows for run %s", ti.Params["rows"], ti.RunID)
		return nil
	}, dag.Pools(map[string]int{"source_db": 1}))
	d.Command("transfer", []string{"sh", "-c", "echo transferring; sleep 1"}, dag.After("extract"),
		dag.Pools(map[string]int{"source_db": 1, "destination_db": 2}))
	d.Go("report", func(ctx context.Context, ti *dag.TaskContext) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		ti.Log("%s", fmt.Sprintf("report for %s done", ti.DAGID))
		return nil
	}, dag.After("transfer"))
	return d
}
