package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/decide"
	"github.com/poolflow/poolflow/notify"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Config configures a Daemon. Zero values take the defaults named on each field.
type Config struct {
	Store    store.Store
	Settings *config.Config // poolflow.yaml; nil = config.Default()
	DAGsDir  string         // "" = no YAML DAGs
	GoDAGs   []*dag.DAG     // DAGs registered from Go
	StateDir string         // logs go under StateDir/logs
	Logger   *slog.Logger   // nil = slog.Default()
	Clock    Clock          // nil = RealClock
	// DaemonID identifies this daemon across restarts, so a restarted daemon finds the claims
	// and process groups of its previous life. "" = derived from the host name and state dir.
	DaemonID string
	// API is the base URL of this daemon's HTTP API as the other daemons reach it
	// (http://host:port; serve --advertise). It goes in the owner row, so that any daemon can
	// read the logs of the attempts this one ran. "" = none (dags test, a daemon without API).
	API string

	Lease         time.Duration // claim lease; default 30s
	RenewEvery    time.Duration // lease renewal period; default 10s
	KillGrace     time.Duration // SIGTERM→SIGKILL on execution_timeout; default 10s
	ShutdownGrace time.Duration // SIGTERM→SIGKILL on shutdown; default 30s
	PollEvery     time.Duration // how often outside writes and DAG files are checked; default 50ms
	// PruneEvery is how often retention (poolflow.yaml's retention:) deletes history past its
	// age; default 1 min. A dags test process never does.
	PruneEvery time.Duration
	// NotifyPoll is how often the notifications outbox is looked at when no pass of this
	// daemon woke its sender (other daemons' events, retries, lapsed leases); default 1 s.
	NotifyPoll time.Duration
	// NotifyOptions reach the notifiers (a test SMTP server's TLS configuration).
	NotifyOptions notify.Options
	// NotifySettled, when set, hears each try of a notification this daemon sent: its notifier
	// and what became of it (metrics).
	NotifySettled func(notifier string, state vocab.DeliveryState)
	// MapWindow bounds the waiting queue entries of a mapped task's instances (§14): the rest
	// wait in its line, queued as places free; 0 = decide.DefaultMapWindow (tests make it
	// small to see the line move).
	MapWindow int

	// Notify, when set, is called on the loop goroutine after each committed pass with what it
	// did (attempts ended, runs ended, admissions). It must not block.
	Notify func(Notice)

	// Test, when set, makes the daemon run only this one run (dags test): no schedules, no other
	// runs; pause and max_active_runs are ignored.
	Test *TestRun
}

func (c *Config) fill() error {
	if c.Store == nil {
		return errors.New("executor: Config.Store is required")
	}
	if c.Settings == nil {
		c.Settings = config.Default()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = RealClock
	}
	if c.DaemonID == "" {
		host, _ := os.Hostname()
		c.DaemonID = host + ":" + c.StateDir
	}
	if c.StateDir == "" {
		c.StateDir = "state"
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.Lease, 30*time.Second)
	def(&c.RenewEvery, 10*time.Second)
	def(&c.KillGrace, 10*time.Second)
	def(&c.ShutdownGrace, 30*time.Second)
	def(&c.PollEvery, 50*time.Millisecond)
	return nil
}

// Daemon is the scheduler loop and its runners. Start launches it; Stop ends it.
type Daemon struct {
	cfg  Config
	loop *loop

	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
	err     error
}

// New validates cfg and builds a daemon; nothing runs until Start.
func New(cfg Config) (*Daemon, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	l, err := newLoop(&cfg)
	if err != nil {
		return nil, err
	}
	return &Daemon{cfg: cfg, loop: l, done: make(chan struct{})}, nil
}

// ID is the daemon's id.
func (d *Daemon) ID() string { return d.cfg.DaemonID }

