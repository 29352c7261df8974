package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// attempt is one running try of a task.
type attempt struct {
	entry   int64
	dagID   string
	runID   string
	task    *dag.Task
	try     int
	logical time.Time
	params  map[string]any
	replay  bool
	logPath string
	tag     string // POOLFLOW_ATTEMPT

	mu       sync.Mutex
	pgid     int
	cancel   context.CancelFunc
	killedBy string // why the daemon stopped it, "" while it runs on its own
}

// LogPath is where an attempt's output goes: <state>/logs/<dag>/<run>/<task>/<try>.log.
func LogPath(stateDir, dagID, runID, taskID string, try int) string {
	clean := func(s string) string { return strings.ReplaceAll(s, string(filepath.Separator), "_") }
	return filepath.Join(stateDir, "logs", clean(dagID), clean(runID), clean(taskID), strconv.Itoa(try)+".log")
}

// spawn starts an admitted attempt in its own goroutine; its end comes back as an event.
func (l *loop) spawn(le *liveEntry) {
	run := le.run
	a := &attempt{entry: le.ID, dagID: run.DAGID, runID: run.RunID, task: le.ti.task, try: le.TryNumber,
		logical: run.LogicalDate, params: run.params, replay: le.Replay,
		logPath: LogPath(l.cfg.StateDir, run.DAGID, run.RunID, le.TaskID, le.TryNumber),
		tag:     strconv.Itoa(os.Getpid()) + "." + strconv.FormatInt(attemptSeq.Add(1), 10)}
	l.running[le.ID] = a
	l.attemptsWG.Add(1)
	go func() {
		defer l.attemptsWG.Done()
		ev := l.execute(a)
		l.post(ev)
	}()
}

// kill stops the attempt's process group with SIGKILL (or cancels its Go function) and records why.
func (a *attempt) kill(why string) { a.signal(why, syscall.SIGKILL) }

// terminate asks the attempt to stop: SIGTERM to its group (or cancel its Go function).
func (a *attempt) terminate(why string) { a.signal(why, syscall.SIGTERM) }

func (a *attempt) signal(why string, sig syscall.Signal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.killedBy == "" {
		a.killedBy = why
	}
	if a.pgid > 0 {
		_ = syscall.Kill(-a.pgid, sig)
	}
	if a.cancel != nil {
		a.cancel()
	}
}

func (a *attempt) stopReason() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.killedBy
}

// execute runs the attempt to its end and describes that end.
func (l *loop) execute(a *attempt) *evFinished {
	start := l.clock.Now()
	ev := &evFinished{entry: a.entry, start: start, a: a}
	logf := newAttemptLog(a.logPath, a.replay)
	defer logf.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.mu.Lock()
	a.cancel = cancel
	a.mu.Unlock()
	switch a.task.Kind {
	case dag.KindGo:
		l.post(&evStarted{entry: a.entry, start: start})
		ev.ok, ev.reason = runGo(ctx, a, logf)
	case dag.KindSensor:
		l.post(&evStarted{entry: a.entry, start: start})
		if a.task.Sensor.Mode == dag.ModeReschedule {
			l.pokeOnce(ctx, a, logf, ev)
		} else {
			l.poke(ctx, a, logf, ev)
		}
	default:
		ev.ok, ev.reason = l.runProcess(ctx, a, logf, l.argv(a))
	}
	ev.end = l.clock.Now()
	switch why := a.stopReason(); why {
	case "":
	case "shutdown":
		ev.shutdown = true
	case "lease lost":
		ev.lost = true
	default:
		ev.ok, ev.reason = false, why
	}
	return ev
}

func (l *loop) argv(a *attempt) []string {
	if a.task.Kind == dag.KindBash {
		return []string{"bash", "-c", a.task.Bash}
	}
	return a.task.Command
}

// attemptVars are the variables poolflow sets for an attempt. They win over the task's env and
// the daemon's own values are not passed on (a daemon started from a task has them): a child's
// getenv takes the first of duplicate entries, and os.StartProcess does not dedupe.
var attemptVars = map[string]bool{"POOLFLOW_DAG_ID": true, "POOLFLOW_RUN_ID": true, "POOLFLOW_TASK_ID": true,
	"POOLFLOW_TRY_NUMBER": true, "POOLFLOW_LOGICAL_DATE": true, "POOLFLOW_PARAMS": true, "POOLFLOW_PARAMS_FILE": true,
	envDaemonID: true, envEpoch: true, envStore: true, envAttempt: true}

// envKey is the name of a NAME=value entry.
func envKey(kv string) string {
	if i := strings.IndexByte(kv, '='); i > 0 {
		return kv[:i]
	}
	return kv
}

// env is the attempt's environment: the daemon's, the task's env over it, and the POOLFLOW_
// variables over both, each name once.
func (l *loop) env(a *attempt) []string {
	params := []byte("{}") // most attempts have no params: no encoder for them
	if len(a.params) > 0 {
		params, _ = json.Marshal(a.params)
	}
	base := l.baseEnv()
	env := make([]string, 0, len(base)+len(a.task.Env)+10)
	for _, kv := range base {
		if _, over := a.task.Env[envKey(kv)]; !over {
			env = append(env, kv)
		}
	}
	for k, v := range a.task.Env {
		if !attemptVars[k] {
			env = append(env, k+"="+v)
		}
	}
	return append(env,
		"POOLFLOW_DAG_ID="+a.dagID,
		"POOLFLOW_RUN_ID="+a.runID,
		"POOLFLOW_TASK_ID="+a.task.ID,
		"POOLFLOW_TRY_NUMBER="+strconv.Itoa(a.try),
		"POOLFLOW_LOGICAL_DATE="+a.logical.UTC().Format(time.RFC3339),
		l.paramsEnv(a, params), // POOLFLOW_PARAMS, or POOLFLOW_PARAMS_FILE when large (request.go)
		envDaemonID+"="+l.cfg.DaemonID,
		envEpoch+"="+strconv.FormatInt(l.epoch, 10),
		envStore+"="+l.st.Path(),
		envAttempt+"="+a.tag,
	)
}

