package executor

import (
	"os"
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
	if cmd := c.command([]string{"tool", "x"}); cmd.Path != filepath.Join(dir1, "tool") || cmd.Args[0] != "tool" {
		t.Fatalf("first lookup: %s %v", cmd.Path, cmd.Args)
	}
	if got := c.found["tool"]; got != filepath.Join(dir1, "tool") {
		t.Fatalf("cache holds %q", got)
	}
	os.Remove(filepath.Join(dir1, "tool"))
	if cmd := c.command([]string{"tool"}); cmd.Path != filepath.Join(dir2, "tool") {
		t.Fatalf("after removal: %s", cmd.Path)
	}
	t.Setenv("PATH", dir2)
	c.command([]string{"tool"})
	if len(c.found) != 1 || c.path != dir2 {
		t.Fatalf("after a PATH change: %v under %q", c.found, c.path)
	}
	if cmd := c.command([]string{"./relative/tool"}); cmd.Path != "./relative/tool" {
		t.Fatalf("a path with a slash is not looked up: %s", cmd.Path)
	}
}