// Start recovers what a previous life of this daemon left behind, then launches the loop and
// returns. It fails when the store cannot be read.
func (d *Daemon) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started {
		return errors.New("executor: daemon already started")
	}
	if err := d.loop.start(ctx); err != nil {
		return fmt.Errorf("start daemon: %w", err)
	}
	d.started = true
	d.loop.turned.Store(time.Now().UnixNano()) // started: its first turn follows (LoopTurned)
	ctx, d.cancel = context.WithCancel(context.WithoutCancel(ctx))
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		// DAG files are parsed here, off the loop; a test run reads them once.
		if d.cfg.Test == nil {
			// File notifications wake it at once; every 10 polls it also stats poolflow.yaml
			// (watch.go), so a change is re-validated well within a second.
			d.loop.reg.watch(ctx, 10*d.cfg.PollEvery, d.loop.wake)
		}
	}()
	if d.cfg.Test == nil {
		d.loop.pruner.Start(ctx)
		d.loop.sender.Start(ctx) //nolint:errcheck // it never fails
	}
	go func() {
		defer close(d.done)
		d.err = d.loop.run(ctx)
		d.cancel()
		<-watched
		d.loop.pruner.Stop()
		d.loop.sender.Stop()
	}()
	return nil
}

// StartWait is Start for a daemon that must come up however long the store is busy or
// unavailable (§3.5: @reboot is deferred until then): it retries every few seconds, logging the
// reason each time (and telling waiting, if set), until Start succeeds, ctx ends, or the error
// cannot pass by waiting (an owner id held by a live process, a configuration error).
func (d *Daemon) StartWait(ctx context.Context, every time.Duration, waiting func(error)) error {
	if every <= 0 {
		every = 3 * time.Second
	}
	for {
		err := d.Start(ctx)
		if err == nil || !errors.Is(err, store.ErrUnavailable) {
			return err
		}
		if waiting != nil {
			waiting(err)
		}
		d.cfg.Logger.Warn("the store is not available yet; waiting to start", "err", err, "retry_in", every.String())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}

// Stop stops admitting, terminates running attempts (SIGTERM, then SIGKILL after the shutdown
// grace), puts their entries back in the queue with the same try number, and waits for the loop.
// It is bounded: a Go task that ignores its cancellation is abandoned a second after the
// shutdown grace. It is safe to call twice.
func (d *Daemon) Stop() error {
	d.mu.Lock()
	started := d.started
	cancel := d.cancel
	d.mu.Unlock()
	if !started {
		return nil
	}
	cancel()
	<-d.done
	return d.err
}

// Err is why the loop ended on its own (another process took this daemon's id), once Done is
// closed; nil after Stop or a finished test run.
func (d *Daemon) Err() error {
	select {
	case <-d.done:
		return d.err
	default:
		return nil
	}
}

// Done is closed when the loop has ended (after Stop, or when a test run finished).
func (d *Daemon) Done() <-chan struct{} { return d.done }

// TestRunResult is the outcome of a test run, once Done is closed.
func (d *Daemon) TestRunResult() (store.Run, bool) { return d.loop.testResult() }

// Trigger starts a manual run and answers after the run's first pass.
func (d *Daemon) Trigger(ctx context.Context, req TriggerRequest) (TriggerResult, error) {
	if err := checkTrigger(req); err != nil {
		return TriggerResult{}, err
	}
	reply := make(chan decide.TriggerReply, 1)
	if err := d.loop.send(ctx, &decide.Trigger{Req: req, Reply: reply}); err != nil {
		return TriggerResult{}, err
	}
	select {
	case r := <-reply:
		return r.Res, r.Err
	case <-ctx.Done():
		return TriggerResult{}, ctx.Err()
	case <-d.done:
		return TriggerResult{}, errors.New("daemon stopped")
	}
}

// Command applies an operator command (cancel, force, fail, approve, reject) through the loop.
func (d *Daemon) Command(ctx context.Context, c store.Command) error {
	reply := make(chan error, 1)
	if err := d.loop.send(ctx, &decide.Command{Cmd: c, Reply: reply}); err != nil {
		return err
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-d.done:
		return errors.New("daemon stopped")
	}
}

// DAGs returns the loaded DAGs and the import errors of the broken files. Before Start, it
// loads them (Start then uses what it loaded).
func (d *Daemon) DAGs() ([]*dag.DAG, []*dag.ImportError) {
	d.loop.reg.ensure()
	return d.loop.reg.snapshot()
}

// Wake asks the loop for a pass (after an outside write it should notice at once).
func (d *Daemon) Wake() { d.loop.wake() }
