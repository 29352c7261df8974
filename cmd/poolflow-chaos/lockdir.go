package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// held keeps the run folder's lock file open, and so locked, until the process exits.
var held *os.File

// lockRunFolder refuses a run folder another harness is using: two harnesses on one folder
// share its store and record, and each then reports the other's claims as over capacity.
// The lock is flock(2)'s, so a harness killed with -9 leaves no stale lock behind.
func lockRunFolder(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, ".poolflow-chaos.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		owner, _ := os.ReadFile(f.Name())
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("run folder %s is in use by another poolflow-chaos (pid %s); give another -dir",
				dir, strings.TrimSpace(string(owner)))
		}
		return fmt.Errorf("lock run folder %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	held = f
	return nil
}
