package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/poolflow/poolflow/dag"
)

// Environment variables the local executor adds to every attempt (§3.4). The daemon's id and
// epoch let a restarted daemon find attempt processes its previous life left behind.
const (
	envDaemonID = "POOLFLOW_DAEMON_ID"
	envEpoch    = "POOLFLOW_DAEMON_EPOCH"
	envStore    = "POOLFLOW_STORE"
)

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
		logPath: LogPath(l.cfg.StateDir, run.DAGID, run.RunID, le.TaskID, le.TryNumber)}
	l.running[le.ID] = a
	l.attemptsWG.Add(1)
	go func() {
		defer l.attemptsWG.Done()
		ev := l.execute(a)
		l.events <- ev
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
	ev := &evFinished{entry: a.entry, start: start}
	logf, err := newAttemptLog(a.logPath, a.replay)
	if err != nil {
		ev.end, ev.reason = l.clock.Now(), "open log: "+err.Error()
		return ev
	}
	defer logf.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.mu.Lock()
	a.cancel = cancel
	a.mu.Unlock()
	switch a.task.Kind {
	case dag.KindGo:
		l.events <- &evStarted{entry: a.entry, start: start}
		ev.ok, ev.reason = runGo(ctx, a, logf)
	case dag.KindSensor:
		l.events <- &evStarted{entry: a.entry, start: start}
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

// env is the attempt's environment: the daemon's, the task's env, and the POOLFLOW_ variables.
func (l *loop) env(a *attempt) []string {
	params, _ := json.Marshal(a.params)
	env := os.Environ()
	for k, v := range a.task.Env {
		env = append(env, k+"="+v)
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
	)
}

// runProcess runs argv in its own process group with output to the log. execution_timeout sends
// SIGTERM to the group, then SIGKILL after the grace period (§3.4). When the leader exits, what
// is left of its group is killed so a finished attempt holds no processes.
func (l *loop) runProcess(ctx context.Context, a *attempt, logf *attemptLog, argv []string) (bool, string) {
	if len(argv) == 0 {
		return false, "empty command"
	}
	cmd := l.paths.command(argv)
	cmd.Dir = a.task.Workdir
	cmd.Env = l.env(a)
	// Output goes through a pipe so the log file is created only when something is written.
	pr, pw, err := os.Pipe()
	if err != nil {
		return false, "pipe: " + err.Error()
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		fmt.Fprintf(logf, "poolflow: cannot start %q: %v\n", argv[0], err)
		return false, "start: " + err.Error()
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(logf, pr)
	}()
	defer func() {
		// The group is dead by now; a process that left it may still hold the pipe, so the
		// copy gets a bounded time to reach EOF.
		select {
		case <-copied:
		case <-time.After(l.cfg.KillGrace):
		}
		pr.Close()
	}()
	pgid := cmd.Process.Pid
	a.mu.Lock()
	a.pgid = pgid
	killed := a.killedBy != ""
	a.mu.Unlock()
	if killed {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	l.events <- &evStarted{entry: a.entry, pgid: pgid, start: l.clock.Now()}
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
	err = cmd.Wait()
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	tmu.Lock()
	defer tmu.Unlock()
	switch {
	case timedOut:
		fmt.Fprintf(logf, "poolflow: execution_timeout %s exceeded; process group terminated\n", a.task.ExecutionTimeout)
		return false, fmt.Sprintf("execution_timeout %s exceeded", a.task.ExecutionTimeout)
	case err == nil:
		return true, ""
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return false, "killed by signal " + ws.Signal().String()
		}
		return false, fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	return false, err.Error()
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
