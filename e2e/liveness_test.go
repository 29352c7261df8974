package e2e

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/executor/runner"
)

// TestRemovedOrInvalidDAGKeepsTracking: a DAG deleted while its task runs, and one made invalid
// by a forced pool shrink, stay tracked until the running attempt ends, even after other
// processes write to the store: the attempt's end is recorded, its claim released, the waiting
// entries retired, and a restarted daemon finds no zombie entry.
func TestRemovedOrInvalidDAGKeepsTracking(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	gate := filepath.Join(tmp, "go")
	running := pipe(t, tmp, "running")
	dagOf := func(id, pool string, slots int) string {
		return fmt.Sprintf("dag_id: %s\ntasks:\n"+
			"  - {id: holder, pool_requirements: {%[2]s: %[3]d}, priority_weight: 9, weight_rule: absolute, bash: 'echo %[1]s > %[5]s; while [ ! -f %[4]s ]; do sleep 0.05; done'}\n"+
			"  - {id: waiter, pool_requirements: {%[2]s: %[3]d}, bash: 'echo never'}\n", id, pool, slots, gate, running.Path)
	}
	p := newProject(t, "pools:\n  db: 1\n", map[string]string{
		"gone.yaml":  dagOf("gone", "db", 1),
		"other.yaml": "dag_id: other\ntasks:\n  - {id: a, bash: 'echo other'}\n",
	})
	p.run(t, "pools", "set", "wide", "--slots", "2")
	if err := os.WriteFile(filepath.Join(p.dags, "shrunk.yaml"), []byte(dagOf("shrunk", "wide", 2)), 0o644); err != nil {
		t.Fatal(err)
	}
	s := p.serve(t, "--daemon-id", "s")
	s.trigger("gone", "r")
	s.trigger("shrunk", "r")
	st := p.open(t)
	// Each trigger is answered after the pass that admitted its holder and queued its waiter.
	holders := map[string]bool{}
	for range 2 {
		holders[line(t, running, "both holders to run")] = true
	}
	if !holders["gone"] || !holders["shrunk"] {
		t.Fatalf("holders running: %v", holders)
	}
	for _, id := range []string{"gone", "shrunk"} {
		if e := entryOf(st, id, "r", "waiter"); e.ReasonCode != "pool_full" {
			t.Fatalf("%s's waiter: %s %q, want pool_full", id, e.ReasonCode, e.Reason)
		}
	}
	if err := os.Remove(filepath.Join(p.dags, "gone.yaml")); err != nil {
		t.Fatal(err)
	}
	p.run(t, "pools", "set", "wide", "--slots", "1", "--force")
	for _, id := range []string{"gone", "shrunk"} {
		until(t, 20*time.Second, id+"'s waiting entry to be retired", func() bool {
			return entryOf(st, id, "r", "waiter").State == "retired"
		}, s.logs)
	}
	// A write from another process makes the daemon reload its memory.
	p.run(t, "dags", "pause", "other")
	// The reload must not lose the attempts: the gate opens once a pass read the write. The
	// CLI read its clock for the row under the writers' lock: a pass whose clock read later
	// began its transaction after the CLI's commit.
	var wrote time.Time
	rows, err := st.ListDAGRows(context.Background())
	for _, r := range rows {
		if r.DAGID == "other" {
			wrote = r.UpdatedAt
		}
	}
	if err != nil || wrote.IsZero() {
		t.Fatalf("the pause of other: %v %v", rows, err)
	}
	s.logs.waitPassSince(t, wrote.Add(time.Microsecond), 20*time.Second) // stored to the µs
	touch(t, gate)
	for _, id := range []string{"gone", "shrunk"} {
		if state := runEnded(t, 20*time.Second, id, "r", s.logs); state != "failed" {
			t.Fatalf("%s's run %s once its holder ended, want failed", id, state)
		}
		r := runOf(st, id, "r")
		if ti := tiOf(t, st, r, "holder"); ti.State != "success" || ti.EndDate.IsZero() {
			t.Errorf("%s.holder is %s (end %v): its end was dropped", id, ti.State, ti.EndDate)
		}
		if e := entryOf(st, id, "r", "holder"); e.State != "done" {
			t.Errorf("%s.holder's entry is %s, want done", id, e.State)
		}
	}
	if claims, _ := st.ListClaims(context.Background()); len(claims) != 0 {
		t.Fatalf("claims left: %+v", claims)
	}
	s.stop(30 * time.Second)
	s2 := p.serve(t, "--daemon-id", "s")
	resp, err := http.Get(s2.base + "/pools")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if waiting, _ := st.ListEntries(context.Background(), "waiting", "admitted"); len(waiting) != 0 {
		t.Fatalf("zombie entries after the restart: %+v\n%s", waiting, body)
	}
	s2.stop(30 * time.Second)
}