// baseEnv is the daemon's environment without poolflow's attempt variables, read once: every
// attempt starts from it (§3.4).
func (l *loop) baseEnv() []string {
	l.envOnce.Do(func() { l.envBase = withoutAttemptVars(os.Environ()) })
	return l.envBase
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

// runProcess runs argv in its own session and process group with output to the log.
// execution_timeout sends SIGTERM to the group, then SIGKILL after the grace period (§3.4).
// When the leader exits, what is left of its group is killed, and so are the orphans that left
// the group but carry the attempt's tag (setsid'ed descendants): a finished attempt holds no
// processes, and it reports its end (so its claims are released) only once they are gone.
func (l *loop) runProcess(ctx context.Context, a *attempt, logf *attemptLog, argv []string) (bool, string) {
	if len(argv) == 0 {
		return false, "empty command"
	}
	// os.StartProcess rather than os/exec: exec.Cmd copies and dedupes the whole environment
	// and allocates its plumbing again for every attempt, for nothing used here.
	path, err := l.paths.lookup(argv[0])
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
	attr := &os.ProcAttr{Dir: a.task.Workdir, Env: l.env(a), Files: []*os.File{stdin, pw, pw},
		// Its own session: the attempt's processes are told from the daemon's by it (reaper.go).
		Sys: &syscall.SysProcAttr{Setsid: true}}
	var proc *os.Process
	err = startLeader(func() error {
		proc, err = os.StartProcess(path, argv, attr)
		return err
	}, func() int { return proc.Pid })
	pw.Close()
	if err != nil {
		pr.Close()
		fmt.Fprintf(logf, "poolflow: cannot start %q: %v\n", argv[0], err)
		return false, "start: " + err.Error()
	}
	pgid := proc.Pid
	l.wd.add(pgid)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		reported := false
		drain(logf, pr, func(err error) {
			if !reported {
				reported = true
				l.log.Warn("attempt log cannot be written; output is dropped until it can", keyDAG, a.dagID, keyRun, a.runID,
					keyTask, a.task.ID, keyTry, a.try, "err", err)
			}
		})
	}()
	defer func() {
		// The group is dead by now; a process that left it may still hold the pipe, so the
		// copy gets a bounded time to reach EOF.
		bound := time.NewTimer(l.cfg.KillGrace)
		select {
		case <-copied:
		case <-bound.C:
		}
		bound.Stop()
		pr.Close()
	}()
	a.mu.Lock()
	a.pgid = pgid
	killed := a.killedBy != ""
	a.mu.Unlock()
	if killed {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	l.post(&evStarted{entry: a.entry, pgid: pgid, start: l.clock.Now()})
	var timedOut bool
	var tmu sync.Mutex
	if to := a.task.ExecutionTimeout; to > 0 {
		t := time.AfterFunc(to, func() {
			tmu.Lock()
			timedOut = true
			tmu.Unlock()
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			time.AfterFunc(l.cfg.KillGrace, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		})
		defer t.Stop()
	}
	state, err := proc.Wait()
	leaderDone(pgid)
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	for limit := l.cfg.KillGrace; !sweepAttempt(a.tag, pgid, limit); limit = min(2*limit, time.Minute) {
		l.log.Warn("processes of an ended attempt survive SIGKILL; its claims stay held until they are gone",
			keyDAG, a.dagID, keyRun, a.runID, keyTask, a.task.ID, keyTry, a.try, "pgid", pgid)
	}
	l.wd.remove(pgid)
	tmu.Lock()
	defer tmu.Unlock()
	switch {
	case timedOut:
		fmt.Fprintf(logf, "poolflow: execution_timeout %s exceeded; process group terminated\n", a.task.ExecutionTimeout)
		return false, fmt.Sprintf("execution_timeout %s exceeded", a.task.ExecutionTimeout)
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

// runGo runs a Go task; a panic is a failed attempt with its stack in the log (§2.2).
func runGo(ctx context.Context, a *attempt, logf *attemptLog) (ok bool, reason string) {
	if to := a.task.ExecutionTimeout; to > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, to)
		defer cancel()
	}
	var mu sync.Mutex
	ti := &dag.TaskContext{DAGID: a.dagID, RunID: a.runID, TaskID: a.task.ID, TryNumber: a.try,
		LogicalDate: a.logical, Params: a.params,
		Log: func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(logf, format+"\n", args...)
		}}
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(logf, "panic: %v\n%s", r, debug.Stack())
			ok, reason = false, fmt.Sprintf("panic: %v", r)
		}
	}()
	if err := a.task.Func(ctx, ti); err != nil {
		fmt.Fprintf(logf, "error: %v\n", err)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return false, fmt.Sprintf("execution_timeout %s exceeded", a.task.ExecutionTimeout)
		}
		return false, err.Error()
	}
	return true, ""
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
