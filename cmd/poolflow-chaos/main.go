// Command poolflow-chaos is poolflow's chaos harness (issue 9): several `poolflow serve`
// daemons and `poolflow dags test` processes on one store, DAGs with overlapping multi-pool
// requirements, random kill -9 and restarts, DAG files deleted and restored, pools shrunk and
// grown, task instances cleared and marked (over HTTP and the CLI, repair.go), for a bounded time; then a quiet period, and checks from the intervals the tasks
// really ran and from the store: no pool over capacity, no attempt running twice, every run
// final, no claim held and no orphan process after the lease bound. Every DAG also notifies a
// webhook the harness serves (on_success, on_failure, on_retry; notifications.go): after the
// quiet period every event of the outbox must be delivered and received at least once, and no
// occurrence may have been produced twice (two idempotency keys for one event of one run, task
// and try).
//
//	make chaos                        # 5 minutes, 3 daemons, a random seed
//	CHAOS_TIME=60s CHAOS_SEED=7 make chaos
//	go run ./cmd/poolflow-chaos -h
//
// It is black-box: it drives the poolflow binary and reads state through its HTTP API and CLI.
//
// When a task really ran: every task runs task.sh (project.go), which appends a start line
// (CLOCK_REALTIME, pid, the attempt's POOLFLOW_ tags, its requirements), a line per child it
// forks (the child writes its own, also in setsid mode) and an end line. The recorder tails that
// file and holds a pidfd per process (pidwatch.go): a process's life is known to lie between
// the last instant it was seen alive and the poll that saw it gone, a few ms apart. Violations
// are counted on what was certainly running; what cannot be ruled out is printed apart.
//
// Blind spots: overlaps shorter than the printed uncertainty window; over-admission within
// --admit-lag after a resize (judged against the larger capacity); processes of an attempt that
// write no line are seen only by the final orphan scan (the workload has none); Go tasks,
// sensors and approval gates are not in the workload; implicit limits (max_running,
// max_active_tasks), admission order and starvation are not checked; a clock step during a run
// skews every interval; pidfds and /proc see one host only.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type options struct {
	binary, store, dir   string
	daemons, tests       int
	chaos, lease, lag    time.Duration
	longTask, quietMax   time.Duration
	stall                time.Duration
	seed                 uint64
	keep, verbose, quiet bool
	rates                rates
	replay               []string // the flags that change the plan, for the replay line
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("poolflow-chaos", flag.ContinueOnError)
	fs.StringVar(&o.binary, "binary", "", "poolflow binary to test (default: go build ./cmd/poolflow into the run folder)")
	fs.StringVar(&o.store, "store", "", "store passed as --store to every poolflow process, e.g. a PostgreSQL DSN (empty: SQLite under the state folder; make chaos-pg starts a server)")
	fs.StringVar(&o.dir, "dir", "", "run folder: project, state, logs, record (default: a new temporary folder, kept)")
	fs.IntVar(&o.daemons, "daemons", envInt("CHAOS_DAEMONS", 3), "number of poolflow serve daemons ($CHAOS_DAEMONS)")
	fs.IntVar(&o.tests, "tests", 2, "number of dags test slots (concurrent dags test processes)")
	fs.DurationVar(&o.chaos, "time", envDuration("CHAOS_TIME", 5*time.Minute), "length of the chaos ($CHAOS_TIME)")
	fs.DurationVar(&o.lease, "lease", 30*time.Second, "poolflow's claim and owner lease: the quiet period waits past it")
	fs.DurationVar(&o.lag, "admit-lag", 5*time.Second, "bound on admission-to-process-start delay used around resizes")
	fs.DurationVar(&o.longTask, "long-task", 45*time.Second, "length of the slow DAG's task during the chaos, longer than a lease (0 = no slow DAG)")
	fs.DurationVar(&o.quietMax, "quiet-max", 5*time.Minute, "longest quiet period")
	fs.DurationVar(&o.stall, "stall", 0, "quiet period: give up waiting after this long without progress (default lease + 15s)")
	o.rates = defaultRates
	for _, f := range []struct {
		p    *time.Duration
		name string
		what string
	}{
		{&o.rates.kill, "kill-every", "kill -9s"}, {&o.rates.http, "trigger-every", "HTTP triggers of mix or solo"},
		{&o.rates.cli, "cli-every", "dags trigger commands"}, {&o.rates.test, "test-every", "dags test starts"},
		{&o.rates.del, "delete-every", "DAG file deletions"}, {&o.rates.resize, "resize-every", "pool resizes"},
		{&o.rates.slow, "slow-every", "HTTP triggers of the slow DAG"},
		{&o.rates.clear, "clear-every", "clears of task instances (tasks clear, clearTaskInstances)"},
		{&o.rates.mark, "mark-every", "marks of a task instance (tasks mark, PATCH taskInstances)"},
	} {
		fs.DurationVar(f.p, f.name, *f.p, "mean interval between "+f.what+" (0 = none)")
	}
	seed := fs.String("seed", os.Getenv("CHAOS_SEED"), "seed of the random choices ($CHAOS_SEED; default: from the clock)")
	fs.BoolVar(&o.keep, "keep", true, "keep the run folder")
	fs.BoolVar(&o.verbose, "v", false, "print every action as it happens")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "binary", "dir", "seed", "time", "daemons", "keep", "v":
		default:
			o.replay = append(o.replay, "-"+f.Name+"="+f.Value.String())
		}
	})
	if *seed == "" {
		o.seed = uint64(time.Now().UnixNano() % 1e9)
	} else {
		n, err := strconv.ParseUint(*seed, 10, 64)
		if err != nil {
			return o, fmt.Errorf("seed %q: %v", *seed, err)
		}
		o.seed = n
	}
	if o.stall == 0 {
		o.stall = o.lease + 15*time.Second
	}
	if o.daemons < 1 {
		return o, fmt.Errorf("--daemons must be at least 1")
	}
	return o, nil
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return d
	}
	return def
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	opt, err := parseFlags(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	h, err := setup(opt)
	if err != nil {
		fmt.Fprintln(os.Stderr, "poolflow-chaos:", err)
		if h != nil {
			h.cleanup()
		}
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h.chaos(ctx)
	h.settle(ctx)
	res := h.check()
	h.cleanup()
	h.report(res)
	if ctx.Err() != nil {
		fmt.Println("interrupted")
		return 2
	}
	if res.violations() > 0 {
		return 1
	}
	return 0
}

func setup(opt options) (*harness, error) {
	if opt.dir == "" {
		d, err := os.MkdirTemp("", "poolflow-chaos-")
		if err != nil {
			return nil, err
		}
		opt.dir = d
	}
	dir, err := filepath.Abs(opt.dir)
	if err != nil {
		return nil, err
	}
	opt.dir = dir
	if err := lockRunFolder(dir); err != nil {
		return nil, err
	}
	fmt.Printf("poolflow-chaos: seed %d, %d daemons, %d dags test slots, chaos %s, run folder %s\n",
		opt.seed, opt.daemons, opt.tests, opt.chaos, opt.dir)
	fmt.Printf("replay: go run ./cmd/poolflow-chaos -seed %d -time %s -daemons %d %s\n", opt.seed, opt.chaos, opt.daemons,
		strings.Join(opt.replay, " "))
	if len(opt.replay) == 0 {
		fmt.Printf("    or: CHAOS_SEED=%d CHAOS_TIME=%s CHAOS_DAEMONS=%d make chaos\n", opt.seed, opt.chaos, opt.daemons)
	}
	if opt.store != "" {
		fmt.Printf("store: %s (every daemon with a state folder of its own, as on its own host)\n", redact(opt.store))
	}
	if opt.binary != "" {
		// Processes run in the run folder: a relative path would not name the binary there.
		if opt.binary, err = filepath.Abs(opt.binary); err != nil {
			return nil, err
		}
	}
	if opt.binary == "" {
		opt.binary = filepath.Join(opt.dir, "poolflow")
		build := exec.Command("go", "build", "-o", opt.binary, "github.com/poolflow/poolflow/cmd/poolflow")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("build poolflow: %w", err)
		}
	}
	hook, err := newHookReceiver()
	if err != nil {
		return nil, err
	}
	p, err := newProject(opt.dir, time.Now(), opt.longTask, hook.url)
	if err != nil {
		hook.close()
		return nil, err
	}
	r, err := newRunner(opt.binary, opt.store, p, opt.daemons, opt.tests)
	if err != nil {
		return nil, err
	}
	h := &harness{opt: opt, p: p, r: r, rec: newRecorder(p.record), hook: hook, t0: time.Now(), counts: map[string]int{},
		capNow: map[string]int{}, deleted: map[string]bool{}}
	if h.log, err = os.Create(filepath.Join(opt.dir, "actions.log")); err != nil {
		return nil, err
	}
	r.onExit = h.exited
	// Pools first, so the DAGs that need them load.
	for _, pd := range poolDefs {
		h.resize(pd.name, pd.slots, true, "create pool "+pd.name)
		if h.capNow[pd.name] != pd.slots {
			return h, fmt.Errorf("could not create pool %s (see %s)", pd.name, h.log.Name())
		}
	}
	h.caps = nil // creation is not a resize: the timeline starts from here
	delete(h.counts, "pool resizes")
	for _, d := range p.defs {
		if err := p.writeDAG(d.id, true); err != nil {
			return h, err
		}
	}
	// dags list, not dags validate: validate without files ignores stored pools.
	out, errOut, err := r.cli(time.Minute, "dags", "list", "-o", "json")
	var listed struct {
		DAGs   []struct{} `json:"dags"`
		Errors []string   `json:"import_errors"`
	}
	if err == nil {
		err = json.Unmarshal([]byte(out), &listed)
	}
	if err != nil || len(listed.Errors) > 0 || len(listed.DAGs) != len(p.defs) {
		return h, fmt.Errorf("the chaos DAGs do not load: %v %v\n%s", err, listed.Errors, errOut)
	}
	if err := h.rec.start(); err != nil {
		return h, err
	}
	for i := range r.daemons {
		if _, err := r.startDaemon(i); err != nil {
			return h, err
		}
	}
	deadline := time.Now().Add(time.Minute)
	for i := range r.daemons {
		for r.readyDaemon(i) == "" {
			if time.Now().After(deadline) {
				return h, fmt.Errorf("daemon %s did not answer within a minute (see %s)", r.daemons[i].id, p.logs)
			}
			time.Sleep(100 * time.Millisecond) // another process: nothing to wait on
		}
	}
	return h, nil
}

// redact is a store DSN without its password, for the report.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	u.User = url.User(u.User.Username())
	return u.String()
}
