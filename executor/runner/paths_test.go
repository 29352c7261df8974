package runner

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestPathCache: a command is found once through PATH, then taken from the cache; a cached
// command that disappears is looked up again, and a PATH change empties the cache.
func TestPathCache(t *testing.T) {
	dir1, dir2 := t.TempDir(), t.TempDir()
	for _, d := range []string{dir1, dir2} {
		if err := os.WriteFile(filepath.Join(d, "tool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir1+string(os.PathListSeparator)+dir2)
	var c pathCache
	if path, err := c.lookup("tool"); err != nil || path != filepath.Join(dir1, "tool") {
		t.Fatalf("first lookup: %s %v", path, err)
	}
	if got := c.found["tool"]; got != filepath.Join(dir1, "tool") {
		t.Fatalf("cache holds %q", got)
	}
	os.Remove(filepath.Join(dir1, "tool"))
	if path, _ := c.lookup("tool"); path != filepath.Join(dir2, "tool") {
		t.Fatalf("after removal: %s", path)
	}
	t.Setenv("PATH", dir2)
	c.lookup("tool")
	if len(c.found) != 1 || c.path != dir2 {
		t.Fatalf("after a PATH change: %v under %q", c.found, c.path)
	}
	if path, _ := c.lookup("./relative/tool"); path != "./relative/tool" {
		t.Fatalf("a path with a slash is not looked up: %s", path)
	}
	if _, err := c.lookup("no-such-tool"); !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("a missing command: %v, want exec.ErrNotFound", err)
	}
}
