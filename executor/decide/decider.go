package decide

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/owners"
	"github.com/poolflow/poolflow/rules"
	"github.com/poolflow/poolflow/store"
)

// Config is what a Decider decides as.
type Config struct {
	DaemonID string
	Host     string        // this daemon's host: a dead owner on it is reaped before its takeover
	Lease    time.Duration // a claim's lease
	// Test, when set, makes the decider run only this one run (dags test): no schedules, no
	// other runs; pause and max_active_runs are ignored.
	Test *TestRun
	// TestSuffix ends the test run's id: several dags test processes may start in the same
	// millisecond.
	TestSuffix string
	// Notices: someone observes the passes' notices (metrics, tests); without, none are made.
	Notices bool
	// MapWindow bounds the waiting entries of a mapped task's instances (mapped.go); 0 =
	// DefaultMapWindow.
	MapWindow int
}

// TestRun describes the single run of `poolflow dags test`.
type TestRun struct {
	DAGID string
	Conf  map[string]any
}

// Decider makes a daemon's passes' decisions. It keeps, besides memory (St), what the
// scheduling itself remembers between passes: the configuration in force, the @reboot fires
// still to create, the cron fires dropped while the store was unavailable, the parsed
// schedules, the pool rules' assignments evaluated ahead of a pass, the test run.
type Decider struct {
	cfg Config
	St  *state.State

	Settings *config.Config
	Rules    *rules.Set // assigns the pool of a task that declares none (§6); nil = {default: 1}
	CfgGen   uint64     // the configuration generation in force

	// Reboot: @reboot runs still to create (or to drop with the §4.9 warning).
	Reboot  bool
	dropped map[string]time.Time // cron fires dropped while the store was unavailable (§4.9)
	// nodeFires are the every_node DAGs' checkpoints on this daemon: a daemon fires them from
	// its start, and no other daemon's fire stands for its own.
	nodeFires map[string]time.Time
	scheds    map[*dag.DAG]*schedule
	dags      *DAGs
	// versions are the numbers of the loaded DAGs' versions (§12), given at the last load that
	// recorded them (SyncDAGs).
	versions map[*dag.DAG]int

	ruleCache map[ruleKey]assignment
	// RuleMisses counts assignments evaluated during a decision rather than ahead of it.
	RuleMisses int

	// MinLease is the earliest lease end among this daemon's claims at the last pass.
	MinLease time.Time
	// passedAt is the clock of the last committed pass: the fires it saw (nextFire).
	passedAt time.Time
	// CommandsWait: a stored command waits for something of this daemon's own (a forced
	// deletion, for the attempts it stopped): every pass reads the pending commands until it
	// is done, since nothing outside will change to make the daemon read them.
	CommandsWait bool

	testRun  store.Run
	testDone bool

	// Notifications (deadlines.go): the runs whose deadline was told, the waiting entries whose
	// on_queue_wait was told (both memory only: after a load the store drops a second telling
	// by its key), when the waiting entries are looked at next, and the shortest
	// on_queue_wait.after of the DAGs queueWaitOf holds.
	toldDeadline map[int64]bool
	toldWait     map[int64]bool
	queueWaitAt  time.Time
	queueWaitOf  *DAGs
	queueWaitMin time.Duration
}

var timeZero time.Time

// New makes the decider of a daemon with memory st and the configuration it starts with.
func New(cfg Config, st *state.State, settings *config.Config, rs *rules.Set, gen uint64) *Decider {
	d := &Decider{cfg: cfg, St: st, Settings: settings, Rules: rs, CfgGen: gen, Reboot: cfg.Test == nil,
		dropped: map[string]time.Time{}, nodeFires: map[string]time.Time{}, scheds: map[*dag.DAG]*schedule{}, dags: &DAGs{},
		versions: map[*dag.DAG]int{}}
	st.MaxRunning = settings.MaxRunning
	st.Version = d.versionOf
	return d
}

// DAGs is a snapshot of the loaded DAGs.
type DAGs struct {
	List   []*dag.DAG
	ByID   map[string]*dag.DAG
	Errors map[string]string // import errors by file
}

// Get is the loaded DAG id, or nil.
func (g *DAGs) Get(id string) *dag.DAG {
	if g == nil {
		return nil
	}
	return g.ByID[id]
}

// SetDAGs takes a new snapshot of the loaded DAGs (the registry re-validated them); the parsed
// schedules of the old ones are dropped.
func (d *Decider) SetDAGs(g *DAGs) {
	d.dags = g
	d.scheds = map[*dag.DAG]*schedule{}
	d.St.DAG = g.Get
}

