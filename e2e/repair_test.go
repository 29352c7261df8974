package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poolflow/poolflow/executor/runner"
	"github.com/poolflow/poolflow/internal/testwait"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/storetest"
	"github.com/poolflow/poolflow/vocab"
)

// Repairing runs with real processes (issue 18): poolflow serve daemons on a store, changed by
// poolflow tasks clear / mark and by the API, on SQLite and PostgreSQL.

// drivers are the stores a repair test runs on: SQLite, and PostgreSQL when
// POOLFLOW_TEST_POSTGRES names a server.
func drivers(t *testing.T, run func(t *testing.T, h storetest.Harness)) {
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			h := storetest.SQLite()
			if driver == "postgres" {
				h = storetest.Postgres(t)
			}
			run(t, h)
		})
	}
}

// rig is a project on one store target, its daemons and a handle on the store.
type rig struct {
	t      *testing.T
	p      *project
	target string
	st     store.Store
	served []*serveProc // its daemons: the tests wait on their pass lines
}

func newRig(t *testing.T, h storetest.Harness, cfg string, dags map[string]string) *rig {
	t.Helper()
	r := &rig{t: t, p: newProject(t, cfg, dags), target: h.Target(t)}
	r.p.run(t, "--store", r.target, "store", "migrate")
	r.st = h.Open(t, r.target, store.Options{})
	return r
}

// serve starts a daemon on the rig's store.
func (r *rig) serve(args ...string) *serveProc {
	r.t.Helper()
	s := r.p.serve(r.t, append([]string{"--store", r.target}, args...)...)
	r.served = append(r.served, s)
	return s
}

// logs are the rig's daemons' log buffers, for until.
func (r *rig) logs() []*logBuf {
	var out []*logBuf
	for _, s := range r.served {
		if !s.done() {
			out = append(out, s.logs)
		}
	}
	return out
}

// appears waits until the file at path exists (a task's script makes it), on inotify.
func appears(t *testing.T, path string) {
	t.Helper()
	if err := testwait.Until(path, 30*time.Second, func() bool { return exists(path) }); err != nil {
		t.Fatal(err)
	}
}

// cli runs a poolflow command on the rig's store and returns stdout, failing on an error.
func (r *rig) cli(args ...string) string {
	r.t.Helper()
	return r.p.run(r.t, append([]string{"--store", r.target}, args...)...)
}

func (r *rig) run(dagID, runID string) store.Run {
	r.t.Helper()
	run, err := r.st.GetRun(context.Background(), dagID, runID)
	if err != nil {
		r.t.Fatalf("run %s of %s: %v", runID, dagID, err)
	}
	return run
}

func (r *rig) tis(dagID, runID string) map[string]store.TaskInstance {
	r.t.Helper()
	tis, err := r.st.ListTaskInstances(context.Background(), r.run(dagID, runID).PK)
	if err != nil {
		r.t.Fatal(err)
	}
	m := map[string]store.TaskInstance{}
	for _, ti := range tis {
		m[ti.TaskID] = ti
	}
	return m
}

func (r *rig) attempts(dagID, runID, task string) []store.Attempt {
	r.t.Helper()
	as, err := r.st.ListAttempts(context.Background(), r.run(dagID, runID).PK, task)
	if err != nil {
		r.t.Fatal(err)
	}
	return as
}

// waitRun waits (reading the store, where another process writes, after each of its daemons'
// passes) until the run is in state.
func (r *rig) waitRun(dagID, runID string, st vocab.RunState) {
	r.t.Helper()
	until(r.t, 60*time.Second, fmt.Sprintf("run %s of %s to be %s", runID, dagID, st), func() bool {
		run, err := r.st.GetRun(context.Background(), dagID, runID)
		return err == nil && run.State == st
	}, r.logs()...)
}

func (r *rig) events(f store.EventFilter) []store.Event {
	r.t.Helper()
	evs, _, err := r.st.ListEvents(context.Background(), f)
	if err != nil {
		r.t.Fatal(err)
	}
	return evs
}

