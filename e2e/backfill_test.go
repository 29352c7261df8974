package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Backfills (§11) with real processes: a daemon, the CLI, and tasks that hold a pool.

// backfillFrom is the first date the tests backfill: long before the daemons start.
var backfillFrom = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// backfillDone waits until a daemon logs that backfill id completed.
func backfillDone(t *testing.T, limit time.Duration, id int64, logs ...*logBuf) {
	t.Helper()
	const line = `msg="backfill completed" dag_id=`
	want := fmt.Sprintf(" backfill=%d", id)
	until(t, limit, "backfill "+fmt.Sprint(id)+" to complete", func() bool {
		for _, l := range logs {
			for _, s := range strings.Split(l.String(), "\n") {
				if strings.Contains(s, line) && strings.HasSuffix(s, want) {
					return true
				}
			}
		}
		return false
	}, logs...)
}

// backfillRuns are a DAG's runs in [from, to] by logical date, each date once at most.
func backfillRuns(t *testing.T, st store.Store, dagID string, from, to time.Time) []store.Run {
	t.Helper()
	runs, err := st.ListRunsBetween(context.Background(), dagID, from, to)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(runs); i++ {
		if runs[i].LogicalDate.Equal(runs[i-1].LogicalDate) {
			t.Fatalf("date %s has two runs: %s and %s", runs[i].LogicalDate, runs[i-1].RunID, runs[i].RunID)
		}
	}
	return runs
}

// TestBackfillFreshFirst: a backfill of 20 hourly dates with max_active_runs 2 runs them in
// order, never more than two at a time; its tasks never hold more than its max_slots of the
// warehouse pool (interval recording of every attempt); and the fresh scheduled runs of another
// DAG that need the same strict pool meanwhile are admitted first: no backfill task is admitted
// while a fresh one waits.
func TestBackfillFreshFirst(t *testing.T) {
	t.Parallel()
	p := newProject(t, "max_running: 16\npools:\n  wh:\n    slots: 3\n    ordering: strict\n", map[string]string{
		"export.yaml": `schedule: '@hourly'
tasks:
  - {id: a, bash: 'sleep 0.2', pool_requirements: {wh: 1}}
  - {id: b, bash: 'sleep 0.2', pool_requirements: {wh: 1}}
`,
		"fresh.yaml": `schedule: '@every 2s'
tasks:
  - {id: load, bash: 'sleep 0.1', pool_requirements: {wh: 2}}
`,
	})
	d := p.serve(t)
	defer d.stop(30 * time.Second)
	to := backfillFrom.Add(19 * time.Hour)
	out := p.run(t, "dags", "backfill", "export", "--from", backfillFrom.Format(time.RFC3339), "--to", to.Format(time.RFC3339),
		"--max-active-runs", "2", "--max-slots", "wh=2")
	if !strings.Contains(out, "created backfill 1 of dag export: 20 dates") {
		t.Fatalf("backfill: %s", out)
	}
	backfillDone(t, 120*time.Second, 1, d.logs)
	st := p.open(t)
	ctx := context.Background()
	runs := backfillRuns(t, st, "export", backfillFrom, to)
	if len(runs) != 20 {
		t.Fatalf("%d runs", len(runs))
	}
	var all, bf []hold
	var spans []hold
	for i, r := range runs {
		if r.RunType != vocab.RunBackfill || r.State != vocab.RunSuccess || r.Backfill != 1 {
			t.Fatalf("run %s: %s %s backfill %d", r.RunID, r.RunType, r.State, r.Backfill)
		}
		if i > 0 && r.StartDate.Before(runs[i-1].StartDate) {
			t.Fatalf("run %s started before the run of the date before it", r.RunID)
		}
		spans = append(spans, hold{name: r.RunID, start: r.StartDate, end: r.EndDate})
		hs := holdsOf(t, st, r)
		bf = append(bf, hs...)
		all = append(all, hs...)
	}
	if n := maxConcurrent(spans); n > 2 {
		t.Fatalf("%d backfill runs ran at once, want at most 2", n)
	}
	// Its tasks never held more than its share, though two runs of two tasks could use four.
	if peak := checkCapacity(t, bf, map[string]int{"wh": 2}); peak["wh"] != 2 {
		t.Errorf("the backfill's peak in wh is %d, want its max_slots 2", peak["wh"])
	}
	fresh, _, err := st.ListRuns(ctx, "fresh", 100, 0)
	if err != nil || len(fresh) == 0 {
		t.Fatalf("no fresh run: %v", err)
	}
	for _, r := range fresh {
		if r.State == vocab.RunSuccess {
			all = append(all, holdsOf(t, st, r)...)
		}
	}
	checkCapacity(t, all, map[string]int{"wh": 3})
	// Fresh first: while a fresh entry waited, no backfill entry was admitted (the pool is
	// strict: the fresh entry is its head the moment it is queued, ahead of the older dates).
	entries, err := st.ListEntries(ctx, vocab.EntryDone)
	if err != nil {
		t.Fatal(err)
	}
	waited := 0
	for _, f := range entries {
		if f.DAGID != "fresh" || f.AdmittedAt.IsZero() {
			continue
		}
		if f.AdmittedAt.After(f.CreatedAt) {
			waited++
		}
		for _, e := range entries {
			if e.Backfill != 0 && e.AdmittedAt.After(f.CreatedAt) && e.AdmittedAt.Before(f.AdmittedAt) {
				t.Fatalf("backfill entry %s admitted at %s while fresh %s waited from %s to %s", e.Label,
					e.AdmittedAt.Format(time.StampMicro), f.Label, f.CreatedAt.Format(time.StampMicro), f.AdmittedAt.Format(time.StampMicro))
			}
		}
	}
	t.Logf("%d fresh runs during the backfill, %d of them waited for the pool", len(fresh), waited)
	b, err := st.GetBackfill(ctx, 1)
	if err != nil || b.State != vocab.BackfillCompleted || b.Progress.Done != 20 {
		t.Fatalf("backfill %+v %v", b, err)
	}
}

