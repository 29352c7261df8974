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
// SIGINT and SIGTERM cancel the command: serve and dags test shut down gracefully, any other
// command stops within a couple of seconds, and a second signal ends the process at once.
// SIGHUP makes serve re-read poolflow.yaml.
func Main(dags ...*dag.DAG) {
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-stop
		// The next signal gets the default action: a stuck shutdown can still be ended.
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		sig, _ := s.(syscall.Signal)
		cancel(cli.Interrupted{Signal: sig})
	}()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	reload := make(chan struct{}, 1)
	go func() {
		for range hup {
			select {
			case reload <- struct{}{}:
			default: // one reload pending covers this signal too
			}
		}
	}()
	err := cli.RunOptions(ctx, os.Args[1:], os.Stdout, os.Stderr, cli.Options{Reload: reload}, dags...)
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
