package executor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/store"
)

// oneFire is the schedule of a DAG with exactly one fire due now: the start of this year, caught
// up from just before it; the next fire is a year away. The run it makes is leader-owned.
func oneFire() string { return oneFireBy(time.Now()) }

// oneFireBy is oneFire on a clock that reads now.
func oneFireBy(now time.Time) string {
	y := time.Date(now.UTC().Year(), 1, 1, 0, 0, 0, 0, time.UTC)
	return fmt.Sprintf("schedule: '@yearly'\ncatchup: true\nstart_date: %s\n", y.Add(-time.Hour).Format(time.RFC3339))
}

// gatedTasks are n tasks of one pool that run until gate exists.
func gatedTasks(n int, gate, extra string) string {
	var b strings.Builder
	b.WriteString("tasks:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - {id: t%02d, pool_requirements: {p: 1}%s, bash: 'while [ ! -f %s ]; do sleep 0.02; done'}\n", i, extra, gate)
	}
	return b.String()
}

// startDaemons starts one daemon per id on the bundle's store.
func startDaemons(t *testing.T, b *bundle, ids ...string) map[string]*Daemon {
	t.Helper()
	out := map[string]*Daemon{}
	for _, id := range ids {
		d := b.daemon(t, func(c *Config) { c.DaemonID = id })
		if err := d.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Stop() })
		out[id] = d
	}
	return out
}

// heldBy counts the admissions (entries with claims) per daemon.
func heldBy(t *testing.T, st store.Store) map[string]int {
	t.Helper()
	claims, err := st.ListClaims(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	out := map[string]int{}
	for _, c := range claims {
		if !seen[c.Entry] {
			seen[c.Entry] = true
			out[c.Daemon]++
		}
	}
	return out
}

// admissions waits for the notices of n admissions of dagID's tasks, by any daemon of the
// bundle, and returns the run they belong to.
func admissions(t *testing.T, b *bundle, n int, dagID string) store.Run {
	t.Helper()
	var runID string
	for range n {
		a := b.waitNotice(t, func(n Notice) bool { return n.Kind == NoticeAdmitted && n.DAGID == dagID })
		if runID != "" && a.RunID != runID {
			t.Fatalf("admissions in runs %s and %s", runID, a.RunID)
		}
		runID = a.RunID
	}
	rs := b.runs(t, dagID)
	if len(rs) != 1 || rs[0].RunID != runID || rs[0].RunType == "manual" {
		t.Fatalf("runs of %s: %+v", dagID, rs)
	}
	return rs[0]
}

// TestSharedRunSpreads: three daemons with max_running 2 each run a leader-owned run's six
// tasks at once (one daemon alone could run two): each admits two under its own id, the pool
// is never exceeded, every attempt is recorded once, and the run ends once, by its owner. Pass
// by pass (a Harness per daemon).
func TestSharedRunSpreads(t *testing.T) {
	t.Parallel()
	b := setup(t, "max_running: 2\npools:\n  p: 6\n", map[string]string{
		"fan.yaml": "dag_id: fan\nmax_active_tasks: 100\n" + oneFireBy(t0) + gatedTasks(6, "/nonexistent", ""),
	})
	ids := []string{"d1", "d2", "d3"}
	hs := map[string]*Harness{}
	for _, id := range ids {
		hs[id], _ = b.harness(t, func(c *Config) { c.DaemonID = id })
	}
	running := map[string][]*attempt.Spec{}
	for _, id := range ids {
		running[id] = hs[id].settle(t)
		if len(running[id]) != 2 {
			t.Fatalf("%s started %v, want two", id, tasks(running[id]))
		}
	}
	if got := heldBy(t, b.st); got["d1"] != 2 || got["d2"] != 2 || got["d3"] != 2 {
		t.Fatalf("admissions per daemon %v, want 2 each", got)
	}
	rs := b.runs(t, "fan")
	if len(rs) != 1 || rs[0].RunType == "manual" {
		t.Fatalf("runs of fan: %+v", rs)
	}
	run := rs[0]
	for _, id := range []string{"d2", "d3", "d1"} { // the owner, d1, passes last: it ends the run
		if started := hs[id].succeed(t, running[id]...); len(started) != 0 {
			t.Fatalf("%s started %v after the six", id, tasks(started))
		}
	}
	if r := b.mustRun(t, "fan", run.RunID); r.State != "success" || r.Owner != "d1" {
		t.Fatalf("run %s owned by %s, want success by d1", r.State, r.Owner)
	}
	atts, err := b.st.RunAttempts(context.Background(), run.PK)
	if err != nil {
		t.Fatal(err)
	}
	if len(atts) != 6 {
		t.Fatalf("%d attempts, want 6: %+v", len(atts), atts)
	}
	for _, a := range atts {
		if a.State != "success" || a.TryNumber != 1 {
			t.Errorf("attempt %s: %s try %d", a.TaskID, a.State, a.TryNumber)
		}
	}
	if rs := b.runs(t, "fan"); len(rs) != 1 {
		t.Fatalf("%d runs", len(rs))
	}
	if claims, _ := b.st.ListClaims(context.Background()); len(claims) != 0 {
		t.Fatalf("claims left: %+v", claims)
	}
}

// TestSharedRunStoppedDaemonReplays: a daemon that stops while it runs another daemon's
// entries puts them back in the queue with their try number, and the others run them.
func TestSharedRunStoppedDaemonReplays(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "go")
	b := setup(t, "max_running: 2\npools:\n  p: 4\n", map[string]string{
		"fan.yaml": "dag_id: fan\nmax_active_tasks: 100\n" + oneFire() + gatedTasks(4, gate, ""),
	})
	ds := startDaemons(t, b, "d1", "d2")
	run := admissions(t, b, 4, "fan")
	if h := heldBy(t, b.st); h["d1"] != 2 || h["d2"] != 2 {
		t.Fatalf("admissions per daemon %v, want 2 each", h)
	}
	owner := b.mustRun(t, "fan", run.RunID).Owner
	other := "d1"
	if owner == "d1" {
		other = "d2"
	}
	if err := ds[other].Stop(); err != nil {
		t.Fatal(err)
	}
	touch(t, gate)
	if n := b.waitNotice(t, func(n Notice) bool { return n.Kind == NoticeRunEnded && n.RunID == run.RunID }); n.State != "success" {
		t.Fatalf("run %s (%s), want success", n.State, n.Reason)
	}
	for id, ti := range b.tis(t, run.PK) {
		if ti.State != "success" || ti.TryNumber != 1 {
			t.Errorf("%s: %s try %d, want success on try 1 (a stop is no attempt)", id, ti.State, ti.TryNumber)
		}
	}
}

