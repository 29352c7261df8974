package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/internal/procfs"
)

// Environment variables the local executor adds to every attempt (§3.4). The daemon's id and
// epoch let a restarted daemon find attempt processes its previous life left behind.
// POOLFLOW_ATTEMPT is unique per attempt in this process: the orphans of an ended attempt are
// found by it.
const (
	envDaemonID = "POOLFLOW_DAEMON_ID"
	envEpoch    = "POOLFLOW_DAEMON_EPOCH"
	envStore    = "POOLFLOW_STORE"
	envAttempt  = "POOLFLOW_ATTEMPT"
)

// attemptSeq numbers attempts in this process for their POOLFLOW_ATTEMPT tag.
var attemptSeq atomic.Int64

// Clock is the runner's source of time (the daemon's, a fake one in tests).
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// Config configures a Runner.
type Config struct {
	StateDir  string // logs go under StateDir/logs
	DaemonID  string // tagged on every attempt's environment, with the store and the epoch
	StorePath string
	KillGrace time.Duration // SIGTERM→SIGKILL on execution_timeout
	Clock     Clock
	Logger    *slog.Logger
	// Post receives each attempt's attempt.Started and attempt.Ended, on the attempt's
	// goroutine; it must not block for long.
	Post func(ev any)
}

// Runner runs the attempts a pass admitted: a command or a bash script as a process group of
// its own (in a cgroup of its own where cgroup v2 is writable, cgroup.go), a Go function, a
// sensor's pokes. It reports each start and end through Config.Post and knows nothing of the
// scheduler: what it runs comes in an immutable attempt.Spec.
type Runner struct {
	cfg   Config
	epoch atomic.Int64
	paths pathCache // where PATH lookups found commands
	owner string    // names the daemon in its attempts' cgroups (ownerHash)

	envOnce sync.Once // envBase: the daemon's environment, read once for every attempt
	envBase []string

	mu      sync.Mutex
	running map[int64]*attemptRun // by entry
	wd      *watchdog
	wg      sync.WaitGroup

	cgroups    *cgroupHost // set by Begin where attempts run in cgroups
	cgroupsErr error       // why they do not
	groupsOnly bool        // tests: process groups even where cgroups are writable
}

// attemptRun is one running try of a task.
type attemptRun struct {
	spec    *attempt.Spec
	logPath string
	tag     string // POOLFLOW_ATTEMPT

	mu       sync.Mutex
	pgid     int
	cg       *attemptCgroup // nil in process-group mode
	cancel   context.CancelFunc
	killedBy string // why the daemon stopped it, "" while it runs on its own
}

// New makes a runner; Begin starts its watchdog.
func New(cfg Config) *Runner {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Runner{cfg: cfg, owner: ownerHash(cfg.DaemonID, cfg.StorePath), running: map[int64]*attemptRun{}}
}

// LogPath is where an attempt's output goes: <state>/logs/<dag>/<run>/<task>/<try>.log.
func LogPath(stateDir, dagID, runID, taskID string, try int) string {
	return filepath.Join(RunLogDir(stateDir, dagID, runID), cleanPath(taskID), strconv.Itoa(try)+".log")
}

// RunLogDir is the folder of a run's logs on this host: <state>/logs/<dag>/<run>.
func RunLogDir(stateDir, dagID, runID string) string {
	return filepath.Join(stateDir, "logs", cleanPath(dagID), cleanPath(runID))
}

func cleanPath(s string) string { return strings.ReplaceAll(s, string(filepath.Separator), "_") }

// LogName is the name of a DAG's or a run's folder under the logs folder (RunLogDir).
func LogName(id string) string { return cleanPath(id) }

