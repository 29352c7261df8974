package config

import (
	"fmt"
	"os"
	"time"

	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/rules"
)

// DefaultMaxRunning is max_running when the file does not set it.
const DefaultMaxRunning = 32

// Config is one parsed poolflow.yaml with defaults applied.
type Config struct {
	File       string // path it was read from; "" when defaults only
	StatePath  string // state.path; "" = not set (the CLI default ./state applies)
	MaxRunning int    // default 32; 0 = none
	// Pools are resolved (pools.Resolve): in file order, with the default pool appended when
	// the file does not define it.
	Pools    []pools.Spec
	Rules    []RuleSpec
	APIToken string // api.token; POOLFLOW_API_TOKEN overrides
	// Auth is auth: whether the server refuses to start without a user or a token, and what a
	// caller without credentials may do once authentication is on (§15).
	Auth Auth
	// Synchronous is store.synchronous: SyncFull (the default, "" means it too) or SyncNormal.
	Synchronous string
	// StoreDriver is store.driver: DriverSQLite (the default, "" means it too) or
	// DriverPostgres. StoreDSN is store.dsn: the PostgreSQL connection string, or the SQLite
	// file ("" = <state>/poolflow.db). See Config.StoreTarget.
	StoreDriver, StoreDSN string
	// AllowedHosts (server.allowed_hosts) are the host names, optionally with a port, the HTTP
	// server answers besides loopback names when it listens on loopback (DNS rebinding guard).
	AllowedHosts []string
	// Retention is retention: how long history is kept (§12); it applies live.
	Retention Retention
	// Notifiers are notifiers: where handlers send their events (§13), in file order; their
	// secrets were read from the environment or files when the file was read.
	Notifiers []Notifier
	// Delivery is notifications: how they are sent (§13).
	Delivery Delivery
	// BaseURL (server.base_url) is the UI's address in notifications' links; "" = the
	// address serve listens on.
	BaseURL string
	// Backfill is backfill: the bounds of a backfill (§11); it applies live.
	Backfill Backfill
}

// Backfill bounds backfills (§11): MaxRuns is the most dates one backfill may take (0: the
// default, DefaultBackfillMaxRuns); a longer range is refused, naming the bound.
type Backfill struct {
	MaxRuns int
}

// DefaultBackfillMaxRuns is the default bound on one backfill's dates.
const DefaultBackfillMaxRuns = 10_000

// MaxRunsOrDefault is the bound in force.
func (b Backfill) MaxRunsOrDefault() int {
	if b.MaxRuns > 0 {
		return b.MaxRuns
	}
	return DefaultBackfillMaxRuns
}

// Retention is how long the daemon keeps history (§12); 0 keeps it for good, the default. An
// ended run older than Runs goes with its task instances, attempts, entries and logs (never
// an open run, one with a live attempt, or the last run of a DAG); the log files of a run that
// ended before Logs go while its rows stay; audit events older than Events go.
type Retention struct {
	Runs, Logs, Events time.Duration
}

// Any reports whether anything is pruned.
func (r Retention) Any() bool { return r.Runs > 0 || r.Logs > 0 || r.Events > 0 }

// store.synchronous values. full: no acknowledged write is lost, even on power loss (one fsync
// per commit). normal: a crash of the process loses nothing either, but a power loss or an OS
// crash may lose the last commits (SQLite's WAL is synced at checkpoints only); the database
// stays consistent.
const (
	SyncFull   = "full"
	SyncNormal = "normal"
)

// RuleSpec is one raw pool rule (§6), compiled by package rules.
type RuleSpec = rules.Spec

// Default is the configuration used without a poolflow.yaml: max_running 32 and the default
// pool with 128 slots.
func Default() *Config {
	c, errs := build(&Config{MaxRunning: DefaultMaxRunning}, nil, &reader{})
	if len(errs) > 0 {
		panic(fmt.Sprintf("config: defaults do not resolve: %v", errs[0])) // a bug, not input
	}
	return c
}

// Load reads and parses the file at path. A missing file is an error that matches
// fs.ErrNotExist, so a caller with an optional default path can fall back to Default.
func Load(path string) (*Config, error) {
	return LoadWith(path, Options{})
}

// LoadWith is Load with opts.
func LoadWith(path string, opts Options) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return ParseWith(path, data, opts)
}

// Pool returns the resolved pool spec named name.
func (c *Config) Pool(name string) (pools.Spec, bool) {
	for _, s := range c.Pools {
		if s.Name == name {
			return s, true
		}
	}
	return pools.Spec{}, false
}