// TestBackfillReprocessFailed: a backfill whose two dates fail, then the fix, then a backfill
// of the same range with --reprocess failed: it clears only the failed runs (their tasks run
// again with the next try), skips the others, and every date ends in success.
func TestBackfillReprocessFailed(t *testing.T) {
	t.Parallel()
	p := newProject(t, "pools:\n  db: 2\n", nil)
	fixed := filepath.Join(p.dir, "fixed")
	if err := os.WriteFile(filepath.Join(p.dags, "flaky.yaml"), []byte(fmt.Sprintf(`schedule: '@hourly'
tasks:
  - id: load
    pool_requirements: {db: 1}
    bash: 'case "$POOLFLOW_LOGICAL_DATE" in *T03:*|*T05:*) test -f %s;; esac'
`, fixed)), 0o644); err != nil {
		t.Fatal(err)
	}
	d := p.serve(t)
	defer d.stop(30 * time.Second)
	to := backfillFrom.Add(5 * time.Hour)
	span := []string{"--from", backfillFrom.Format(time.RFC3339), "--to", to.Format(time.RFC3339), "--max-active-runs", "3"}
	c := p.cmd(append([]string{"dags", "backfill", "flaky", "--wait"}, span...)...)
	outB, err := c.CombinedOutput()
	var ee *exec.ExitError
	if !strings.Contains(string(outB), "backfill 1: 2 of 6 runs failed") || !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("first backfill: %v\n%s", err, outB)
	}
	if !strings.Contains(string(outB), "backfill 1 [") || !strings.Contains(string(outB), "(completed)") {
		t.Fatalf("no progress bar on stderr:\n%s", outB)
	}
	if err := os.WriteFile(fixed, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dry := p.run(t, append([]string{"dags", "backfill", "flaky", "--reprocess", "failed", "--dry-run"}, span...)...)
	if !strings.Contains(dry, "6 dates: 0 to create, 2 to clear, 4 to skip") {
		t.Fatalf("dry run:\n%s", dry)
	}
	out := p.run(t, append([]string{"dags", "backfill", "flaky", "--reprocess", "failed", "--wait"}, span...)...)
	if !strings.Contains(out, "backfill 2 completed: 2 done, 4 skipped") {
		t.Fatalf("second backfill: %s", out)
	}
	st := p.open(t)
	runs := backfillRuns(t, st, "flaky", backfillFrom, to)
	if len(runs) != 6 {
		t.Fatalf("%d runs", len(runs))
	}
	for _, r := range runs {
		tis, err := st.ListTaskInstances(context.Background(), r.PK)
		if err != nil || len(tis) != 1 {
			t.Fatal(err)
		}
		h := r.LogicalDate.Hour()
		wantTry, wantBF := 1, int64(1)
		if h == 3 || h == 5 {
			wantTry, wantBF = 2, 2
		}
		if r.State != vocab.RunSuccess || tis[0].TryNumber != wantTry || r.Backfill != wantBF {
			t.Errorf("run %s: %s, try %d, backfill %d; want success, try %d, backfill %d", r.RunID, r.State,
				tis[0].TryNumber, r.Backfill, wantTry, wantBF)
		}
	}
}

// TestBackfillSurvivesKill: kill -9 the daemon mid-backfill; started again it finishes the
// backfill, and no date is run twice.
func TestBackfillSurvivesKill(t *testing.T) {
	t.Parallel()
	p := newProject(t, "pools:\n  db: 2\n", map[string]string{"slow.yaml": `schedule: '@hourly'
tasks:
  - {id: work, bash: 'sleep 0.3', pool_requirements: {db: 1}}
`})
	first := p.serve(t, "--daemon-id", "bf")
	to := backfillFrom.Add(11 * time.Hour)
	p.run(t, "dags", "backfill", "slow", "--from", backfillFrom.Format(time.RFC3339), "--to", to.Format(time.RFC3339),
		"--max-active-runs", "2")
	until(t, 60*time.Second, "three backfill runs to end", func() bool {
		return strings.Count(first.logs.String(), `msg="run ended" dag_id=slow run_id=backfill__`) >= 3
	}, first.logs)
	first.kill()
	second := p.serve(t, "--daemon-id", "bf")
	defer second.stop(30 * time.Second)
	backfillDone(t, 120*time.Second, 1, second.logs)
	st := p.open(t)
	runs := backfillRuns(t, st, "slow", backfillFrom, to)
	if len(runs) != 12 {
		t.Fatalf("%d runs of 12 dates", len(runs))
	}
	ids := map[string]bool{}
	for _, r := range runs {
		if r.State != vocab.RunSuccess || ids[r.RunID] {
			t.Fatalf("run %s: %s", r.RunID, r.State)
		}
		ids[r.RunID] = true
	}
	dates, _, err := st.ListBackfillDates(context.Background(), 1, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(dates, func(d store.BackfillDate) bool { return d.Action == vocab.BackfillCreated }) ||
		slices.ContainsFunc(dates, func(d store.BackfillDate) bool { return d.Action != vocab.BackfillCreated }) {
		t.Fatalf("dates %+v", dates)
	}
	// At most 12 creations logged: the first daemon may be killed between committing a run
	// and logging it (seen: 11), but a date created twice would log a thirteenth.
	if n := strings.Count(first.logs.String()+second.logs.String(), `msg="run created" dag_id=slow`); n > 12 {
		t.Fatalf("runs created: %d", n)
	}
}
