package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/poolflow/poolflow/internal/testwait"
)

// serveProc is one `poolflow serve` process of a test, its stderr kept for assertions.
type serveProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	logs   *logBuf
	addr   chan string
	base   string
	exited chan struct{}
	err    error
}

// logBuf collects a process's log lines from the reading goroutine. Serve processes log at
// debug level (POOLFLOW_LOG_LEVEL): a line for every notice of their daemon, one after every
// pass it commits ("msg=notice kind=pass"), and one for every failed pass; the tests wait on
// those lines.
type logBuf struct {
	testwait.Log // the lines: String, and Wait for a text
	mu           sync.Mutex
	subs         map[chan struct{}]bool // told of every line
}

func (b *logBuf) add(line string) {
	_, _ = b.Log.Write([]byte(line + "\n"))
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// subscribe has ch told (without blocking) of every line added until the returned function is
// called.
func (b *logBuf) subscribe(ch chan struct{}) func() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs == nil {
		b.subs = map[chan struct{}]bool{}
	}
	b.subs[ch] = true
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.subs, ch)
	}
}

// until checks cond, and again each time one of the processes whose logs are given logs a line
// (each pass of a serve daemon logs one), until it holds; it fails the test after limit. For
// what a daemon changes in the store or the API and says no more of than that it passed. What
// changes without a pass (the registry's status of a refused poolflow.yaml, logged just before
// it is set) is seen at the latest at the next lease renewal's pass, every 10 s.
func until(t *testing.T, limit time.Duration, what string, cond func() bool, logs ...*logBuf) {
	t.Helper()
	ch := make(chan struct{}, 1)
	for _, l := range logs {
		defer l.subscribe(ch)()
	}
	timeout := time.After(limit)
	for !cond() {
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

var passAtRE = regexp.MustCompile(`msg=notice kind=pass at=(\S+)`)

// passedSince reports whether the process logged a committed pass that began at or after at:
// one that read whatever was committed before at.
func (b *logBuf) passedSince(at time.Time) bool {
	for _, m := range passAtRE.FindAllStringSubmatch(b.String(), -1) {
		if t, err := time.Parse(time.RFC3339Nano, m[1]); err == nil && !t.Before(at) {
			return true
		}
	}
	return false
}

// waitPassSince waits until the daemon committed a pass that began at or after at.
func (b *logBuf) waitPassSince(t *testing.T, at time.Time, limit time.Duration) {
	t.Helper()
	until(t, limit, "a pass after "+at.Format(time.RFC3339Nano), func() bool { return b.passedSince(at) }, b)
}

// waitNotice waits until one of the daemons logs a notice of kind about run dagID runID (at
// debug level: "msg=notice kind=admitted dag_id=… run_id=… task_id=…").
func waitNotice(t *testing.T, limit time.Duration, kind, dagID, runID string, logs ...*logBuf) {
	t.Helper()
	line := fmt.Sprintf("msg=notice kind=%s dag_id=%s run_id=%s ", kind, dagID, runID)
	until(t, limit, line, func() bool {
		for _, l := range logs {
			if strings.Contains(l.String(), line) {
				return true
			}
		}
		return false
	}, logs...)
}

var runEndedRE = regexp.MustCompile(`msg="run ended" dag_id=(\S+) run_id=(\S+) state=(\S+)`)

// runEnded waits until one of the daemons logs the end of run dagID runID and returns its
// state.
func runEnded(t *testing.T, limit time.Duration, dagID, runID string, logs ...*logBuf) string {
	t.Helper()
	state := ""
	until(t, limit, "run "+runID+" of "+dagID+" to end", func() bool {
		for _, l := range logs {
			for _, m := range runEndedRE.FindAllStringSubmatch(l.String(), -1) {
				if m[1] == dagID && m[2] == runID {
					state = m[3]
					return true
				}
			}
		}
		return false
	}, logs...)
	return state
}

// waitLine waits until a line containing s was logged, woken by each new line, and reports
// whether one was within limit.
func (b *logBuf) waitLine(s string, limit time.Duration) bool { return b.Wait(s, limit) }

func (b *logBuf) count(s string) int { return strings.Count(b.String(), s) }

var servingRE = regexp.MustCompile(`msg="poolflow serving" listen=(http://\S+)`)

var listenRE = regexp.MustCompile(`listen=(http://\S+)`)

// startServe starts `poolflow serve` (of bin, poolflow when "") on a free port with args and
// returns at once; the process is killed when the test ends if it still runs.
func (p *project) startServe(t *testing.T, bin string, args ...string) *serveProc {
	t.Helper()
	if bin == "" {
		bin = binary
	}
	all := append([]string{"--config", p.config, "--dags", p.dags, "--state", p.state, "serve", "--listen", "127.0.0.1:0"}, args...)
	c := exec.Command(bin, all...)
	c.Dir = p.dir
	c.Env = append(os.Environ(), "POOLFLOW_LOG_LEVEL=debug")
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &serveProc{t: t, cmd: c, logs: &logBuf{}, addr: make(chan string, 1), exited: make(chan struct{})}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			s.logs.add(sc.Text())
			if m := servingRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case s.addr <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		s.err = c.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		if !s.done() {
			_ = c.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("serve %v log:\n%s", args, s.logs.String())
		}
	})
	return s
}

// serve starts `poolflow serve` and waits until it serves.
func (p *project) serve(t *testing.T, args ...string) *serveProc {
	t.Helper()
	s := p.startServe(t, "", args...)
	s.waitServing(30 * time.Second)
	return s
}

// waitServing waits until the daemon started and the API serves.
func (s *serveProc) waitServing(limit time.Duration) {
	s.t.Helper()
	select {
	case s.base = <-s.addr:
	case <-s.exited:
		s.t.Fatalf("serve exited before serving (%v):\n%s", s.err, s.logs.String())
	case <-time.After(limit):
		s.t.Fatalf("serve did not start serving:\n%s", s.logs.String())
	}
}

func (s *serveProc) done() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

func (s *serveProc) pid() int { return s.cmd.Process.Pid }

// kill ends the process with SIGKILL, as a crash would.
func (s *serveProc) kill() {
	s.t.Helper()
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// stop sends SIGTERM and waits up to limit for the process to exit.
func (s *serveProc) stop(limit time.Duration) {
	s.t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(limit):
		s.t.Fatalf("serve did not exit within %v of SIGTERM:\n%s", limit, s.logs.String())
	}
}

// post sends a POST with a JSON body to the serve API and returns status and body.
func (s *serveProc) post(path, body string) (int, string) {
	s.t.Helper()
	resp, err := http.Post(s.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		s.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// trigger starts a manual run through this daemon's API, so this daemon owns it.
func (s *serveProc) trigger(dagID, runID string) {
	s.t.Helper()
	status, body := s.post("/api/v1/dags/"+dagID+"/dagRuns", fmt.Sprintf(`{"dag_run_id": %q}`, runID))
	if status != http.StatusOK && status != http.StatusAccepted {
		s.t.Fatalf("trigger %s: %d %s", dagID, status, body)
	}
}
