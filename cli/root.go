package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
	_ "github.com/poolflow/poolflow/store/postgres" // the drivers store.Open offers
	_ "github.com/poolflow/poolflow/store/sqlite"
)

// Version is the poolflow version, set at build time with -ldflags "-X ...cli.Version=...".
var Version = "0.1.0-dev"

// ExitError carries the exit code a command wants.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1 // the run failed, a DAG is invalid (validate), the configuration is invalid
	ExitUsage  = 2 // usage errors, an invalid DAG for dags test
)

// env is what every command shares: global flags and the Go-registered DAGs.
type env struct {
	configPath string
	dagsDir    string
	stateDir   string
	storeFlag  string
	goDAGs     []*dag.DAG
	stdout     io.Writer
	stderr     io.Writer
	reload     <-chan struct{} // SIGHUP, for serve
	who        auth.Principal  // who runs a write (identity.go); the zero value until authorize
	getenv     func(string) string
}

// Run runs the CLI with args (without the program name). Go-authored DAGs are registered with
// goDAGs. The error is an *ExitError when the exit code is not 1.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, goDAGs ...*dag.DAG) error {
	return RunOptions(ctx, args, stdout, stderr, Options{}, goDAGs...)
}

// Options extend Run for the program's main, which owns the signals.
type Options struct {
	// Reload receives a value per SIGHUP: serve re-reads poolflow.yaml then.
	Reload <-chan struct{}
	// Grace bounds how long a command other than serve and dags test (which stop their attempts
	// in order) may take to return once ctx ends; default 2s. Past it, Run returns an
	// interrupted error and main exits, so `timeout` or Ctrl-C always stops a command.
	Grace time.Duration
	// Stdin is what --password-stdin reads; nil = os.Stdin. Getenv reads the environment
	// ($POOLFLOW_TOKEN); nil = os.Getenv. For tests.
	Stdin  io.Reader
	Getenv func(string) string
}

// Interrupted is the cancellation cause main gives ctx when a signal arrives; Run exits with
// 128 plus its number, as a shell would report the signal.
type Interrupted struct{ Signal syscall.Signal }

func (i Interrupted) Error() string { return "interrupted by " + i.Signal.String() }

// RunOptions is Run with opts.
func RunOptions(ctx context.Context, args []string, stdout, stderr io.Writer, opts Options, goDAGs ...*dag.DAG) error {
	e := &env{goDAGs: goDAGs, stdout: stdout, stderr: stderr, reload: opts.Reload, getenv: opts.Getenv}
	if e.getenv == nil {
		e.getenv = os.Getenv
	}
	root := &cobra.Command{
		Use:           "poolflow",
		Short:         "poolflow runs DAGs of tasks whose slots come from several pools at once",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if opts.Stdin != nil {
		root.SetIn(opts.Stdin)
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &ExitError{Code: ExitUsage, Err: fmt.Errorf("%w\n%s", err, c.UsageString())}
	})
	pf := root.PersistentFlags()
	pf.StringVar(&e.configPath, "config", "", "poolflow.yaml (default $POOLFLOW_CONFIG, else ./poolflow.yaml if present)")
	pf.StringVar(&e.dagsDir, "dags", "", "DAGs folder (default ./dags)")
	pf.StringVar(&e.stateDir, "state", "", "state folder: database and logs (default state.path of the config, else ./state)")
	pf.StringVar(&e.storeFlag, "store", "", "store: postgres://… or sqlite:PATH (default $POOLFLOW_STORE_DSN, else store: of the config, else sqlite:<state>/poolflow.db)")
	root.AddCommand(e.serveCmd(), e.dagsCmd(), e.tasksCmd(), e.poolsCmd(), e.rulesCmd(), e.eventsCmd(), e.versionCmd(), e.storeCmd(),
		e.dbCmd(), e.usersCmd(), e.tokensCmd(), e.notifiersCmd())
	graceful := false
	if c, _, err := root.Find(args); err == nil {
		graceful = c.CommandPath() == "poolflow serve" || c.CommandPath() == "poolflow dags test"
	}
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		if graceful {
			err = <-done
			break
		}
		grace := opts.Grace
		if grace <= 0 {
			grace = 2 * time.Second
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case err = <-done:
		case <-t.C:
			return &ExitError{Code: interruptCode(ctx), Err: fmt.Errorf("%w; stopped", context.Cause(ctx))}
		}
	}
	if err != nil && !isExit(err) && isUsage(err) {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	if err != nil && ctx.Err() != nil && !isExit(err) {
		return &ExitError{Code: interruptCode(ctx), Err: err}
	}
	return err
}

