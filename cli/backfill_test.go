package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// TestDagsBackfill: the dry run prints each date and the slot-hours per pool; a backfill is
// created; an overlapping one is refused naming it; bad input exits 2 naming the field; the
// progress line counts its dates.
func TestDagsBackfill(t *testing.T) {
	t.Parallel()
	p := newProject(t, poolsYAML, map[string]string{"hourly.yaml": "schedule: '@hourly'\ntasks:\n" +
		"  - {id: load, bash: 'true', pool_requirements: {db: 1}}\n"})
	out, errOut, code := p.run("dags", "backfill", "hourly", "--from", "2025-01-01", "--to", "2025-01-01T02:00:00Z", "--dry-run")
	if code != 0 || !strings.Contains(out, "2025-01-01T02:00:00Z  created") || !strings.Contains(out, "3 dates: 3 to create") ||
		!strings.Contains(out, "not counted (never ran): load") {
		t.Fatalf("dry run: %d %s %s", code, out, errOut)
	}
	out, errOut, code = p.run("dags", "backfill", "hourly", "--from", "2025-01-01", "--to", "2025-01-01T02:00:00Z",
		"--max-active-runs", "2", "--max-slots", "db=1")
	if code != 0 || !strings.Contains(out, "created backfill 1 of dag hourly: 3 dates") {
		t.Fatalf("create: %d %s %s", code, out, errOut)
	}
	_, errOut, code = p.run("dags", "backfill", "hourly", "--from", "2025-01-01T01:00:00Z", "--to", "2025-01-02")
	if code != 1 || !strings.Contains(errOut, "backfill 1 of dag hourly") {
		t.Fatalf("overlap: %d %s", code, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", "2025-01-02", "--to", "2025-01-01"}, "to_date: 2025-01-01T00:00:00Z is before from_date"},
		{[]string{"--from", "2025-01-01T00:10:00Z", "--to", "2025-01-01T00:20:00Z"}, "from_date: no fire"},
		{[]string{"--from", "yesterday", "--to", "2025-01-01"}, "--from"},
		{[]string{"--from", "2025-01-01", "--to", "2025-01-02", "--max-slots", "wh=1"}, "max_slots: pool wh: dag hourly does not use it"},
		{[]string{"--from", "2025-01-01", "--to", "2025-01-02", "--max-slots", "db"}, "--max-slots"},
		{[]string{"--from", "2025-01-01", "--to", "2025-01-02", "--reprocess", "some"}, "reprocess_behavior"},
	} {
		_, errOut, code := p.run(append([]string{"dags", "backfill", "hourly"}, tc.args...)...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: %d %s, want exit 2 with %q", tc.args, code, errOut, tc.want)
		}
	}
	line := progressLine(store.Backfill{ID: 7, State: vocab.BackfillRunning, Progress: store.BackfillProgress{Total: 12, Done: 4,
		Failed: 1, Running: 2, Left: 3, Skipped: 2}})
	if line != "backfill 7 [############!!!>>>>>>.........] 5/10  done 4  failed 1  running 2  left 3  skipped 2  (running)" {
		t.Fatalf("progress %q", line)
	}
	_ = time.Second
}
