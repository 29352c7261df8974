package testwait

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPipe: a script's line arrives through the pipe; Closed returns once the script and the
// child that inherited the pipe have ended, and not before.
func TestPipe(t *testing.T) {
	t.Parallel()
	p, err := NewPipe(filepath.Join(t.TempDir(), "pipe"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Line(50 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "no line") {
		t.Fatalf("a line before anyone wrote: %v", err)
	}
	cmd := exec.Command("bash", "-c", `exec 3>"$0"; echo started >&3; sleep 60 & echo $! >&3; wait`, p.Path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if line, err := p.Line(10 * time.Second); err != nil || line != "started" {
		t.Fatalf("line %q %v", line, err)
	}
	child, err := p.Line(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The child holds the pipe: the end of the shell alone is not the end.
	cmd.Process.Kill()
	cmd.Wait()
	if err := p.Closed(100 * time.Millisecond); err == nil {
		t.Fatalf("closed while the child %s holds it", child)
	}
	if err := exec.Command("kill", child).Run(); err != nil {
		t.Fatal(err)
	}
	if err := p.Closed(10 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestSend: a script reading the pipe waits for the test's line.
func TestSend(t *testing.T) {
	t.Parallel()
	gate, err := NewPipe(filepath.Join(t.TempDir(), "gate"))
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Close()
	cmd := exec.Command("bash", "-c", `read line < "$0"; echo "got $line"`, gate.Path)
	out := new(strings.Builder)
	cmd.Stdout = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := Exit(cmd.Process.Pid, 50*time.Millisecond); err == nil {
		t.Fatal("the script did not wait for the line")
	}
	if err := gate.Send("go"); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil || out.String() != "got go\n" {
		t.Fatalf("%v %q", err, out)
	}
}

// TestExit: Exit returns once a process ends, and fails for one that runs past the limit.
func TestExit(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := Exit(cmd.Process.Pid, 50*time.Millisecond); err == nil {
		t.Fatal("a running process has ended")
	}
	cmd.Process.Kill()
	if err := Exit(cmd.Process.Pid, 10*time.Second); err != nil { // a zombie has ended
		t.Fatal(err)
	}
	cmd.Wait()
	if err := Exit(cmd.Process.Pid, time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestLog: Wait returns once the text is written, woken by the write.
func TestLog(t *testing.T) {
	t.Parallel()
	var l Log
	if l.Wait("hello", 20*time.Millisecond) {
		t.Fatal("found before it was written")
	}
	go func() {
		l.Write([]byte("a\n"))
		l.Write([]byte("hello\n"))
	}()
	if !l.Wait("hello", 10*time.Second) {
		t.Fatalf("not found in %q", l.String())
	}
}

// TestUntil: Until returns once a write makes cond hold, also to a file whose folders do not
// exist yet, and fails when none comes.
func TestUntil(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a", "b", "f")
	has := func() bool { b, _ := os.ReadFile(path); return strings.Contains(string(b), "done") }
	if err := Until(path, 50*time.Millisecond, has); err == nil {
		t.Fatal("held before the write")
	}
	go func() {
		os.MkdirAll(filepath.Dir(path), 0o755)
		f, _ := os.Create(path)
		f.WriteString("not yet\n")
		f.WriteString("done\n")
		f.Close()
	}()
	if err := Until(path, 10*time.Second, has); err != nil {
		t.Fatal(err)
	}
}