// DAG is the loaded DAG id, or nil.
func (d *Decider) DAG(id string) *dag.DAG { return d.dags.Get(id) }

// versionOf is the number of a loaded DAG's version (§12), 0 when it is not known (a DAG
// that is gone).
func (d *Decider) versionOf(g *dag.DAG) int { return d.versions[g] }

// Input is what one pass decides on: its time and events, and what the daemon read in its
// transaction, under the writers' lock.
type Input struct {
	Now    time.Time
	Epoch  int64 // this daemon's fencing epoch
	Events []any // *attempt.Started, *attempt.Ended, *Trigger, *Command

	// View is the owners' liveness, when the pass read the owners (nil: unchanged); Reaped the
	// epochs whose processes this daemon confirmed gone, per dead owner on this host; Reaping
	// those it is killing.
	View            *owners.View
	Reaped, Reaping map[string]int64
	TookOver        map[string]int64   // per dead owner, the epoch whose end this daemon handled
	Load            *state.Rows        // memory is loaded from these (nil: no load)
	Refresh         *state.Changes     // or refreshed from these (nil: no outside change)
	SyncDAGs        bool               // record the loaded DAGs and import errors (a load after they changed)
	VersionKeys     []store.VersionKey // with SyncDAGs: the stored versions, to number the loaded DAGs'
	DAGsChanged     bool               // the DAGs were validated again: open runs follow their new definitions
	DV, Seq         int64              // the store's change version and sequence this pass read at
	Claims          []store.Claim      // every claim, read in this pass
	Commands        []store.Command
	CommandsRead    bool                  // Commands are every pending command of this daemon's (read in this pass)
	CommandRuns     map[int64]*CommandRun // the runs commands name that memory does not hold
	TakenRunIDs     map[string]bool       // "dag\x00run" of the triggers' run ids that exist already
	TestRunEnded    *store.Run            // the test run, ended by another process
	Effective       *config.Effective
	EffectiveGen    uint64
	NextRunPK       int64 // the id the next inserted run gets (0: memory knows it)
	NextEntryID     int64 // the id the next inserted entry gets (0: memory knows it)
	NoWait          bool  // nothing but the events and the runs they end: a shutdown's last writes
	// Backfills are the open backfills with their next dates (§11); BackfillRuns the ended runs
	// at those dates that a backfill may clear, with their task instances.
	Backfills    []store.BackfillWork
	BackfillRuns map[int64]*CommandRun
}

// Plan is what one pass does.
type Plan struct {
	Now    time.Time
	Daemon string
	Epoch  int64
	// Ops are the store writes, in order.
	Ops []Op
	// After the commit: the attempts to start and stop, the replies to callers, the notices
	// and log lines, the kills of dead owners' processes on this host.
	Starts  []*attempt.Spec
	Kills   []Kill
	Replies []func()
	Notices []Notice
	Logs    []Log
	Reaps   []Reap
	// Ended are the runs that ended, Deleted those deleted (their logs go after the commit);
	// Rebooted says the @reboot fires were created.
	Ended    []*state.Run
	Deleted  []store.Run
	Rebooted bool
	// NodeFires are the every_node DAGs' checkpoints this pass advanced (Decider.nodeFires).
	NodeFires map[string]time.Time
	// Told is how many notifications the pass put in the outbox (the sender is woken).
	Told int
	// TestPK is the dags test run this pass created.
	TestPK int64
	// CommandsRead: the pass saw every pending command; CommandsWait: one of them (or a command
	// this pass stored) waits for something of this daemon's own to end.
	CommandsRead, CommandsWait bool
	// Walked is how many task instances the pass's advance looked at: the tasks taken off the
	// frontiers and the mapped instances their tasks looked at again. It is what a pass costs
	// in the size of its runs, and stays small when one attempt of a big run ended.
	Walked int
	// Again: pass again at once, with these events still to do (a takeover was planned; the
	// next pass loads memory after it). Wake: pass again at once (memory must read what this
	// pass wrote, or a queued run may start now).
	Again, Wake bool
}

// Kill stops an attempt this daemon runs.
type Kill struct {
	Entry  int64
	Reason string
}

// Reap kills a dead owner's processes on this host before its claims are released (§9).
type Reap struct {
	Owner string
	Epoch int64
	PGIDs []int
}

// Log is a log line to write once the pass committed.
type Log struct {
	Level slog.Level
	Msg   string
	Args  []any
}