// TestCatchupCountsEveryDaemon: two daemons on one store run a DAG's catch-up runs one at a time,
// in order, never two at once.
func TestCatchupCountsEveryDaemon(t *testing.T) {
	t.Parallel()
	start := time.Now().UTC().Add(-3 * time.Hour)
	p := newProject(t, "", map[string]string{
		"cu.yaml": fmt.Sprintf("dag_id: cu\nschedule: '@hourly'\ncatchup: true\nstart_date: %s\ntasks:\n"+
			"  - {id: a, bash: 'sleep 0.4'}\n", start.Format(time.RFC3339)),
	})
	p.initStore(t) // the database exists before two processes start on it
	want := 0
	for at := start.Truncate(time.Hour).Add(time.Hour); !at.After(time.Now()); at = at.Add(time.Hour) {
		want++
	}
	d1 := p.startServe(t, "", "--daemon-id", "d1")
	d2 := p.startServe(t, "", "--daemon-id", "d2")
	d1.waitServing(30 * time.Second)
	d2.waitServing(30 * time.Second)
	st := p.open(t)
	until(t, 60*time.Second, "every catch-up run to succeed", func() bool {
		runs, _, err := st.ListRuns(context.Background(), "cu", 100, 0)
		if err != nil || len(runs) < want {
			return false
		}
		for _, r := range runs {
			if r.State != "success" {
				return false
			}
		}
		return true
	}, d1.logs, d2.logs)
	runs, _, _ := st.ListRuns(context.Background(), "cu", 100, 0)
	sort.Slice(runs, func(i, j int) bool { return runs[i].LogicalDate.Before(runs[j].LogicalDate) })
	owners := map[string]bool{}
	for i, r := range runs {
		owners[r.Owner] = true
		if i > 0 && r.StartDate.Before(runs[i-1].EndDate) {
			t.Errorf("run %s started %v before run %s ended %v", r.RunID, r.StartDate, runs[i-1].RunID, runs[i-1].EndDate)
		}
	}
	t.Logf("%d catch-up runs, owners %v", len(runs), owners)
	d1.stop(30 * time.Second)
	d2.stop(30 * time.Second)
}

// lockStore takes SQLite's write lock on the project's database from this process, as a busy
// writer would, until the returned function is called.
func lockStore(t *testing.T, p *project) func() {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(p.state, "poolflow.db")+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	released := false
	release := func() {
		if !released {
			released = true
			_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
			conn.Close()
			db.Close()
		}
	}
	t.Cleanup(release)
	return release
}

// TestBusyStoreAtStartWaits: serve started while another process holds the store's write lock
// past the 5-second bound does not exit: it answers /health with 503 and why, and starts once the
// lock is gone, running its @reboot DAG once.
func TestBusyStoreAtStartWaits(t *testing.T) {
	t.Parallel()
	p := newProject(t, "", map[string]string{"boot.yaml": "schedule: '@reboot'\nbash: echo booted\n"})
	p.initStore(t)
	release := lockStore(t, p)
	s := p.startServe(t, "", "--daemon-id", "s")
	until(t, 30*time.Second, "serve to say it waits for the store", func() bool {
		return s.logs.count("waiting to start") > 0 || s.done()
	}, s.logs)
	if s.done() {
		t.Fatalf("serve exited while the store was busy: %v", s.err)
	}
	addr := listenRE.FindStringSubmatch(s.logs.String())
	if addr == nil {
		t.Fatalf("serve did not listen while it waited:\n%s", s.logs.String())
	}
	resp, err := http.Get(addr[1] + "/api/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "unhealthy") ||
		!strings.Contains(string(body), "locked") {
		t.Fatalf("health while waiting: %d %s", resp.StatusCode, body)
	}
	release()
	s.waitServing(30 * time.Second)
	st := p.open(t)
	until(t, 20*time.Second, "the @reboot run to succeed", func() bool {
		runs, _, _ := st.ListRuns(context.Background(), "boot", 10, 0)
		return len(runs) == 1 && runs[0].State == "success"
	}, s.logs)
	s.stop(30 * time.Second)
	if runs, _, _ := st.ListRuns(context.Background(), "boot", 10, 0); len(runs) != 1 {
		t.Fatalf("%d @reboot runs, want 1", len(runs))
	}
}

// damage writes an open run whose queued_at cannot be read (a damaged row): every pass that
// reads the open runs fails with pool state unavailable (§4.9).
func damage(t *testing.T, p *project) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(p.state, "poolflow.db")+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO dag_runs (dag_id, run_id, run_type, logical_date, state, queued_at)
		VALUES ('ghost', 'r', 'manual', 0, 'running', 'not a time')`); err != nil {
		t.Fatal(err)
	}
}

// checkpoint records that a DAG's schedule has run up to at, as a daemon's earlier life would
// have: its next cron fires are due.
func checkpoint(t *testing.T, p *project, dagID string, at time.Time) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(p.state, "poolflow.db")+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO dags (dag_id, checkpoint, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (dag_id) DO UPDATE SET checkpoint = excluded.checkpoint`, dagID, at.UnixMicro(), at.UnixMicro()); err != nil {
		t.Fatal(err)
	}
}