// do sends an API request to a daemon and returns its status and body.
func (s *serveProc) do(method, path, body string) (int, string) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// must sends an API request and fails unless it answers want.
func (s *serveProc) must(want int, method, path, body string) string {
	s.t.Helper()
	status, out := s.do(method, path, body)
	if status != want {
		s.t.Fatalf("%s %s %s: %d %s, want %d", method, path, body, status, out, want)
	}
	return out
}

// groupAlive reports whether a process of group pgid still runs (a zombie does not count).
func groupAlive(pgid int) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) > 2 && fields[0] != "Z" && fields[0] != "X" && fields[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

// TestClearFailedTaskWithDownstream: a run whose a and b failed (b runs after a whatever a
// did) and whose c succeeded; once the cause is fixed, tasks clear a --downstream re-runs a and
// b with try 2 while c keeps its result, and the clear's event names the CLI's actor. Then a
// clear of a over the API: the time from the request to the re-run's start is measured.
func TestClearFailedTaskWithDownstream(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, h storetest.Harness) {
		marker := filepath.Join(t.TempDir(), "fixed")
		r := newRig(t, h, "pools:\n  db: 1\n", map[string]string{"fix.yaml": fmt.Sprintf("dag_id: fix\ntasks:\n"+
			"  - {id: a, bash: 'test -f %[1]s', pool_requirements: {db: 1}}\n"+
			"  - {id: b, bash: 'test -f %[1]s', depends_on: [a], trigger_rule: all_done}\n"+
			"  - {id: c, bash: 'true'}\n", marker)})
		s := r.serve()
		s.trigger("fix", "r1")
		r.waitRun("fix", "r1", vocab.RunFailed)
		before := r.tis("fix", "r1")
		if before["a"].State != vocab.TaskFailed || before["b"].State != vocab.TaskFailed || before["c"].State != vocab.TaskSuccess {
			t.Fatalf("before the clear: %+v", before)
		}
		touch(t, marker)
		out := r.cli("tasks", "clear", "fix", "r1", "a", "--downstream")
		if !strings.Contains(out, "cleared task instances a, b in run r1 of dag fix") {
			t.Fatalf("tasks clear: %s", out)
		}
		r.waitRun("fix", "r1", vocab.RunSuccess)
		after := r.tis("fix", "r1")
		for task, try := range map[string]int{"a": 2, "b": 2, "c": 1} {
			if ti := after[task]; ti.State != vocab.TaskSuccess || ti.TryNumber != try {
				t.Errorf("%s after the clear: %s try %d, want success try %d", task, ti.State, ti.TryNumber, try)
			}
		}
		if c := after["c"]; !c.StartDate.Equal(before["c"].StartDate) || !c.EndDate.Equal(before["c"].EndDate) {
			t.Errorf("c ran again: %v-%v, was %v-%v", c.StartDate, c.EndDate, before["c"].StartDate, before["c"].EndDate)
		}
		for _, task := range []string{"a", "b"} {
			if as := r.attempts("fix", "r1", task); len(as) != 2 || as[0].State != vocab.TaskFailed || as[1].State != vocab.TaskSuccess {
				t.Errorf("attempts of %s: %+v", task, as)
			}
		}
		evs := r.events(store.EventFilter{DAGID: "fix", Action: vocab.ActionClear})
		if len(evs) != 1 || !strings.HasPrefix(evs[0].Actor, "cli:") || evs[0].Outcome != "ok" || evs[0].RunID != "r1" {
			t.Fatalf("clear events %+v", evs)
		}

		// Over the API: the failed try's re-run starts within a pass of the request.
		if err := os.Remove(marker); err != nil {
			t.Fatal(err)
		}
		var lat []time.Duration
		for i := range 5 {
			runID := fmt.Sprintf("l%d", i)
			s.trigger("fix", runID)
			r.waitRun("fix", runID, vocab.RunFailed)
			asked := time.Now()
			s.must(http.StatusOK, http.MethodPost, "/api/v1/dags/fix/clearTaskInstances",
				fmt.Sprintf(`{"dag_run_id": %q, "task_ids": ["c"], "only_failed": false, "dry_run": false}`, runID))
			r.waitRun("fix", runID, vocab.RunFailed)
			until(t, 30*time.Second, "c's second try to have started", func() bool {
				return len(r.attempts("fix", runID, "c")) == 2
			}, r.logs()...)
			lat = append(lat, r.attempts("fix", runID, "c")[1].StartDate.Sub(asked))
		}
		slices.Sort(lat)
		t.Logf("%s: from a clear request to its re-run's start: median %v, max %v (%v)", h.Driver, lat[len(lat)/2],
			lat[len(lat)-1], lat)
		if evs := r.events(store.EventFilter{DAGID: "fix", Action: vocab.ActionClear, Actor: "api:127.0.0.1"}); len(evs) != 5 {
			t.Errorf("the API's clear events: %d, want 5", len(evs))
		}
	})
}

