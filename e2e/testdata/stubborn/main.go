// Command stubborn is poolflow with one Go DAG whose task ignores its context and never returns:
// the e2e tests check that serve's shutdown is bounded all the same.
package main

import (
	"context"

	"github.com/poolflow/poolflow"
	"github.com/poolflow/poolflow/dag"
)

func main() {
	d := dag.New("stubborn")
	d.Go("ignore", func(ctx context.Context, ti *dag.TaskContext) error {
		ti.Log("ignoring cancellation")
		select {}
	})
	poolflow.Main(d)
}