// cpuTime is the user plus system CPU time process pid has used so far.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64) // fields 14 and 15 of stat, in clock ticks
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100
}

// TestFailedPassBacksOff: with a damaged row and a cron fire due every second, the loop backs
// off instead of spinning, and logs the failure once per distinct error per minute.
func TestFailedPassBacksOff(t *testing.T) {
	t.Parallel()
	p := newProject(t, "", map[string]string{"tick.yaml": "schedule: '@every 1s'\nbash: echo tick\n"})
	p.initStore(t)
	damage(t, p)
	checkpoint(t, p, "tick", time.Now().Add(-2*time.Second))
	s := p.startServe(t, "", "--daemon-id", "s")
	s.waitServing(30 * time.Second)
	cpu0 := cpuTime(t, s.cmd.Process.Pid)
	// Not a wait for anything: the CPU the loop uses over 4 s of wall time is what is measured
	// (the bug it guards woke the loop without any pass or line to wait for).
	time.Sleep(4 * time.Second)
	busy := cpuTime(t, s.cmd.Process.Pid) - cpu0
	s.stop(30 * time.Second)
	t.Logf("CPU in 4 s of back-off: %v", busy)
	// Waiting out a back-off costs no CPU: the due fire's timer must not wake the loop over and
	// over until the back-off ends (it did: one core busy).
	if busy > time.Second {
		t.Errorf("the daemon used %v of CPU in 4 s of back-off, want well under a second", busy)
	}
	if n := s.logs.count(`level=WARN msg="pass failed`); n < 1 || n > 2 {
		t.Errorf("%d \"pass failed\" lines in 4 s, want 1 (once per error per minute)", n)
	}
	if n := s.logs.count("Job tick could not enter pool"); n < 1 || n > 8 {
		t.Errorf("%d dropped-fire warnings in 4 s, want one per fire", n)
	}
}

// TestRebootSurvivesAFailedPass: an @reboot fire is consumed only by the commit that creates its
// run or by its §4.9 drop warning. A pass that fails after creating the run (here a write of its
// task instance is aborted by an injected trigger) leaves the fire pending, so once the write succeeds
// the run exists, once; a pass that cannot read pool state drops it with the warning, once.
func TestRebootSurvivesAFailedPass(t *testing.T) {
	t.Parallel()
	t.Run("failed write", func(t *testing.T) {
		t.Parallel()
		p := newProject(t, "", map[string]string{"boot.yaml": "schedule: '@reboot'\nbash: echo booted\n"})
		p.initStore(t)
		// A trigger makes every write of a task instance abort: the pass that creates the run
		// fails after creating it, until the trigger is dropped.
		db, err := sql.Open("sqlite3", "file:"+filepath.Join(p.state, "poolflow.db")+"?_busy_timeout=5000")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(`CREATE TRIGGER injected_failure BEFORE INSERT ON task_instances
			BEGIN SELECT RAISE(ABORT, 'injected failure'); END`); err != nil {
			t.Fatal(err)
		}
		s := p.serve(t, "--daemon-id", "s")
		if !s.logs.waitLine("pass failed", 20*time.Second) {
			t.Fatal("no pass failed")
		}
		if _, err := db.Exec(`DROP TRIGGER injected_failure`); err != nil {
			t.Fatal(err)
		}
		st := p.open(t)
		until(t, 20*time.Second, "the @reboot run to succeed", func() bool {
			runs, _, _ := st.ListRuns(context.Background(), "boot", 10, 0)
			return len(runs) == 1 && runs[0].State == "success"
		}, s.logs)
		s.stop(30 * time.Second)
	})
	t.Run("pool state unavailable", func(t *testing.T) {
		t.Parallel()
		p := newProject(t, "", map[string]string{"boot.yaml": "schedule: '@reboot'\nbash: echo booted\n"})
		p.initStore(t)
		damage(t, p)
		s := p.serve(t, "--daemon-id", "s")
		if !s.logs.waitLine("Job boot could not enter pool default: pool state is unavailable", 20*time.Second) {
			t.Fatal("no @reboot drop warning")
		}
		// Later failed passes must not warn again: two more fail (their warning, kept back by
		// its once-a-minute bound, is logged at debug).
		until(t, 20*time.Second, "two more failed passes", func() bool {
			return s.logs.count(`msg="pass failed; will retry"`) >= 3
		}, s.logs)
		s.stop(30 * time.Second)
		if n := s.logs.count("Job boot could not enter pool"); n != 1 {
			t.Errorf("%d @reboot drop warnings, want 1", n)
		}
	})
}

