package runner

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The watchdog ties every attempt's processes to the daemon's life (§9: a daemon killed with -9
// must not leave tasks running while another daemon hands their slots out again). Each daemon
// starts one watchdog, its own binary executed again, once, at start; a per-attempt supervisor
// would cost an exec of the whole binary (milliseconds) per attempt. The daemon holds the write
// end of a pipe whose read end is the watchdog's stdin and tells it each attempt group it starts
// and ends ("+<pgid>", "-<pgid>"), and each attempt cgroup before its leader starts in it and
// once it is removed ("+<path>", "-<path>"). When the pipe reaches end of file — the daemon
// exited, however it died — the watchdog kills every cgroup and group it was told about and
// every process carrying the daemon's environment tags (also the setsid'ed ones that left their
// group), then exits. The daemon starts a new watchdog if its watchdog dies.
//
// The watchdog is entered from this package's init, so it works for the poolflow binary, for
// programs built with poolflow.Main and for test binaries alike, before any of their own code.

const envWatchdog = "POOLFLOW_WATCHDOG" // "<daemon id>\x1f<epoch>\x1f<store path>"

func init() {
	if spec, ok := os.LookupEnv(envWatchdog); ok {
		os.Exit(watchdogMain(spec))
	}
}

// watchdogMain is the watchdog process: it ignores the signals a terminal sends its process
// group and acts only when the daemon's pipe closes.
func watchdogMain(spec string) int {
	parts := strings.Split(spec, "\x1f")
	if len(parts) != 3 {
		fmt.Fprintln(os.Stderr, "poolflow watchdog: bad", envWatchdog)
		return 2
	}
	id, store := parts[0], parts[2]
	epoch, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return 2
	}
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	groups, cgroups := map[int]bool{}, map[string]bool{}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 2 || (line[0] != '+' && line[0] != '-') {
			continue
		}
		if dir := line[1:]; dir[0] == '/' {
			if line[0] == '+' {
				cgroups[dir] = true
			} else {
				delete(cgroups, dir)
			}
			continue
		}
		pgid, err := strconv.Atoi(line[1:])
		if err != nil || pgid <= 1 {
			continue
		}
		switch line[0] {
		case '+':
			groups[pgid] = true
		case '-':
			delete(groups, pgid)
		}
	}
	// The daemon is gone (or stopping): nothing of this epoch may keep running. Its attempt
	// cgroups first: that reaches every process of them, also those that left no trace.
	if len(cgroups) > 0 {
		dirs := make([]string, 0, len(cgroups))
		for dir := range cgroups {
			dirs = append(dirs, dir)
		}
		killCgroupDirs(dirs, 10*time.Second)
	}
	for round := 0; round < 50; round++ {
		kill := Tagged(id, store, func(e int64) bool { return e == epoch })
		for pgid := range groups {
			if OwnedGroup(pgid, id, store) {
				kill[pgid] = true
			}
		}
		groups = map[int]bool{}
		if len(kill) == 0 {
			return 0
		}
		KillGroups(kill, time.Second)
	}
	return 1
}

// watchdog is the daemon's side of its watchdog process.
type watchdog struct {
	spec string
	log  func(msg string, args ...any)

	mu     sync.Mutex
	w      *os.File
	cmd    *exec.Cmd
	groups map[string]bool // the attempt groups (pgids) and cgroups (paths) it was told about
	closed bool
	exited chan struct{}
}

func startWatchdog(id string, epoch int64, storePath string, log func(string, ...any)) (*watchdog, error) {
	wd := &watchdog{spec: id + "\x1f" + strconv.FormatInt(epoch, 10) + "\x1f" + storePath, log: log, groups: map[string]bool{}}
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if err := wd.spawn(); err != nil {
		return nil, err
	}
	return wd, nil
}

// spawn starts the watchdog process; mu is held.
func (wd *watchdog) spawn() error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("watchdog: %w", err)
	}
	cmd := exec.Command("/proc/self/exe")
	// A race-detector build sleeps a second at exit by default; the daemon's Stop waits for it.
	cmd.Env = append(os.Environ(), envWatchdog+"="+wd.spec, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	cmd.Stdin, cmd.Stderr = r, os.Stderr
	// Its own group: a Ctrl-C (or a kill) aimed at the daemon's group must not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return fmt.Errorf("watchdog: %w", err)
	}
	r.Close()
	wd.w, wd.cmd = w, cmd
	exited := make(chan struct{})
	wd.exited = exited
	for g := range wd.groups {
		fmt.Fprintf(w, "+%s\n", g)
	}
	go func() {
		_ = cmd.Wait()
		close(exited)
		wd.mu.Lock()
		defer wd.mu.Unlock()
		if wd.closed || wd.cmd != cmd {
			return
		}
		wd.log("watchdog exited; starting a new one", "pid", cmd.Process.Pid)
		wd.w.Close()
		if err := wd.spawn(); err != nil {
			wd.log("cannot restart the watchdog: attempts would outlive a crash of this daemon", "err", err)
			wd.cmd = nil
		}
	}()
	return nil
}

func (wd *watchdog) send(op byte, g string) {
	if wd == nil {
		return
	}
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if op == '+' {
		wd.groups[g] = true
	} else {
		delete(wd.groups, g)
	}
	if wd.cmd == nil || wd.closed {
		return
	}
	// A write to a pipe whose reader died fails (SIGPIPE is not raised for it in Go); the
	// restart resends the whole set.
	_, _ = fmt.Fprintf(wd.w, "%c%s\n", op, g)
}

// add tells the watchdog about a new attempt group (its pgid in decimal) or cgroup (its path);
// remove, about one confirmed gone.
func (wd *watchdog) add(g string)    { wd.send('+', g) }
func (wd *watchdog) remove(g string) { wd.send('-', g) }

// close ends the watchdog: it sweeps once (finding nothing after a clean shutdown) and exits.
func (wd *watchdog) close() {
	if wd == nil {
		return
	}
	wd.mu.Lock()
	wd.closed = true
	w, exited := wd.w, wd.exited
	wd.mu.Unlock()
	if w != nil {
		w.Close()
	}
	if exited != nil {
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
		}
	}
}
