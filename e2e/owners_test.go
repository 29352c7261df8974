package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/poolflow/poolflow/executor/runner"
	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/store"
)

// Several owners on one store (§9): a dead owner's slots come back, its leader-owned work moves,
// its bound work waits node_unavailable without holding room, and an owner id has one live
// process at a time.

// notAliveCheck is a bash test that fails (prints overlap, exits 1) while the process whose pid
// is in file runs: a task that must not overlap another one's processes starts with it.
func notAliveCheck(file string) string {
	return fmt.Sprintf(`p=$(cat %s); s=$(awk '{print $3}' /proc/$p/stat 2>/dev/null); `+
		`if [ -n "$s" ] && [ "$s" != Z ]; then echo overlap with $p; exit 1; fi; echo ok`, file)
}

func readPID(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return pid
}

func exists(file string) bool {
	_, err := os.Stat(file)
	return err == nil
}

func runOf(st store.Store, dagID, runID string) store.Run {
	r, _ := st.GetRun(context.Background(), dagID, runID)
	return r
}

func tiOf(t *testing.T, st store.Store, run store.Run, taskID string) store.TaskInstance {
	t.Helper()
	tis, err := st.ListTaskInstances(context.Background(), run.PK)
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range tis {
		if ti.TaskID == taskID {
			return ti
		}
	}
	t.Fatalf("no task %s in run %s", taskID, run.RunID)
	return store.TaskInstance{}
}

func entryOf(st store.Store, dagID, runID, taskID string) store.Entry {
	r := runOf(st, dagID, runID)
	e, _ := st.LatestEntry(context.Background(), r.PK, taskID)
	_ = explain.Fill(context.Background(), st, time.Now(), &e) // why it waits, as a reader sees it
	return e
}

// TestInterruptedDagsTestReleasesItsSlots: a `dags test` killed with -9, or interrupted with
// Ctrl-C, leaves no slot held and no entry keeping room: a serve daemon's task in the same pool
// runs, the test run fails with "test process gone", and commands on it say it has ended.
func TestInterruptedDagsTestReleasesItsSlots(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			started := pipe(t, tmp, "lt.pid")
			p := newProject(t, "pools:\n  db: 1\n", map[string]string{
				"lt.yaml": fmt.Sprintf("dag_id: lt\ntasks:\n  - {id: t, pool_requirements: {db: 1}, bash: 'echo $$ > %[1]s; sleep 60'}\n"+
					"  - {id: u, pool_requirements: {db: 1}, bash: 'echo u'}\n", started.Path),
				"mine.yaml": "dag_id: mine\ntasks:\n  - {id: a, pool_requirements: {db: 1}, bash: 'echo mine'}\n",
			})
			s := p.serve(t, "--daemon-id", "s")
			test := p.cmd("dags", "test", "lt")
			if err := test.Start(); err != nil {
				t.Fatal(err)
			}
			testDone := make(chan error, 1)
			go func() { testDone <- test.Wait() }()
			st := p.open(t)
			// The task runs once its claim is committed.
			taskPID := pidLine(t, started, "the test run's task to hold db")
			if claims, err := st.ListClaims(context.Background()); err != nil || len(claims) == 0 || !strings.HasPrefix(claims[0].Label, "lt.t") {
				t.Fatalf("claims while lt.t runs: %+v %v", claims, err)
			}
			// The trigger is answered once its task is queued; why it waits is computed on read.
			s.trigger("mine", "m1")
			if e := entryOf(st, "mine", "m1", "a"); !strings.Contains(e.Reason, "held by lt.t try 1") {
				t.Fatalf("mine does not wait behind the test run: %s %q", e.State, e.Reason)
			}
			if err := test.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-testDone:
			case <-time.After(20 * time.Second):
				t.Fatal("dags test did not exit")
			}
			if state := runEnded(t, 20*time.Second, "mine", "m1", s.logs); state != "success" {
				t.Fatalf("mine %s once the test process is gone", state)
			}
			runs, _, err := st.ListRuns(context.Background(), "lt", 10, 0)
			if err != nil || len(runs) != 1 {
				t.Fatalf("lt runs %v %v", runs, err)
			}
			if r := runs[0]; r.State != "failed" || r.Reason != "test process gone" {
				t.Errorf("test run %s %q, want failed \"test process gone\"", r.State, r.Reason)
			}
			if alive(taskPID) {
				t.Errorf("the test run's task %d outlived its process", taskPID)
			}
			if claims, _ := st.ListClaims(context.Background()); len(claims) != 0 {
				t.Errorf("claims left: %+v", claims)
			}
			if waiting, _ := st.ListEntries(context.Background(), "waiting"); len(waiting) != 0 {
				t.Errorf("waiting entries left: %+v", waiting)
			}
			c := p.cmd("tasks", "cancel", "lt", runs[0].RunID, "u")
			if out, err := c.CombinedOutput(); err == nil || !strings.Contains(string(out), "has ended") {
				t.Errorf("cancel on the dead test run: %v %s", err, out)
			}
		})
	}
}