// TestSharedRunFailStopsRemoteAttempt: tasks fail on a task another daemon runs reaches it
// through a stop request: its runner kills the attempt, the task fails with no retry and the
// claim is released only once the process is gone; the owner ends the run.
func TestSharedRunFailStopsRemoteAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t, "max_running: 1\npools:\n  p: 2\n", nil)
	started, ran := b.pipe(t, "started"), b.pipe(t, "ran")
	task := func(id string) string {
		return fmt.Sprintf("  - {id: %s, retries: 3, pool_requirements: {p: 1}, bash: 'echo $POOLFLOW_DAEMON_ID $$ > %s; trap \"\" TERM; sleep 60'}\n",
			id, started.Path)
	}
	write(t, filepath.Join(b.dagsDir, "f.yaml"), "dag_id: f\nmax_active_tasks: 100\n"+oneFire()+"tasks:\n"+task("a")+task("b")+
		fmt.Sprintf("  - {id: c, depends_on: [a, b], trigger_rule: all_done, bash: 'echo c > %s'}\n", ran.Path))
	ds := startDaemons(t, b, "d1", "d2")
	pids := map[string]int{}
	for range 2 {
		var id string
		var pid int
		if _, err := fmt.Sscan(line(t, started, "both attempts to start"), &id, &pid); err != nil {
			t.Fatal(err)
		}
		pids[id] = pid
	}
	if len(pids) != 2 {
		t.Fatalf("attempts started by %v, want one on each daemon", pids)
	}
	rs := b.runs(t, "f")
	if len(rs) != 1 || rs[0].RunType == "manual" {
		t.Fatalf("runs of f: %+v", rs)
	}
	run := rs[0]
	owner := run.Owner
	other := map[string]string{"d1": "d2", "d2": "d1"}[owner]
	// The task the other daemon runs.
	var remote string
	claims, _ := b.st.ListClaims(context.Background())
	for _, c := range claims {
		if c.Daemon == other {
			e, err := b.st.EntryByID(context.Background(), c.Entry)
			if err != nil {
				t.Fatal(err)
			}
			remote = e.TaskID
		}
	}
	if err := ds[owner].Command(context.Background(), store.Command{Kind: "fail", Run: run.PK, TaskID: remote}); err != nil {
		t.Fatal(err)
	}
	b.waitNotice(t, func(n Notice) bool { return n.Kind == NoticeAttemptEnded && n.TaskID == remote })
	ti := b.tis(t, run.PK)[remote]
	if ti.State != "failed" || ti.Reason != "marked failed by operator" || ti.TryNumber != 1 {
		t.Fatalf("%s after tasks fail: %s %q try %d", remote, ti.State, ti.Reason, ti.TryNumber)
	}
	if err := processGone(pids[other]); err != nil {
		t.Fatalf("the remote attempt's process: %v", err)
	}
	for _, c := range mustClaims(t, b.st) {
		e, _ := b.st.EntryByID(context.Background(), c.Entry)
		if e.TaskID == remote {
			t.Fatalf("claim of %s still held after its end", remote)
		}
	}
	local := map[string]string{"a": "b", "b": "a"}[remote]
	if err := ds[owner].Command(context.Background(), store.Command{Kind: "fail", Run: run.PK, TaskID: local}); err != nil {
		t.Fatal(err)
	}
	// c (all_done) is the leaf: it runs, and the run succeeds.
	if n := b.waitNotice(t, func(n Notice) bool { return n.Kind == NoticeRunEnded && n.RunID == run.RunID }); n.State != "success" {
		t.Fatalf("run %s (%s), want success", n.State, n.Reason)
	}
	if _, err := ran.Line(5 * time.Second); err != nil {
		t.Fatalf("c did not run after a and b were done: %v", err)
	}
}

func mustClaims(t *testing.T, st store.Store) []store.Claim {
	t.Helper()
	cs, err := st.ListClaims(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// processGone reports an error when pid still runs (a zombie counts as gone).
func processGone(pid int) error {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	if f := strings.Fields(string(data)); len(f) > 2 && f[2] == "Z" {
		return nil
	}
	return fmt.Errorf("pid %d still runs", pid)
}