// Begin makes this process the subreaper of the attempts' orphans, runs the attempts in cgroups
// where cgroup v2 is writable (Isolation says which), and starts the watchdog that kills the
// attempts of this epoch if the process dies (§9). Without a watchdog the runner still runs
// attempts: the error says why they would outlive a crash.
func (r *Runner) Begin(epoch int64) error {
	r.epoch.Store(epoch)
	becomeSubreaper()
	if !r.groupsOnly {
		// Before the watchdog starts: this process moves into its leaf, and the watchdog is
		// born there.
		h, err := hostCgroups()
		r.mu.Lock()
		r.cgroups, r.cgroupsErr = h, err
		r.mu.Unlock()
	}
	wd, err := startWatchdog(r.cfg.DaemonID, epoch, r.cfg.StorePath, r.cfg.Logger.Warn)
	r.mu.Lock()
	r.wd = wd
	r.mu.Unlock()
	return err
}

// Isolation says how this runner's attempts are held, for the daemon's start-up line: in
// cgroups (under which one) or in process groups (and why).
func (r *Runner) Isolation() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.cgroups != nil:
		return "attempts run in cgroups under " + r.cgroups.base
	case r.cgroupsErr != nil:
		return "attempts run in process groups (cgroup v2 not writable: " + r.cgroupsErr.Error() + ")"
	}
	return "attempts run in process groups"
}

func (r *Runner) cgroupHost() *cgroupHost {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cgroups
}

// SetEpoch tags the attempts started from now on with epoch (a daemon that continues under a
// new epoch after its lease lapsed).
func (r *Runner) SetEpoch(epoch int64) { r.epoch.Store(epoch) }

// Close ends the watchdog: it sweeps once (finding nothing after a clean shutdown) and exits.
func (r *Runner) Close() {
	r.mu.Lock()
	wd := r.wd
	r.wd = nil
	r.mu.Unlock()
	wd.close()
}

// Start runs an attempt in its own goroutine; its start and end come back through Post.
func (r *Runner) Start(spec *attempt.Spec) {
	a := &attemptRun{spec: spec, logPath: LogPath(r.cfg.StateDir, spec.DAGID, spec.RunID, spec.Task.ID, spec.Try),
		tag: strconv.Itoa(os.Getpid()) + "." + strconv.FormatInt(attemptSeq.Add(1), 10)}
	r.mu.Lock()
	r.running[spec.Entry] = a
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		ev := r.execute(a)
		r.mu.Lock()
		if r.running[spec.Entry] == a {
			delete(r.running, spec.Entry)
		}
		r.mu.Unlock()
		r.cfg.Post(ev)
	}()
}

// Kill stops the attempt of entry with SIGKILL to its group (or cancels its Go function) and
// records why; its end then says so. It reports whether the attempt was running.
func (r *Runner) Kill(entry int64, why string) bool { return r.signal(entry, why, syscall.SIGKILL) }

// Terminate asks the attempt of entry to stop: SIGTERM to its group (or cancel its Go function).
func (r *Runner) Terminate(entry int64, why string) bool {
	return r.signal(entry, why, syscall.SIGTERM)
}

func (r *Runner) signal(entry int64, why string, sig syscall.Signal) bool {
	r.mu.Lock()
	a := r.running[entry]
	r.mu.Unlock()
	if a == nil {
		return false
	}
	a.signal(why, sig)
	return true
}

// Running lists the entries whose attempts run now.
func (r *Runner) Running() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]int64, 0, len(r.running))
	for id := range r.running {
		out = append(out, id)
	}
	return out
}

// Stopping reports why the attempt of entry was told to stop ("" when it was not, or it is
// not running).
func (r *Runner) Stopping(entry int64) string {
	r.mu.Lock()
	a := r.running[entry]
	r.mu.Unlock()
	if a == nil {
		return ""
	}
	return a.stopReason()
}

// Wait waits for every attempt goroutine to end.
func (r *Runner) Wait() { r.wg.Wait() }

// SweepOrphans kills what this daemon's attempts left running outside their groups (setsid'ed
// descendants), as a shutdown does once the attempts ended; it reports whether any was alive.
func (r *Runner) SweepOrphans() bool { return sweepOnce(r.ownAttempt, true) }

