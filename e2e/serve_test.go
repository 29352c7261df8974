package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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

// logBuf collects a process's log lines from the reading goroutine.
type logBuf struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	grew chan struct{} // closed when a line is added (then replaced)
}

func (b *logBuf) add(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(line)
	b.buf.WriteByte('\n')
	if b.grew != nil {
		close(b.grew)
		b.grew = nil
	}
}

// waitLine waits until a line containing s was logged, woken by each new line, and reports
// whether one was within limit.
func (b *logBuf) waitLine(s string, limit time.Duration) bool {
	timeout := time.After(limit)
	for {
		b.mu.Lock()
		found := strings.Contains(b.buf.String(), s)
		if b.grew == nil {
			b.grew = make(chan struct{})
		}
		grew := b.grew
		b.mu.Unlock()
		if found {
			return true
		}
		select {
		case <-grew:
		case <-timeout:
			return false
		}
	}
}

func (b *logBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// count counts the lines containing s.
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
