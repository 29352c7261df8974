package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/storetest"
	"github.com/poolflow/poolflow/vocab"
)

// TestEveryNodeOnThreeDaemons (issue 25): an every_node job on three `poolflow serve` daemons
// over one store (a SQLite file; PostgreSQL with a state folder per daemon) fires on each of
// them, each fire a node run bound to the daemon that fired it: every daemon runs its own fires
// only, one at a time (max_active_runs 1 counts per daemon, not across them), while the pool
// the job needs stays shared. A daemon killed with -9 leaves its run waiting node_unavailable —
// no other daemon takes it over, though they have room — and, restarted under its id, runs it
// again and goes on firing. The API lists one daemon's runs (?daemon=) and names the daemon of
// each.
func TestEveryNodeOnThreeDaemons(t *testing.T) {
	t.Parallel()
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			var target string
			if driver == "postgres" {
				target = storetest.PostgresSchema(t, storetest.PostgresDSN(t))
			}
			testEveryNode(t, target)
		})
	}
}

func testEveryNode(t *testing.T, target string) {
	marks := t.TempDir()
	ran := pipe(t, marks, "ran")
	// Each attempt says where it runs and which run it is, then waits for its daemon's gate.
	dagYAML := "schedule: '@every 2s'\nevery_node: true\nmax_active_runs: 1\npool_requirements: {p: 1}\n" +
		"bash: 'echo $POOLFLOW_DAEMON_ID $POOLFLOW_RUN_ID > " + ran.Path + "; " +
		"while [ ! -e " + marks + "/gate.$POOLFLOW_DAEMON_ID ]; do sleep 0.02; done'\n"
	p := newProject(t, "pools:\n  p: 3\n", map[string]string{"sweep.yaml": dagYAML})
	ctx := context.Background()
	var st store.Store
	start := func(id string) *serveProc {
		q, args := p, []string{"--daemon-id", id}
		if target != "" {
			q2 := *p
			q2.state = filepath.Join(p.dir, "state-"+id) // one state folder per host
			q, args = &q2, append(args, "--store", target)
		}
		s := q.startServe(t, "", args...)
		s.waitServing(30 * time.Second)
		return s
	}
	if target == "" {
		p.initStore(t)
		st = p.open(t)
	} else {
		p.run(t, "--store", target, "store", "migrate")
		var err error
		if st, err = store.Open(ctx, target, store.Options{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
	}
	daemons := map[string]*serveProc{}
	for _, id := range []string{"d1", "d2", "d3"} {
		daemons[id] = start(id)
	}
	// runOf is the daemon a node run is bound to, read from the store.
	runOf := func(runID string) store.Run {
		r, err := st.GetRun(ctx, "sweep", runID)
		if err != nil {
			t.Fatalf("run %s: %v", runID, err)
		}
		return r
	}
	// took reads one attempt's line and checks it ran on the daemon its run is bound to.
	took := func(what string) (daemon, runID string) {
		f := strings.Fields(line(t, ran, what))
		if len(f) != 2 {
			t.Fatalf("%s: line %q", what, f)
		}
		r := runOf(f[1])
		if r.RunType != vocab.RunNode || r.Owner != f[0] {
			t.Fatalf("%s: run %s (%s) of %s ran on %s", what, r.RunID, r.RunType, r.Owner, f[0])
		}
		return f[0], f[1]
	}
	// The first fire runs on all three daemons at once: the pool has room for them.
	first := map[string]string{}
	for len(first) < 3 {
		d, run := took("the first fires")
		if first[d] != "" {
			t.Fatalf("%s started a second run %s while its first %s runs (max_active_runs 1)", d, run, first[d])
		}
		first[d] = run
	}
	// Each daemon fires again while its first run still runs: the new fire waits for its own
	// daemon's run, not for the others'.
	nodeRuns := func(daemon string, states ...vocab.RunState) []store.Run {
		runs, _, err := st.ListRunsWhere(ctx, store.RunFilter{DAGID: "sweep", Owners: []string{daemon}, States: states})
		if err != nil {
			t.Fatal(err)
		}
		return runs
	}
	until(t, 30*time.Second, "a second fire on each daemon", func() bool {
		for d := range daemons {
			if len(nodeRuns(d, vocab.RunQueued)) == 0 {
				return false
			}
		}
		return true
	}, logs(daemons)...)
	for d := range daemons {
		if n := len(nodeRuns(d, vocab.RunRunning)); n != 1 {
			t.Errorf("%s runs %d node runs, want 1 (max_active_runs 1 per daemon)", d, n)
		}
	}

	// The API names each run's daemon and lists one daemon's runs.
	var page struct {
		Runs []struct {
			RunID   string  `json:"dag_run_id"`
			RunType string  `json:"run_type"`
			Daemon  *string `json:"daemon"`
		} `json:"dag_runs"`
	}
	code, _, body := daemons["d1"].request(http.MethodGet, "/api/v1/dags/sweep/dagRuns?daemon=d2&limit=100", "", nil)
	if code != http.StatusOK {
		t.Fatalf("runs of d2: %d %s", code, body)
	}
	if err := json.Unmarshal([]byte(body), &page); err != nil || len(page.Runs) < 2 {
		t.Fatalf("runs of d2: %v %s", err, body)
	}
	for _, r := range page.Runs {
		if r.RunType != "node" || r.Daemon == nil || *r.Daemon != "d2" || !strings.HasPrefix(r.RunID, "node__") {
			t.Errorf("d2's runs list %+v", r)
		}
	}

	// d3 dies with its first run's attempt running: the run waits for d3, d1 and d2 go on.
	victim := first["d3"]
	daemons["d3"].kill()
	alive := map[string]*serveProc{"d1": daemons["d1"], "d2": daemons["d2"]}
	waitReason := func() string {
		code, _, body := alive["d1"].request(http.MethodGet, "/api/v1/dags/sweep/dagRuns/"+victim+"/taskInstances/sweep", "", nil)
		if code != http.StatusOK {
			t.Fatalf("d3's task through d1: %d %s", code, body)
		}
		var ti struct {
			WaitReason *struct {
				Code string `json:"code"`
			} `json:"wait_reason"`
		}
		if err := json.Unmarshal([]byte(body), &ti); err != nil {
			t.Fatal(err)
		}
		if ti.WaitReason == nil {
			return ""
		}
		return ti.WaitReason.Code
	}
	until(t, 60*time.Second, "d3's run to wait for d3", func() bool {
		return waitReason() == string(vocab.ReasonNodeAway)
	}, logs(alive)...)
	// d1 and d2 finish their runs and run their next fires; none of d3's is among them.
	for _, d := range []string{"d1", "d2"} {
		touch(t, filepath.Join(marks, "gate."+d))
	}
	seen := map[string]int{}
	for seen["d1"] < 2 || seen["d2"] < 2 {
		d, _ := took("d1's and d2's next fires")
		seen[d]++
	}
	if code := waitReason(); code != string(vocab.ReasonNodeAway) {
		t.Fatalf("d3's run waits %q after d1 and d2 ran on, want node_unavailable", code)
	}

	// d3 comes back: it runs its own run again, then fires from its start.
	touch(t, filepath.Join(marks, "gate.d3"))
	daemons["d3"] = start("d3")
	until(t, 60*time.Second, "d3's run to end after its return", func() bool {
		return runOf(victim).State.Terminal()
	}, logs(daemons)...)
	if r := runOf(victim); r.State != vocab.RunSuccess || r.Owner != "d3" {
		t.Fatalf("d3's run after its return: %s, owner %s", r.State, r.Owner)
	}
	until(t, 60*time.Second, "a fire of d3 after its return", func() bool {
		for _, r := range nodeRuns("d3", vocab.RunSuccess) {
			if r.QueuedAt.After(runOf(victim).EndDate) {
				return true
			}
		}
		return false
	}, logs(daemons)...)
	for _, d := range daemons {
		d.stop(30 * time.Second)
	}

	// Every attempt of every node run ran on the daemon its run is bound to.
	runs, _, err := st.ListRunsWhere(ctx, store.RunFilter{DAGID: "sweep", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		atts, err := st.ListAttempts(ctx, r.PK, "sweep")
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range atts {
			if a.Daemon != r.Owner {
				t.Errorf("run %s of %s: try %d ran on %s", r.RunID, r.Owner, a.TryNumber, a.Daemon)
			}
		}
	}
}