// ownAttempt matches the processes of this daemon's attempts, by their environment tags.
func (r *Runner) ownAttempt(pid int, _ procfs.Stat) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	env := append(append([]byte{0}, b...), 0)
	return bytes.Contains(env, []byte("\x00"+envDaemonID+"="+r.cfg.DaemonID+"\x00")) &&
		bytes.Contains(env, []byte("\x00"+envStore+"="+r.cfg.StorePath+"\x00"))
}

func (a *attemptRun) signal(why string, sig syscall.Signal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.killedBy == "" {
		a.killedBy = why
	}
	a.sendLocked(sig)
	if a.cancel != nil {
		a.cancel()
	}
}

// send signals the attempt's processes: its group, and in a cgroup every process of it
// (SIGKILL by cgroup.kill).
func (a *attemptRun) send(sig syscall.Signal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sendLocked(sig)
}

func (a *attemptRun) sendLocked(sig syscall.Signal) {
	if a.pgid > 0 {
		_ = syscall.Kill(-a.pgid, sig)
	}
	switch {
	case a.cg == nil:
	case sig == syscall.SIGKILL:
		a.cg.kill()
	default:
		a.cg.signal(sig)
	}
}

func (a *attemptRun) stopReason() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.killedBy
}

// execute runs the attempt to its end and describes that end.
func (r *Runner) execute(a *attemptRun) *attempt.Ended {
	start := r.cfg.Clock.Now()
	ev := &attempt.Ended{Entry: a.spec.Entry, Start: start, Spec: a.spec}
	logf := newAttemptLog(a.logPath, a.spec.Replay)
	defer logf.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.mu.Lock()
	a.cancel = cancel
	a.mu.Unlock()
	switch kind := a.spec.Task.Kind; {
	case a.spec.Fail != "":
		r.cfg.Post(&attempt.Started{Entry: a.spec.Entry, Start: start})
		fmt.Fprintf(logf, "poolflow: %s\n", a.spec.Fail)
		ev.Reason = a.spec.Fail
	case kind == dag.KindGo:
		r.cfg.Post(&attempt.Started{Entry: a.spec.Entry, Start: start})
		ev.OK, ev.Reason, ev.Output = runGo(ctx, a, logf)
	case kind == dag.KindSensor:
		r.cfg.Post(&attempt.Started{Entry: a.spec.Entry, Start: start})
		if a.spec.Task.Sensor.Mode == dag.ModeReschedule {
			r.pokeOnce(ctx, a, logf, ev)
		} else {
			r.poke(ctx, a, logf, ev)
		}
	default:
		out := outputPath(a.logPath)
		// A try's file is its own: what an earlier try (or the run before a replay) left is
		// not this one's output.
		if err := os.Remove(out); err != nil && !errors.Is(err, os.ErrNotExist) {
			ev.Reason = "cannot remove the previous output file: " + err.Error()
			break
		}
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			ev.Reason = "cannot make the attempt's folder: " + err.Error()
			break
		}
		ev.OK, ev.Reason = r.runProcess(ctx, a, logf, argv(a.spec.Task))
		if ev.OK { // a failed try's output is not published
			var err error
			if ev.Output, err = readOutput(out); err != nil {
				fmt.Fprintf(logf, "poolflow: %v\n", err)
				ev.OK, ev.Reason = false, err.Error()
			}
		}
	}
	ev.End = r.cfg.Clock.Now()
	switch why := a.stopReason(); why {
	case "":
	case StopShutdown:
		ev.Shutdown = true
	case StopLeaseLost:
		ev.Lost = true
	default:
		ev.OK, ev.Reason = false, why
	}
	return ev
}

// StopShutdown and StopLeaseLost are the stop reasons that put an attempt's entry back in the
// queue with the same try number instead of failing it.
const (
	StopShutdown  = "shutdown"
	StopLeaseLost = "lease lost"
)

func argv(t *dag.Task) []string {
	if t.Kind == dag.KindBash {
		return []string{"bash", "-c", t.Bash}
	}
	return t.Command
}