// TestClearRunningAttempt: a clear of a running attempt stops its process group (the sleeping
// child too) and its try 2 starts only once the group is gone (the try checks it) and the
// claim on p was released (PoolHoldings: try 1's holding ended before try 2's began).
func TestClearRunningAttempt(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, h storetest.Harness) {
		dir := t.TempDir()
		pids := filepath.Join(dir, "pid")
		r := newRig(t, h, "pools:\n  p: 1\n", map[string]string{"hold.yaml": fmt.Sprintf("dag_id: hold\ntasks:\n"+
			"  - id: a\n    pool_requirements: {p: 1}\n    bash: |\n"+
			"      echo $$ > %[1]s.$POOLFLOW_TRY_NUMBER.tmp; mv %[1]s.$POOLFLOW_TRY_NUMBER.tmp %[1]s.$POOLFLOW_TRY_NUMBER\n"+
			"      if [ \"$POOLFLOW_TRY_NUMBER\" = 1 ]; then sleep 60; exit 0; fi\n"+
			"      p=$(cat %[1]s.1); for f in /proc/[0-9]*/stat; do\n"+
			"        set -- $(sed 's/.*) //' $f 2>/dev/null); [ \"$3\" = \"$p\" ] && [ \"$1\" != Z ] && { echo group $p alive; exit 1; }\n"+
			"      done; echo group $p gone\n", pids)})
		s := r.serve()
		since := time.Now().Add(-time.Minute)
		s.trigger("hold", "h1")
		appears(t, pids+".1")
		pgid := readPID(t, pids+".1")
		if !groupAlive(pgid) {
			t.Fatal("try 1's group is not running")
		}
		out := r.cli("tasks", "clear", "hold", "h1", "a")
		if !strings.Contains(out, "cleared task instance a") {
			t.Fatalf("tasks clear: %s", out)
		}
		r.waitRun("hold", "h1", vocab.RunSuccess)
		if groupAlive(pgid) {
			t.Errorf("try 1's process group %d outlived the clear", pgid)
		}
		as := r.attempts("hold", "h1", "a")
		if len(as) != 2 || as[0].ReasonCode != vocab.ReasonCleared || !strings.HasPrefix(as[0].Reason, "cleared by cli:") ||
			as[1].State != vocab.TaskSuccess {
			t.Fatalf("attempts of a: %+v", as)
		}
		if ti := r.tis("hold", "h1")["a"]; ti.TryNumber != 2 || ti.MaxTries != 2 {
			t.Errorf("a after the clear: try %d of %d (a cleared try uses up no retry)", ti.TryNumber, ti.MaxTries)
		}
		holds, err := r.st.PoolHoldings(context.Background(), since)
		if err != nil {
			t.Fatal(err)
		}
		var inP []store.Holding
		for _, h := range holds {
			if h.Pool == "p" {
				inP = append(inP, h)
			}
		}
		sort.Slice(inP, func(i, j int) bool { return inP[i].AdmittedAt.Before(inP[j].AdmittedAt) })
		if len(inP) != 2 || inP[0].EndedAt.IsZero() || inP[1].AdmittedAt.Before(inP[0].EndedAt) ||
			!as[1].StartDate.After(as[0].EndDate) {
			t.Fatalf("holdings of p %+v; attempts %+v: try 2 held p before try 1 let it go", inP, as)
		}
		if log, err := os.ReadFile(runner.LogPath(r.p.state, "hold", "h1", "a", 2)); err != nil ||
			!strings.Contains(string(log), fmt.Sprintf("group %d gone", pgid)) {
			t.Errorf("try 2's log: %s %v", log, err)
		}
	})
}

