package runner

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReplayMarkerOnItsOwnLine: the replay of an attempt killed in the middle of a line starts
// its "--- replay ---" marker on a new line; after a whole line it adds no empty one.
func TestReplayMarkerOnItsOwnLine(t *testing.T) {
	t.Parallel()
	for before, want := range map[string]string{
		"half":    "half\n--- replay ---\nagain\n",
		"whole\n": "whole\n--- replay ---\nagain\n",
		"":        "--- replay ---\nagain\n",
	} {
		path := filepath.Join(t.TempDir(), "1.log")
		if before != "" {
			if err := os.WriteFile(path, []byte(before), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		l := newAttemptLog(path, true)
		if _, err := l.Write([]byte("again\n")); err != nil {
			t.Fatal(err)
		}
		l.Close()
		if got, _ := os.ReadFile(path); string(got) != want {
			t.Errorf("after %q: log = %q, want %q", before, got, want)
		}
	}
}
