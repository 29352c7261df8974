// Package e2e holds end-to-end tests that run the real poolflow binary as separate processes:
// crash recovery after kill -9, and several daemons sharing one database file.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/internal/testwait"
	"github.com/poolflow/poolflow/store"
)

// binary is poolflow built with -race; stubborn is poolflow with a Go DAG whose task ignores
// its context (testdata/stubborn).
var binary, stubborn string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "poolflow-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary, stubborn = filepath.Join(dir, "poolflow"), filepath.Join(dir, "stubborn")
	// One build for both: they share every package but main.
	build := exec.Command("go", "build", "-race", "-o", dir+"/", "github.com/poolflow/poolflow/cmd/poolflow",
		"github.com/poolflow/poolflow/e2e/testdata/stubborn")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build poolflow:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// project is a temporary poolflow project: config, DAGs folder and state folder.
type project struct {
	dir, config, dags, state string
}

func newProject(t *testing.T, cfg string, dags map[string]string) *project {
	t.Helper()
	dir := t.TempDir()
	p := &project{dir: dir, config: filepath.Join(dir, "poolflow.yaml"), dags: filepath.Join(dir, "dags"),
		state: filepath.Join(dir, "state")}
	if err := os.MkdirAll(p.dags, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, body := range dags {
		if err := os.WriteFile(filepath.Join(p.dags, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// initStore creates and migrates the project's database, as a daemon's first start does (reads
// never create it).
func (p *project) initStore(t *testing.T) {
	t.Helper()
	if err := os.MkdirAll(p.state, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), filepath.Join(p.state, "poolflow.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
}

// cmd builds a poolflow command for the project.
func (p *project) cmd(args ...string) *exec.Cmd {
	all := append([]string{"--config", p.config, "--dags", p.dags, "--state", p.state}, args...)
	c := exec.Command(binary, all...)
	c.Dir = p.dir
	return c
}

// run runs a poolflow command to its end and returns stdout, failing the test on error.
func (p *project) run(t *testing.T, args ...string) string {
	t.Helper()
	c := p.cmd(args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		t.Fatalf("poolflow %v: %v\n%s", args, err, errb.String())
	}
	return out.String()
}

// open opens the project's database for assertions.
func (p *project) open(t *testing.T) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(p.state, "poolflow.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// pipe makes a named pipe in dir for a task's script to write to (`echo $$ > PIPE`), so the
// test waits for the task's process itself rather than polling for a file it writes.
func pipe(t *testing.T, dir, name string) *testwait.Pipe {
	t.Helper()
	p, err := testwait.NewPipe(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// line waits for the next line a task writes to p.
func line(t *testing.T, p *testwait.Pipe, what string) string {
	t.Helper()
	s, err := p.Line(30 * time.Second)
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
	return s
}

// pidLine waits for a task to write its pid to p.
func pidLine(t *testing.T, p *testwait.Pipe, what string) int {
	t.Helper()
	s := line(t, p, what)
	pid, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatalf("%s: %q is no pid", what, s)
	}
	return pid
}

// exited waits for process pid to end (watched on a pidfd, not polled).
func exited(t *testing.T, pid int, limit time.Duration, what string) {
	t.Helper()
	if err := testwait.Exit(pid, limit); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// alive reports whether process pid runs: a zombie (killed, not yet reaped by init) is dead.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}