// TestMarkSuccessRunsDownstream: a running task marked success over the API is stopped and
// ends success, and the task after it runs; the mark's event names the client.
func TestMarkSuccessRunsDownstream(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := newRig(t, storetest.SQLite(), "", map[string]string{"mk.yaml": fmt.Sprintf("dag_id: mk\ntasks:\n"+
		"  - {id: a, bash: 'touch %[1]s/a-runs; sleep 60'}\n  - {id: b, bash: 'touch %[1]s/b-ran', depends_on: [a]}\n", dir)})
	s := r.serve()
	s.trigger("mk", "m1")
	appears(t, filepath.Join(dir, "a-runs"))
	var out struct {
		TaskInstances []struct {
			TaskID string          `json:"task_id"`
			State  vocab.TaskState `json:"state"`
		} `json:"task_instances"`
	}
	body := s.must(http.StatusOK, http.MethodPatch, "/api/v1/dags/mk/dagRuns/m1/taskInstances/a", `{"new_state": "success"}`)
	if err := json.Unmarshal([]byte(body), &out); err != nil || len(out.TaskInstances) != 1 {
		t.Fatalf("mark answer %s", body)
	}
	r.waitRun("mk", "m1", vocab.RunSuccess)
	if !exists(filepath.Join(dir, "b-ran")) {
		t.Error("b did not run after a was marked success")
	}
	tis := r.tis("mk", "m1")
	if tis["a"].State != vocab.TaskSuccess || tis["a"].ReasonCode != vocab.ReasonMarked || tis["b"].TryNumber != 1 {
		t.Errorf("after the mark: a %+v, b %+v", tis["a"], tis["b"])
	}
	evs := r.events(store.EventFilter{DAGID: "mk", Action: vocab.ActionMark})
	if len(evs) != 1 || evs[0].Actor != "api:127.0.0.1" || evs[0].Outcome != "ok" || !strings.Contains(evs[0].Params, `"success"`) {
		t.Fatalf("mark events %+v", evs)
	}
}

// TestMarkWhileExiting: a mark that comes as the attempt exits on its own: one outcome wins and
// is recorded once — one attempt, one mark event, the task success either way (marked while it
// ran, or after its failure), and the task after it run once.
func TestMarkWhileExiting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := newRig(t, storetest.SQLite(), "", map[string]string{"ex.yaml": fmt.Sprintf("dag_id: ex\ntasks:\n"+
		"  - {id: a, bash: 'touch %[1]s/$POOLFLOW_RUN_ID.a; while [ ! -f %[1]s/$POOLFLOW_RUN_ID.go ]; do sleep 0.01; done; exit 1'}\n"+
		"  - {id: b, bash: 'true', depends_on: [a]}\n", dir)})
	s := r.serve()
	for i := range 4 {
		runID := fmt.Sprintf("x%d", i)
		s.trigger("ex", runID)
		appears(t, filepath.Join(dir, runID+".a"))
		touch(t, filepath.Join(dir, runID+".go")) // a exits 1 now, while the mark is on its way
		status, body := s.do(http.MethodPatch, "/api/v1/dags/ex/dagRuns/"+runID+"/taskInstances/a", `{"new_state": "success"}`)
		if status != http.StatusOK {
			t.Fatalf("mark %s: %d %s", runID, status, body)
		}
		r.waitRun("ex", runID, vocab.RunSuccess)
		if as := r.attempts("ex", runID, "a"); len(as) != 1 {
			t.Errorf("%s: attempts of a %+v, want one", runID, as)
		}
		if as := r.attempts("ex", runID, "b"); len(as) != 1 || as[0].State != vocab.TaskSuccess {
			t.Errorf("%s: attempts of b %+v, want one success", runID, as)
		}
		if ti := r.tis("ex", runID)["a"]; ti.State != vocab.TaskSuccess || ti.TryNumber != 1 {
			t.Errorf("%s: a %s try %d", runID, ti.State, ti.TryNumber)
		}
		if evs := r.events(store.EventFilter{DAGID: "ex", RunID: runID, Action: vocab.ActionMark}); len(evs) != 1 || evs[0].Outcome != "ok" {
			t.Errorf("%s: mark events %+v", runID, evs)
		}
	}
}