// interruptCode is the exit code of a command stopped by ctx: 128 + the signal, else 130.
func interruptCode(ctx context.Context) int {
	var in Interrupted
	if errors.As(context.Cause(ctx), &in) {
		return 128 + int(in.Signal)
	}
	return 130
}

func isExit(err error) bool {
	var ee *ExitError
	return errors.As(err, &ee)
}

// isUsage recognizes cobra's argument and command errors.
func isUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "unknown flag", "unknown shorthand", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

func (e *env) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(e.stdout, "poolflow %s (schema %d)\n", Version, store.SchemaVersion())
			return nil
		},
	}
}

// settings loads poolflow.yaml: --config, else $POOLFLOW_CONFIG, else ./poolflow.yaml if present.
func (e *env) settings() (*config.Config, error) {
	path := e.configPath
	if path == "" {
		path = os.Getenv("POOLFLOW_CONFIG")
	}
	if path == "" {
		if _, err := os.Stat("poolflow.yaml"); err == nil {
			path = "poolflow.yaml"
		}
	}
	if path == "" {
		return config.Default(), nil
	}
	// Every problem of the file at once: fields, pools and the rules' expressions.
	return config.LoadChecked(path)
}

func (e *env) dags() string {
	if e.dagsDir != "" {
		return e.dagsDir
	}
	return "dags"
}

func (e *env) state(cfg *config.Config) string {
	switch {
	case e.stateDir != "":
		return e.stateDir
	case cfg != nil && cfg.StatePath != "":
		return cfg.StatePath
	}
	return "state"
}

// open loads poolflow.yaml and opens the store under the state folder.
func (e *env) open(ctx context.Context) (*config.Config, store.Store, string, error) {
	cfg, err := e.settings()
	if err != nil {
		return nil, nil, "", err
	}
	st, dir, err := e.openStore(ctx, cfg)
	return cfg, st, dir, err
}

// openStore opens the store (see storeTarget); the state folder holds the logs either way.
func (e *env) openStore(ctx context.Context, cfg *config.Config) (store.Store, string, error) {
	dir := e.state(cfg)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, dir, err
	}
	target, opts, err := e.storeTarget(cfg)
	if err != nil {
		return nil, dir, err
	}
	st, err := store.OpenTarget(ctx, target, opts)
	return st, dir, err
}

// storeTarget is the store the command uses: --store, else $POOLFLOW_STORE_DSN, else the
// config's store block, else sqlite:<state>/poolflow.db; with its options (synchronous applies
// to SQLite only).
func (e *env) storeTarget(cfg *config.Config) (store.Target, store.Options, error) {
	if cfg == nil {
		cfg = config.Default()
	}
	raw, from := e.storeFlag, "--store"
	if raw == "" {
		raw, from = os.Getenv("POOLFLOW_STORE_DSN"), "POOLFLOW_STORE_DSN"
	}
	if raw == "" {
		raw, from = cfg.StoreTarget(e.state(cfg)), "store"
		if cfg.File != "" {
			from = cfg.File + ": store"
		}
	}
	t, err := store.ParseTarget(raw)
	if err != nil {
		return t, store.Options{}, &ExitError{Code: ExitUsage, Err: fmt.Errorf("%s: %w", from, err)}
	}
	var opts store.Options
	if t.Driver == "sqlite" {
		opts.Synchronous = cfg.Synchronous
	}
	return t, opts, nil
}

// logger writes text lines to stderr at $POOLFLOW_LOG_LEVEL (debug, info, warn or error;
// default info). At debug, serve also logs every notice of its daemon (notices.go).
func (e *env) logger() *slog.Logger {
	level := slog.LevelInfo
	if v := os.Getenv("POOLFLOW_LOG_LEVEL"); v != "" {
		_ = level.UnmarshalText([]byte(v)) // an unknown word leaves info
	}
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
}