// attemptVars are the variables poolflow sets for an attempt. They win over the task's env and
// the daemon's own values are not passed on (a daemon started from a task has them): a child's
// getenv takes the first of duplicate entries, and os.StartProcess does not dedupe.
var attemptVars = map[string]bool{"POOLFLOW_DAG_ID": true, "POOLFLOW_RUN_ID": true, "POOLFLOW_TASK_ID": true,
	"POOLFLOW_TRY_NUMBER": true, "POOLFLOW_LOGICAL_DATE": true, "POOLFLOW_PARAMS": true, "POOLFLOW_PARAMS_FILE": true,
	envOutput: true, "POOLFLOW_MAP_INDEX": true, "POOLFLOW_ITEM": true, envDaemonID: true, envEpoch: true, envStore: true, envAttempt: true}

// envKey is the name of a NAME=value entry.
func envKey(kv string) string {
	if i := strings.IndexByte(kv, '='); i > 0 {
		return kv[:i]
	}
	return kv
}

// env is the attempt's environment: the daemon's, the task's env over it, and the POOLFLOW_
// variables over both, each name once.
func (r *Runner) env(a *attemptRun) []string {
	sp := a.spec
	params := []byte("{}") // most attempts have no params: no encoder for them
	if len(sp.Params) > 0 {
		params, _ = json.Marshal(sp.Params)
	}
	base := r.baseEnv()
	env := make([]string, 0, len(base)+len(sp.Task.Env)+10)
	for _, kv := range base {
		if _, over := sp.Task.Env[envKey(kv)]; !over {
			env = append(env, kv)
		}
	}
	for k, v := range sp.Task.Env {
		if !attemptVars[k] {
			env = append(env, k+"="+v)
		}
	}
	if sp.Mapped { // a mapped instance (§14): its index, and its item as JSON
		item, _ := json.Marshal(sp.Item)
		env = append(env, "POOLFLOW_MAP_INDEX="+strconv.Itoa(sp.MapIndex), "POOLFLOW_ITEM="+string(item))
	}
	return append(env,
		"POOLFLOW_DAG_ID="+sp.DAGID,
		"POOLFLOW_RUN_ID="+sp.RunID,
		"POOLFLOW_TASK_ID="+sp.Task.ID,
		"POOLFLOW_TRY_NUMBER="+strconv.Itoa(sp.Try),
		"POOLFLOW_LOGICAL_DATE="+sp.Logical.UTC().Format(time.RFC3339),
		r.paramsEnv(a, params), // POOLFLOW_PARAMS, or POOLFLOW_PARAMS_FILE when large
		envOutput+"="+outputPath(a.logPath),
		envDaemonID+"="+r.cfg.DaemonID,
		envEpoch+"="+strconv.FormatInt(r.epoch.Load(), 10),
		envStore+"="+r.cfg.StorePath,
		envAttempt+"="+a.tag,
	)
}

// baseEnv is the daemon's environment without poolflow's attempt variables, read once: every
// attempt starts from it (§3.4).
func (r *Runner) baseEnv() []string {
	r.envOnce.Do(func() { r.envBase = withoutAttemptVars(os.Environ()) })
	return r.envBase
}

func withoutAttemptVars(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if !attemptVars[envKey(kv)] {
			out = append(out, kv)
		}
	}
	return out
}