// TestClearOfDeadDaemonsRun: a failed run of a daemon killed with -9 is cleared through another
// daemon's API and through the CLI: the live daemon applies both, reopens the run as its own and
// runs it to success.
func TestClearOfDeadDaemonsRun(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, h storetest.Harness) {
		marker := filepath.Join(t.TempDir(), "fixed")
		r := newRig(t, h, "", map[string]string{"d.yaml": fmt.Sprintf("dag_id: d\ntasks:\n"+
			"  - {id: a, bash: 'test -f %[1]s'}\n  - {id: b, bash: 'true', depends_on: [a]}\n", marker)})
		a := r.serve("--daemon-id", "a")
		b := r.serve("--daemon-id", "b")
		a.trigger("d", "r1")
		a.trigger("d", "r2")
		r.waitRun("d", "r1", vocab.RunFailed)
		r.waitRun("d", "r2", vocab.RunFailed)
		if run := r.run("d", "r1"); run.Owner != "a" {
			t.Fatalf("r1 belongs to %s", run.Owner)
		}
		a.kill()
		touch(t, marker)
		b.must(http.StatusOK, http.MethodPost, "/api/v1/dags/d/clearTaskInstances",
			`{"dag_run_id": "r1", "task_ids": ["a"], "include_downstream": true, "dry_run": false}`)
		out := r.cli("tasks", "clear", "d", "r2", "--only-failed")
		if !strings.Contains(out, "cleared task instances a, b in run r2") {
			t.Fatalf("tasks clear of r2: %s", out)
		}
		for _, id := range []string{"r1", "r2"} {
			r.waitRun("d", id, vocab.RunSuccess)
			if run := r.run("d", id); run.Owner != "b" {
				t.Errorf("%s reopened as %s's", id, run.Owner)
			}
			if ti := r.tis("d", id)["a"]; ti.TryNumber != 2 {
				t.Errorf("%s: a try %d", id, ti.TryNumber)
			}
		}
		evs := r.events(store.EventFilter{DAGID: "d", Action: vocab.ActionClear})
		if len(evs) != 2 || evs[0].Outcome != "ok" || evs[1].Outcome != "ok" {
			t.Fatalf("clear events %+v", evs)
		}
		b.stop(30 * time.Second)
	})
}