// TestDeadDaemonsWorkIsTakenOver kills a daemon with -9 while it runs a catch-up run (leader
// owned) and a manual run (bound to it) holding backfill pool c, and another daemon waits for c:
// the dead daemon's processes die with it, the live daemon gets c only once they are gone (its
// task checks), takes the catch-up run over and replays it, leaves the manual run waiting
// node_unavailable without holding room, and applies an operator's cancel on it.
func TestDeadDaemonsWorkIsTakenOver(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	marker := filepath.Join(tmp, "lead-ran")
	apid, led := pipe(t, tmp, "a.pid"), pipe(t, tmp, "lead")
	apidFile := filepath.Join(tmp, "hold.pid") // mine checks that the process in it is gone
	start := time.Now().Add(-61 * time.Minute).UTC().Format(time.RFC3339)
	p := newProject(t, "pools:\n  c: 1\n", map[string]string{
		"lead.yaml": fmt.Sprintf("dag_id: lead\nschedule: '@hourly'\ncatchup: true\nstart_date: %s\ntasks:\n"+
			"  - {id: t, bash: 'if [ -f %[2]s ]; then echo replayed; exit 0; fi; touch %[2]s; echo ran > %[3]s; sleep 60'}\n", start, marker, led.Path),
		"bound.yaml": fmt.Sprintf("dag_id: bound\ntasks:\n  - {id: hold, pool_requirements: {c: 1}, bash: 'echo $$ > %[2]s.tmp; mv %[2]s.tmp %[2]s; echo $$ > %[1]s; sleep 60'}\n"+
			"  - {id: later, pool_requirements: {c: 1}, bash: 'echo later'}\n", apid.Path, apidFile),
		"mine.yaml": fmt.Sprintf("dag_id: mine\ntasks:\n  - id: a\n    pool_requirements: {c: 1}\n    bash: |\n      %s\n", notAliveCheck(apidFile)),
	})
	a := p.serve(t, "--daemon-id", "a")
	a.trigger("bound", "b1")
	st := p.open(t)
	holdPID := pidLine(t, apid, "a to run bound.hold")
	line(t, led, "a to run the catch-up run")
	b := p.serve(t, "--daemon-id", "b")
	// The trigger is answered once its task is queued; why it waits is computed on read.
	b.trigger("mine", "m1")
	if e := entryOf(st, "mine", "m1", "a"); !strings.Contains(e.Reason, "held by bound.hold try 1") {
		t.Fatalf("mine does not wait for c: %s %q", e.State, e.Reason)
	}
	leadRuns, _, _ := st.ListRuns(context.Background(), "lead", 10, 0)
	if len(leadRuns) != 1 || leadRuns[0].Owner != "a" {
		t.Fatalf("lead runs before the kill: %+v", leadRuns)
	}
	first := leadRuns[0]

	a.kill()
	exited(t, holdPID, 5*time.Second, "a's task to die with a")
	runEnded(t, 20*time.Second, "mine", "m1", b.logs)
	if r := runOf(st, "mine", "m1"); r.State != "success" {
		log, _ := os.ReadFile(runner.LogPath(p.state, "mine", "m1", "a", 1))
		t.Fatalf("mine %s: %s", r.State, log)
	}
	runEnded(t, 20*time.Second, "lead", first.RunID, b.logs)
	if r := runOf(st, "lead", first.RunID); r.Owner != "b" || r.State != "success" {
		t.Fatalf("the catch-up run %s owned by %s, want success by b", r.State, r.Owner)
	}
	log, err := os.ReadFile(runner.LogPath(p.state, "lead", first.RunID, "t", 1))
	if err != nil || !strings.Contains(string(log), "--- replay ---\nreplayed") {
		t.Errorf("the taken-over attempt did not replay: %q %v", log, err)
	}
	until(t, 10*time.Second, "bound's entries to wait node_unavailable", func() bool {
		h, l := entryOf(st, "bound", "b1", "hold"), entryOf(st, "bound", "b1", "later")
		return h.State == "waiting" && h.ReasonCode == "node_unavailable" && l.ReasonCode == "node_unavailable" &&
			strings.Contains(l.Reason, "bound to a")
	}, b.logs)
	if r := runOf(st, "bound", "b1"); r.Owner != "a" || r.State != "running" {
		t.Errorf("the manual run moved: owner %s state %s", r.Owner, r.State)
	}
	out, err := p.cmd("tasks", "cancel", "bound", "b1", "later").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "applied") {
		t.Fatalf("cancel on the dead daemon's run: %v %s", err, out)
	}
	if ti := tiOf(t, st, runOf(st, "bound", "b1"), "later"); ti.State != "failed" || ti.Reason != "cancelled by operator" {
		t.Errorf("later after cancel: %s %q", ti.State, ti.Reason)
	}
	b.stop(30 * time.Second)
}