// runProcess runs argv in its own session and process group with output to the log, and in a
// cgroup of its own where cgroups are writable. execution_timeout sends SIGTERM to the group
// (to every process of the cgroup), then SIGKILL after the grace period (§3.4). When the leader
// exits, the cgroup is killed and emptied, what is left of its group is killed, and so are the
// orphans that left the group but carry the attempt's tag (setsid'ed descendants, the only way
// to find them without a cgroup): a finished attempt holds no processes, and it reports its end
// (so its claims are released) only once they are gone.
func (r *Runner) runProcess(ctx context.Context, a *attemptRun, logf *attemptLog, argv []string) (bool, string) {
	if len(argv) == 0 {
		return false, "empty command"
	}
	// os.StartProcess rather than os/exec: exec.Cmd copies and dedupes the whole environment
	// and allocates its plumbing again for every attempt, for nothing used here.
	path, err := r.paths.lookup(argv[0])
	if err != nil {
		fmt.Fprintf(logf, "poolflow: cannot start %q: %v\n", argv[0], err)
		return false, "start: " + err.Error()
	}
	stdin := devNull() // opened once, not again for every attempt
	if stdin == nil {
		if stdin, err = os.Open(os.DevNull); err != nil {
			return false, "open " + os.DevNull + ": " + err.Error()
		}
		defer stdin.Close()
	}
	// Output goes through a pipe so the log file is created only when something is written.
	pr, pw, err := os.Pipe()
	if err != nil {
		return false, "pipe: " + err.Error()
	}
	attr := &os.ProcAttr{Dir: a.spec.Task.Workdir, Env: r.env(a), Files: []*os.File{stdin, pw, pw},
		// Its own session: the attempt's processes are told from the daemon's by it (reaper.go).
		Sys: &syscall.SysProcAttr{Setsid: true}}
	cg := r.attemptCgroup(a)
	if cg != nil {
		// clone3 starts the leader inside its cgroup; the watchdog knows the cgroup before.
		attr.Sys.UseCgroupFD, attr.Sys.CgroupFD = true, cg.fd
		r.watchdog().add(cg.dir)
	}
	var proc *os.Process
	err = startLeader(func() error {
		proc, err = os.StartProcess(path, argv, attr)
		return err
	}, func() int { return proc.Pid })
	pw.Close()
	if cg != nil {
		cg.closeFD()
	}
	if err != nil {
		pr.Close()
		if cg != nil {
			_ = cg.remove()
			r.watchdog().remove(cg.dir)
		}
		fmt.Fprintf(logf, "poolflow: cannot start %q: %v\n", argv[0], err)
		return false, "start: " + err.Error()
	}
	pgid := proc.Pid
	r.watchdog().add(strconv.Itoa(pgid))
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		reported := false
		drain(logf, pr, func(err error) {
			if !reported {
				reported = true
				r.cfg.Logger.Warn("attempt log cannot be written; output is dropped until it can", a.logAttrs("err", err)...)
			}
		})
	}()
	defer func() {
		// The group is dead by now; a process that left it may still hold the pipe, so the
		// copy gets a bounded time to reach EOF.
		bound := time.NewTimer(r.cfg.KillGrace)
		select {
		case <-copied:
		case <-bound.C:
		}
		bound.Stop()
		pr.Close()
	}()
	a.mu.Lock()
	a.pgid, a.cg = pgid, cg
	if a.killedBy != "" {
		a.sendLocked(syscall.SIGKILL)
	}
	a.mu.Unlock()
	r.cfg.Post(&attempt.Started{Entry: a.spec.Entry, PGID: pgid, Start: r.cfg.Clock.Now()})
	var timedOut bool
	var tmu sync.Mutex
	if to := a.spec.Task.ExecutionTimeout; to > 0 {
		t := time.AfterFunc(to, func() {
			tmu.Lock()
			timedOut = true
			tmu.Unlock()
			a.send(syscall.SIGTERM)
			time.AfterFunc(r.cfg.KillGrace, func() { a.send(syscall.SIGKILL) })
		})
		defer t.Stop()
	}
	state, err := proc.Wait()
	leaderDone(pgid)
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	if cg != nil && cg.populated() { // usually not: the leader was its last process
		cg.kill()
		for limit := r.cfg.KillGrace; !cg.wait(limit); limit = min(2*limit, time.Minute) {
			r.cfg.Logger.Warn("processes of an ended attempt survive cgroup.kill; its claims stay held until they are gone",
				a.logAttrs("cgroup", cg.dir)...)
		}
	}
	// Also in a cgroup: it reaps the zombies of the attempt's orphans (the daemon is their
	// subreaper), and kills a tagged process that moved itself to another cgroup.
	for limit := r.cfg.KillGrace; !sweepAttempt(a.tag, pgid, limit); limit = min(2*limit, time.Minute) {
		r.cfg.Logger.Warn("processes of an ended attempt survive SIGKILL; its claims stay held until they are gone",
			a.logAttrs("pgid", pgid)...)
	}
	if cg != nil {
		if err := cg.remove(); err != nil {
			r.cfg.Logger.Warn("the cgroup of an ended attempt cannot be removed", a.logAttrs("err", err)...)
		}
		r.watchdog().remove(cg.dir)
	}
	r.watchdog().remove(strconv.Itoa(pgid))
	tmu.Lock()
	defer tmu.Unlock()
	switch {
	case timedOut:
		fmt.Fprintf(logf, "poolflow: execution_timeout %s exceeded; process group terminated\n", a.spec.Task.ExecutionTimeout)
		return false, fmt.Sprintf("execution_timeout %s exceeded", a.spec.Task.ExecutionTimeout)
	case err != nil:
		return false, err.Error()
	case state.Success():
		return true, ""
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return false, "killed by signal " + ws.Signal().String()
	}
	return false, fmt.Sprintf("exit status %d", state.ExitCode())
}

