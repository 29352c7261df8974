package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRunFolderLocked: a second harness on a run folder in use is refused, naming the folder
// and the pid holding it; the lock goes with the process that held it.
func TestRunFolderLocked(t *testing.T) {
	dir := t.TempDir()
	if os.Getenv("CHAOS_LOCK_CHILD") != "" {
		if err := lockRunFolder(os.Getenv("CHAOS_LOCK_CHILD")); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		_, _ = os.Stdin.Read(make([]byte, 1)) // hold the lock until the parent closes stdin
		os.Exit(0)
	}
	child := exec.Command(os.Args[0], "-test.run", "^TestRunFolderLocked$")
	child.Env = append(os.Environ(), "CHAOS_LOCK_CHILD="+dir)
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, _ := stdout.Read(buf); !strings.Contains(string(buf[:n]), "locked") {
		t.Fatalf("the child did not take the lock: %q", buf[:n])
	}
	err = lockRunFolder(dir)
	if err == nil || !strings.Contains(err.Error(), "in use by another poolflow-chaos") ||
		!strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "pid ") {
		t.Fatalf("second lock: %v", err)
	}
	stdin.Close()
	if err := child.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := lockRunFolder(dir); err != nil {
		t.Fatalf("after the holder exited: %v", err)
	}
	held.Close()
}