// Log attribute keys, fixed in one place.
const (
	keyDAG   = "dag_id"
	keyRun   = "run_id"
	keyTask  = "task_id"
	keyTry   = "try_number"
	keyPool  = "pool"
	keyEntry = "queue_id"
)

func (p *Plan) add(op Op) { p.Ops = append(p.Ops, op) }

func (p *Plan) info(msg string, args ...any) { p.Logs = append(p.Logs, Log{slog.LevelInfo, msg, args}) }
func (p *Plan) warn(msg string, args ...any) { p.Logs = append(p.Logs, Log{slog.LevelWarn, msg, args}) }
func (p *Plan) errorf(msg string, args ...any) {
	p.Logs = append(p.Logs, Log{slog.LevelError, msg, args})
}

func (p *Plan) notify(n Notice) { p.Notices = append(p.Notices, n) }

func (p *Plan) reply(f func()) { p.Replies = append(p.Replies, f) }

// TestResult is the test run once it ended.
func (d *Decider) TestResult() (store.Run, bool) { return d.testRun, d.testDone }

// serve reports whether this is a serve daemon (not a dags test process).
func (d *Decider) serve() bool { return d.cfg.Test == nil }

// Decide makes one pass's plan (see the package comment). A pass that plans the takeover of a
// dead owner does only that (Again): the next pass loads memory after it.
func (d *Decider) Decide(in *Input) *Plan {
	p := &Plan{Now: in.Now, Daemon: d.cfg.DaemonID, Epoch: in.Epoch, CommandsRead: in.CommandsRead}
	ps := &pass{Decider: d, in: in, p: p, now: in.Now, st: d.St}
	if in.NoWait {
		// A shutdown's last writes: the ends of its attempts and the runs they end.
		ps.catchUp()
		ps.events()
		ps.endRuns()
		ps.flush()
		return p
	}
	if in.View != nil && ps.takeovers() {
		p.Again = true
		p.CommandsRead = false // this pass looked at no command
		d.St.Invalidate()
		return p
	}
	ps.catchUp()
	ps.applyConfig()
	ps.events()
	if in.DAGsChanged {
		ps.applyChanges()
	}
	ps.createRuns()
	ps.backfills()
	ps.retireRemoved()
	ps.deadlines()
	ps.advanceAll()
	ps.admit()
	ps.queueWaits()
	ps.settleTriggers()
	ps.endRuns()
	ps.flush()
	return p
}

// pass is one decision in the making.
type pass struct {
	*Decider
	in  *Input
	p   *Plan
	now time.Time
	st  *state.State

	started   []*state.Run // runs that went from queued to running in this pass
	triggers  []*pendingTrigger
	attempts  []*store.Attempt // the attempts that ended, written with them
	pgids     map[int64]int    // the process groups of attempts that started, by entry
	stops     []int64          // waiting entries of this daemon's runs that carry a stop request
	admitted  []*state.Entry
	deleted   map[int64]bool // runs deleted in this pass
	outbox    []*store.Notification
	mapReady  map[*state.TI]bool     // mapped instances made ready in this pass
	mapQueued map[*state.Mapping]int // of them, by mapped task: they take places in its window
	lineFrom  map[*state.TI]int      // mapped tasks whose line opened in this pass, at which index
}

// flush writes what the pass kept to write once: the attempts that ended, then the runs and
// task instances it changed.
func (ps *pass) flush() {
	runs, tis := ps.st.Flush()
	if len(ps.deleted) > 0 {
		// A run deleted in this pass once its last attempt ended, in the same pass: the end's
		// rows have nowhere to go.
		ps.attempts = slices.DeleteFunc(ps.attempts, func(a *store.Attempt) bool { return ps.deleted[a.Run] })
		runs = slices.DeleteFunc(runs, func(r *store.Run) bool { return ps.deleted[r.PK] })
		tis = slices.DeleteFunc(tis, func(ti *store.TaskInstance) bool { return ps.deleted[ti.Run] })
	}
	if len(ps.attempts) > 0 {
		ps.p.add(PutAttempts{ps.attempts})
	}
	if len(runs) > 0 {
		ps.p.add(PutRuns{runs})
	}
	if len(tis) > 0 {
		ps.p.add(PutTIs{tis})
	}
	if len(ps.outbox) > 0 {
		ps.p.add(Notify{ps.outbox})
		ps.p.Told = len(ps.outbox)
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func label(dagID, taskID string, try int) string { return state.Label(dagID, taskID, try) }

var _ = fmt.Sprintf