// attemptCgroup makes the cgroup of the attempt's next process, or nil in process-group mode.
// If it cannot be made (the hierarchy changed under the daemon, a limit on descendants), the
// attempt runs in its process group only, with a warning.
func (r *Runner) attemptCgroup(a *attemptRun) *attemptCgroup {
	h := r.cgroupHost()
	if h == nil {
		return nil
	}
	cg, err := h.create(cgroupName(r.owner, r.epoch.Load(), a.tag))
	if err != nil {
		r.cfg.Logger.Warn("cannot make the attempt's cgroup; it runs in its process group only", a.logAttrs("err", err)...)
		return nil
	}
	return cg
}

// runGo runs a Go task; a panic is a failed attempt with its stack in the log (§2.2).
func runGo(ctx context.Context, a *attemptRun, logf *attemptLog) (ok bool, reason, output string) {
	sp := a.spec
	if to := sp.Task.ExecutionTimeout; to > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, to)
		defer cancel()
	}
	var mu sync.Mutex
	ti := &dag.TaskContext{DAGID: sp.DAGID, RunID: sp.RunID, TaskID: sp.Task.ID, TryNumber: sp.Try,
		LogicalDate: sp.Logical, Params: sp.Params, Item: sp.Item, MapIndex: mapIndex(sp),
		Log: func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(logf, format+"\n", args...)
		}}
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(logf, "panic: %v\n%s", r, debug.Stack())
			ok, reason, output = false, fmt.Sprintf("panic: %v", r), ""
		}
	}()
	if err := sp.Task.Func(ctx, ti); err != nil {
		fmt.Fprintf(logf, "error: %v\n", err)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return false, fmt.Sprintf("execution_timeout %s exceeded", sp.Task.ExecutionTimeout), ""
		}
		return false, err.Error(), ""
	}
	out, err := goOutput(ti.Output)
	if err != nil {
		fmt.Fprintf(logf, "poolflow: %v\n", err)
		return false, err.Error(), ""
	}
	return true, "", out
}

// devNull is /dev/null opened once for reading, the stdin of every attempt; nil if it cannot be
// opened (os/exec then opens it itself).
var devNull = sync.OnceValue(func() *os.File {
	f, err := os.Open(os.DevNull)
	if err != nil {
		return nil
	}
	return f
})

// watchdog is the runner's watchdog (nil without one: its methods accept that).
func (r *Runner) watchdog() *watchdog {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wd
}

// logAttrs names the attempt in a log line, then args.
func (a *attemptRun) logAttrs(args ...any) []any {
	sp := a.spec
	return append([]any{"dag_id", sp.DAGID, "run_id", sp.RunID, "task_id", sp.Task.ID, "try_number", sp.Try}, args...)
}

// mapIndex is a Go task's TaskContext.MapIndex: its instance's, -1 for a task that is not mapped.
func mapIndex(sp *attempt.Spec) int {
	if sp.Mapped {
		return sp.MapIndex
	}
	return -1
}
