package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// child is one poolflow process the harness started.
type child struct {
	name    string
	daemon  *daemon // nil for a dags test process
	cmd     *exec.Cmd
	pid     int
	log     string
	done    chan struct{}
	mu      sync.Mutex
	started time.Time
	ended   time.Time
	killed  bool // the harness sent SIGKILL
	stopped bool // the harness sent SIGTERM
	err     error
}

func (c *child) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

func (c *child) byHarness() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.killed || c.stopped
}

// daemon is one `poolflow serve` with a stable id and port across its lives.
type daemon struct {
	idx   int
	id    string
	addr  string
	lives int
	cur   *child // nil while down
	ready bool   // its API answered since this life started
}

// runner starts, kills and stops poolflow processes. Every process gets the same --config,
// --dags and --state (one SQLite file), plus --store when one is given (a PostgreSQL DSN, say).
// With --store each daemon gets a state folder of its own (its logs), as a daemon on another
// host would.
type runner struct {
	bin, store string
	p          *project
	env        []string
	http       *http.Client
	onExit     func(*child, *daemon)

	mu      sync.Mutex
	daemons []*daemon
	tests   []*child // dags test slots; nil = free
	all     []*child
}

func newRunner(bin, store string, p *project, daemons, slots int) (*runner, error) {
	r := &runner{bin: bin, store: store, p: p, http: &http.Client{Timeout: 15 * time.Second}, tests: make([]*child, slots)}
	for _, kv := range os.Environ() {
		// Tasks inherit the daemon's environment: a token or a daemon id from the caller's
		// shell would change what the harness measures.
		if !strings.HasPrefix(kv, "POOLFLOW_") {
			r.env = append(r.env, kv)
		}
	}
	// CHAOS_DIR tags every process of this harness run, attempts included (they inherit it),
	// so that orphans are found without matching another run's processes.
	r.env = append(r.env, "CHAOS_DIR="+p.dir)
	for i := 0; i < daemons; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		addr := ln.Addr().String()
		ln.Close()
		r.daemons = append(r.daemons, &daemon{idx: i, id: fmt.Sprintf("chaos-d%d", i), addr: addr})
	}
	return r, nil
}

// args is the global flags every poolflow command gets, then the command's own.
func (r *runner) args(state string, extra ...string) []string {
	a := []string{"--config", r.p.config, "--dags", r.p.dags, "--state", state}
	if r.store != "" {
		a = append(a, "--store", r.store)
	}
	return append(a, extra...)
}

// spawn starts a poolflow process in its own process group (so a Ctrl-C of the harness reaches
// only the harness, which then stops everything in order), output to a log file.
func (r *runner) spawn(name, state string, d *daemon, args ...string) (*child, error) {
	logPath := filepath.Join(r.p.logs, fmt.Sprintf("%s.%s.log", name, time.Now().Format("150405.000")))
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(r.bin, r.args(state, args...)...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = r.p.dir, r.env, lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, err
	}
	c := &child{name: name, daemon: d, cmd: cmd, pid: cmd.Process.Pid, log: logPath, done: make(chan struct{}),
		started: time.Now()}
	r.mu.Lock()
	r.all = append(r.all, c)
	r.mu.Unlock()
	go func() {
		err := cmd.Wait()
		lf.Close()
		c.mu.Lock()
		c.err, c.ended = err, time.Now()
		c.mu.Unlock()
		close(c.done)
		if r.onExit != nil {
			r.onExit(c, c.daemon)
		}
	}()
	return c, nil
}

// startDaemon starts daemon i unless it runs; it is ready once its API answers.
func (r *runner) startDaemon(i int) (*child, error) {
	d := r.daemons[i]
	r.mu.Lock()
	if d.cur != nil && d.cur.alive() {
		r.mu.Unlock()
		return nil, nil
	}
	r.mu.Unlock()
	state := r.p.state
	if r.store != "" {
		state = filepath.Join(r.p.dir, "state-"+d.id)
	}
	c, err := r.spawn(d.id, state, d, "serve", "--daemon-id", d.id, "--listen", d.addr)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	d.cur, d.ready = c, false
	d.lives++
	r.mu.Unlock()
	go func() {
		for c.alive() {
			if resp, err := r.http.Get("http://" + d.addr + "/api/v1/health"); err == nil {
				resp.Body.Close()
				r.mu.Lock()
				if d.cur == c {
					d.ready = true
				}
				r.mu.Unlock()
				return
			}
			time.Sleep(100 * time.Millisecond) // the daemon is another process: nothing to wait on
		}
	}()
	return c, nil
}

// readyDaemon returns daemon i's address when its current life answers, else "".
func (r *runner) readyDaemon(i int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.daemons[i]
	if d.cur != nil && d.cur.alive() && d.ready {
		return d.addr
	}
	return ""
}

// anyReady returns the address of a daemon whose API answers, trying i first.
func (r *runner) anyReady(i int) string {
	for k := 0; k < len(r.daemons); k++ {
		if a := r.readyDaemon((i + k) % len(r.daemons)); a != "" {
			return a
		}
	}
	return ""
}

// kill sends SIGKILL to c's process (not its group: the attempts it started live on, as after
// a real crash). It reports false when c had already ended.
func (r *runner) kill(c *child) bool {
	if c == nil || !c.alive() {
		return false
	}
	c.mu.Lock()
	c.killed = true
	c.mu.Unlock()
	return c.cmd.Process.Signal(syscall.SIGKILL) == nil
}

// startTest runs `dags test` in slot i unless the slot is busy.
func (r *runner) startTest(i int, dagID string) (*child, error) {
	r.mu.Lock()
	busy := r.tests[i] != nil && r.tests[i].alive()
	r.mu.Unlock()
	if busy {
		return nil, nil
	}
	c, err := r.spawn(fmt.Sprintf("test%d", i), r.p.state, nil, "dags", "test", dagID, "-o", "json")
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.tests[i] = c
	r.mu.Unlock()
	return c, nil
}

// cli runs a short poolflow command to its end.
func (r *runner) cli(timeout time.Duration, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.bin, r.args(r.p.state, args...)...)
	cmd.Dir, cmd.Env = r.p.dir, r.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %s", timeout)
	}
	return out.String(), errb.String(), err
}

// stopAll asks every live process to stop (SIGTERM: daemons shut down in order), then kills
// what is left after grace.
func (r *runner) stopAll(grace time.Duration) {
	r.mu.Lock()
	all := append([]*child(nil), r.all...)
	r.mu.Unlock()
	for _, c := range all {
		if c.alive() {
			c.mu.Lock()
			c.stopped = true
			c.mu.Unlock()
			_ = c.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	deadline := time.After(grace)
	for _, c := range all {
		select {
		case <-c.done:
		case <-deadline:
			for _, c := range all {
				if c.alive() {
					_ = c.cmd.Process.Signal(syscall.SIGKILL)
					<-c.done
				}
			}
			return
		}
	}
}

// exitCode is a finished child's exit code; -1 when a signal ended it.
func exitCode(c *child) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ee *exec.ExitError
	if c.err == nil {
		return 0
	}
	if errors.As(c.err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// tailOf is the last n lines of a log file.
func tailOf(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