// TestSameDaemonIDRefused: a second serve on the same folder without --daemon-id gets the same
// default id and refuses to start, naming the live one; the first one's attempt goes on and no
// entry of it changes state.
func TestSameDaemonIDRefused(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	gate := filepath.Join(tmp, "go")
	started := pipe(t, tmp, "pid")
	p := newProject(t, "pools:\n  db: 1\n", map[string]string{
		"w.yaml": fmt.Sprintf("dag_id: w\ntasks:\n  - {id: a, pool_requirements: {db: 1}, bash: 'echo $$ > %[1]s; while [ ! -f %[2]s ]; do sleep 0.05; done'}\n"+
			"  - {id: b, bash: 'echo b'}\n", started.Path, gate),
	})
	first := p.serve(t)
	first.trigger("w", "r1")
	st := p.open(t)
	pid := pidLine(t, started, "a to run")
	until(t, 20*time.Second, "b to finish", func() bool { return entryOf(st, "w", "r1", "b").State == "done" }, first.logs)
	second := p.startServe(t, "")
	select {
	case <-second.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the second daemon did not refuse to start:\n%s", second.logs.String())
	}
	want := fmt.Sprintf("is held by a live daemon: pid %d", first.pid())
	if second.err == nil || !strings.Contains(second.logs.String(), want) {
		t.Fatalf("second daemon: %v, want an error containing %q:\n%s", second.err, want, second.logs.String())
	}
	if !alive(pid) {
		t.Fatal("the second daemon's start killed the first one's attempt")
	}
	if e := entryOf(st, "w", "r1", "b"); e.State != "done" {
		t.Errorf("b's entry is %s, want done", e.State)
	}
	touch(t, gate)
	if state := runEnded(t, 20*time.Second, "w", "r1", first.logs); state != "success" {
		t.Fatalf("run %s, want success", state)
	}
	first.stop(30 * time.Second)
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}