// TestConcurrentClears: two clears of one run sent at once, one to each daemon's API: both are
// applied, once each (two events, ok), and no attempt of the task ever ran twice at once.
func TestConcurrentClears(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, h storetest.Harness) {
		marker := filepath.Join(t.TempDir(), "fixed")
		r := newRig(t, h, "pools:\n  db: 1\n", map[string]string{"cc.yaml": fmt.Sprintf("dag_id: cc\ntasks:\n"+
			"  - {id: a, bash: 'sleep 0.3; test -f %[1]s', pool_requirements: {db: 1}}\n"+
			"  - {id: b, bash: 'true', depends_on: [a]}\n", marker)})
		d1 := r.serve("--daemon-id", "d1")
		d2 := r.serve("--daemon-id", "d2")
		d1.trigger("cc", "r1")
		r.waitRun("cc", "r1", vocab.RunFailed)
		touch(t, marker)
		var wg sync.WaitGroup
		statuses := make([]int, 2)
		for i, d := range []*serveProc{d1, d2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i], _ = d.do(http.MethodPost, "/api/v1/dags/cc/clearTaskInstances",
					`{"dag_run_id": "r1", "task_ids": ["a"], "include_downstream": true, "only_failed": false, "dry_run": false}`)
			}()
		}
		wg.Wait()
		for i, st := range statuses {
			if st != http.StatusOK && st != http.StatusAccepted {
				t.Fatalf("clear %d: %d", i, st)
			}
		}
		r.waitRun("cc", "r1", vocab.RunSuccess)
		evs := r.events(store.EventFilter{DAGID: "cc", Action: vocab.ActionClear})
		if len(evs) != 2 || evs[0].Outcome != "ok" || evs[1].Outcome != "ok" {
			t.Fatalf("clear events %+v", evs)
		}
		as := r.attempts("cc", "r1", "a")
		ti := r.tis("cc", "r1")["a"]
		if len(as) != ti.TryNumber || ti.State != vocab.TaskSuccess || ti.TryNumber < 2 || ti.TryNumber > 3 {
			t.Fatalf("a: %s try %d, attempts %+v", ti.State, ti.TryNumber, as)
		}
		for i := 1; i < len(as); i++ {
			if as[i].TryNumber != i+1 || as[i].StartDate.Before(as[i-1].EndDate) {
				t.Errorf("try %d started at %v, before try %d ended at %v", as[i].TryNumber, as[i].StartDate, as[i-1].TryNumber,
					as[i-1].EndDate)
			}
		}
		if bs := r.attempts("cc", "r1", "b"); len(bs) != 1 {
			t.Errorf("b ran %d times", len(bs))
		}
		d1.stop(30 * time.Second)
		d2.stop(30 * time.Second)
	})
}

// TestClearWhileStoreUnavailable: a clear while another process holds SQLite's write lock past
// the 5-second bound answers 503 and changes nothing: once the lock is gone and the daemon has
// passed again, the task is still failed with its one try, and no clear was recorded.
func TestClearWhileStoreUnavailable(t *testing.T) {
	t.Parallel()
	p := newProject(t, "", map[string]string{"u.yaml": "dag_id: u\ntasks:\n  - {id: a, bash: 'exit 1'}\n",
		"q.yaml": "dag_id: q\ntasks:\n  - {id: a, bash: 'true'}\n"})
	s := p.serve(t)
	s.trigger("u", "r1")
	st := p.open(t)
	until(t, 30*time.Second, "u to fail", func() bool { return runOf(st, "u", "r1").State == vocab.RunFailed }, s.logs)
	release := lockStore(t, p)
	status, body := s.do(http.MethodPost, "/api/v1/dags/u/clearTaskInstances", `{"dag_run_id": "r1", "dry_run": false}`)
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "pool state is unavailable") {
		t.Fatalf("clear while the store is locked: %d %s", status, body)
	}
	release()
	s.trigger("q", "after") // a pass after the lock: the clear, had it been kept, would be applied by now
	until(t, 30*time.Second, "q to run", func() bool { return runOf(st, "q", "after").State == vocab.RunSuccess }, s.logs)
	if r := runOf(st, "u", "r1"); r.State != vocab.RunFailed {
		t.Errorf("u's run is %s", r.State)
	}
	if ti := tiOf(t, st, runOf(st, "u", "r1"), "a"); ti.State != vocab.TaskFailed || ti.TryNumber != 1 {
		t.Errorf("a after the refused clear: %s try %d", ti.State, ti.TryNumber)
	}
	if evs, _, _ := st.ListEvents(context.Background(), store.EventFilter{Action: vocab.ActionClear}); len(evs) != 0 {
		t.Errorf("a clear that was not applied left events %+v", evs)
	}
}