// TestStopIsBounded: SIGTERM ends serve within its shutdown grace plus a short bound even when a
// Go task ignores its cancellation; the abandoned task is logged and its entry replays later.
func TestStopIsBounded(t *testing.T) {
	t.Parallel()
	p := newProject(t, "", nil)
	s := p.startServe(t, stubborn, "--daemon-id", "s", "--shutdown-grace", "1s")
	s.waitServing(30 * time.Second)
	s.trigger("stubborn", "r")
	st := p.open(t)
	waitNotice(t, 20*time.Second, "admitted", "stubborn", "r", s.logs)
	if r := runOf(st, "stubborn", "r"); r.PK == 0 || tiOf(t, st, r, "ignore").State != "running" {
		t.Fatal("the Go task does not run once admitted")
	}
	began := time.Now()
	s.stop(15 * time.Second)
	t.Logf("stopped in %v", time.Since(began))
	if !strings.Contains(s.logs.String(), "ignores its cancellation; abandoning it") {
		t.Errorf("no line about the abandoned task")
	}
	if e := entryOf(st, "stubborn", "r", "ignore"); e.State != "waiting" || !e.Replay {
		t.Errorf("the abandoned task's entry is %s (replay %v), want waiting to replay", e.State, e.Replay)
	}
}

// TestFullDiskDoesNotBlockTask: a task whose log cannot be written (a full disk: the log is
// /dev/full) still runs to its end, its output dropped, and the error is reported.
func TestFullDiskDoesNotBlockTask(t *testing.T) {
	t.Parallel()
	p := newProject(t, "", map[string]string{
		"loud.yaml": "dag_id: loud\ntasks:\n  - {id: t, bash: 'head -c 2000000 /dev/zero | tr \"\\\\0\" x; echo; echo done'}\n",
	})
	logPath := runner.LogPath(p.state, "loud", "r1", "t", 1)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/full", logPath); err != nil {
		t.Fatal(err)
	}
	s := p.serve(t, "--daemon-id", "s")
	s.trigger("loud", "r1")
	if state := runEnded(t, 30*time.Second, "loud", "r1", s.logs); state != "success" {
		t.Fatalf("loud ended %s", state)
	}
	if !strings.Contains(s.logs.String(), "attempt log cannot be written") {
		t.Errorf("the log write error was not reported")
	}
	s.stop(30 * time.Second)
}

// TestSetsidGrandchildrenDie: a process a task starts in its own session (setsid) dies with its
// task (before the next task starts), and one whose task still runs dies with the daemon's
// shutdown.
func TestSetsidGrandchildrenDie(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	g1 := filepath.Join(tmp, "g1")
	g2 := pipe(t, tmp, "g2") // c writes its grandchild's pid here
	p := newProject(t, "", map[string]string{
		"sid.yaml": fmt.Sprintf("dag_id: sid\ntasks:\n"+
			"  - {id: a, bash: 'setsid sleep 300 > /dev/null 2>&1 < /dev/null & echo $! > %[1]s.tmp; mv %[1]s.tmp %[1]s'}\n"+
			"  - id: b\n    depends_on: [a]\n    bash: |\n      %s\n"+
			"  - {id: c, depends_on: [b], bash: 'setsid sleep 300 > /dev/null 2>&1 < /dev/null & echo $! > %[3]s; sleep 60'}\n",
			g1, notAliveCheck(g1), g2.Path),
	})
	s := p.serve(t, "--daemon-id", "s")
	s.trigger("sid", "r")
	st := p.open(t)
	pid2 := pidLine(t, g2, "c to run")
	if ti := tiOf(t, st, runOf(st, "sid", "r"), "c"); ti.State != "running" {
		t.Fatalf("c is %s while it runs", ti.State)
	}
	if ti := tiOf(t, st, runOf(st, "sid", "r"), "b"); ti.State != "success" {
		log, _ := os.ReadFile(runner.LogPath(p.state, "sid", "r", "b", 1))
		t.Fatalf("b %s: a's setsid'ed grandchild outlived a: %s", ti.State, log)
	}
	if !alive(pid2) {
		t.Fatal("c's grandchild died while c runs")
	}
	s.stop(30 * time.Second)
	exited(t, pid2, 5*time.Second, "c's grandchild to die with the daemon")
}
