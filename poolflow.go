// Package poolflow runs the poolflow daemon and CLI from a Go program that registers its own
// DAGs:
//
//	func main() {
//		d := dag.New("hello_go")
//		d.Go("greet", func(ctx context.Context, ti *dag.TaskContext) error { ti.Log("hello"); return nil })
//		poolflow.Main(d)
//	}
//
// The program then takes every command of the poolflow binary (serve, dags test, …) and its Go
// DAGs run beside the YAML DAGs of the DAGs folder.
package poolflow

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/poolflow/poolflow/cli"
	"github.com/poolflow/poolflow/dag"
)

// Main runs the CLI with os.Args and the given Go DAGs, then exits with the command's code.
// SIGINT and SIGTERM cancel the command (serve shuts down gracefully).
func Main(dags ...*dag.DAG) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr, dags...)
	stop()
	os.Exit(ExitCode(err))
}

// ExitCode maps a CLI error to the process exit code, printing it to stderr.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *cli.ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintln(os.Stderr, "poolflow:", ee.Err)
		}
		return ee.Code
	}
	fmt.Fprintln(os.Stderr, "poolflow:", err)
	return 1
}
