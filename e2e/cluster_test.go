package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/storetest"
)

// TestDaemonsShareScheduledRun: three `poolflow serve` daemons on one store (a SQLite file; a
// PostgreSQL installation, each daemon with its own state folder, when POOLFLOW_TEST_POSTGRES is
// set) share a scheduled run's entries (§9): the pool's five slots are held by all three daemons
// (max_running 2 each), and each records the end of the attempts it ran; a daemon killed with -9 while it
// runs some of them has its share replayed by the others with the same try number; the run ends
// once — also after its owner is killed too and the last daemon adopts it — every task succeeds on try 1, and from the recorded intervals the pool is never exceeded.
func TestDaemonsShareScheduledRun(t *testing.T) {
	t.Parallel()
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			var target string
			if driver == "postgres" {
				target = storetest.PostgresSchema(t, storetest.PostgresDSN(t))
			}
			testShareScheduledRun(t, target)
		})
	}
}

// logs are the log buffers of the daemons still running: each of their passes logs a line.
func logs(daemons map[string]*serveProc) []*logBuf {
	var out []*logBuf
	for _, d := range daemons {
		out = append(out, d.logs)
	}
	return out
}

func testShareScheduledRun(t *testing.T, target string) {
	marks := t.TempDir()
	gate := filepath.Join(marks, "gate")
	year := time.Date(time.Now().UTC().Year(), 1, 1, 0, 0, 0, 0, time.UTC)
	var b strings.Builder
	fmt.Fprintf(&b, "dag_id: fan\nmax_active_tasks: 100\nschedule: '@yearly'\ncatchup: true\nstart_date: %s\ntasks:\n",
		year.Add(-time.Hour).Format(time.RFC3339))
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&b, "  - {id: t%02d, pool_requirements: {p: 1}, bash: 'echo $POOLFLOW_DAEMON_ID >> %s/$POOLFLOW_TASK_ID; "+
			"while [ ! -f %s ] && [ ! -f %s.$POOLFLOW_TASK_ID ]; do sleep 0.02; done'}\n", i, marks, gate, gate)
	}
	p := newProject(t, "max_running: 2\npools:\n  p: 5\n", map[string]string{"fan.yaml": b.String()})
	var st store.Store
	storeArgs := func(id string) (*project, []string) {
		if target == "" {
			return p, []string{"--daemon-id", id}
		}
		q := *p
		q.state = filepath.Join(p.dir, "state-"+id) // one state folder per host
		return &q, []string{"--store", target, "--daemon-id", id}
	}
	if target == "" {
		p.initStore(t)
		st = p.open(t)
	} else {
		p.run(t, "--store", target, "store", "migrate")
		var err error
		if st, err = store.Open(context.Background(), target, store.Options{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
	}
	daemons := map[string]*serveProc{}
	for _, id := range []string{"d1", "d2", "d3"} {
		q, args := storeArgs(id)
		daemons[id] = q.startServe(t, "", args...)
	}
	for _, d := range daemons {
		d.waitServing(30 * time.Second)
	}
	ctx := context.Background()
	var run store.Run
	until(t, 30*time.Second, "the scheduled run", func() bool {
		runs, _, _ := st.ListRuns(ctx, "fan", 10, 0)
		if len(runs) > 0 {
			run = runs[0]
		}
		return len(runs) > 0
	}, logs(daemons)...)
	holders := func() map[string]int {
		claims, err := st.ListClaims(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out, seen := map[string]int{}, map[int64]bool{}
		for _, c := range claims {
			if c.Pool == "p" && !seen[c.Entry] {
				seen[c.Entry] = true
				out[c.Daemon]++
			}
		}
		return out
	}
	until(t, 30*time.Second, "the pool to be held by the three daemons", func() bool {
		h := holders()
		return len(h) == 3 && h["d1"]+h["d2"]+h["d3"] == 5
	}, logs(daemons)...)
	run, _ = st.GetRunByPK(ctx, run.PK)
	if run.RunType != "schedule" || run.State != "running" {
		t.Fatalf("run %+v", run)
	}
	// The five running attempts end where they run, and five more start.
	claims, err := st.ListClaims(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := map[string]bool{}
	for _, c := range claims {
		e, err := st.EntryByID(ctx, c.Entry)
		if err != nil {
			t.Fatal(err)
		}
		first[e.TaskID] = true
	}
	for task := range first {
		touch(t, gate+"."+task)
	}
	until(t, 30*time.Second, "the first attempts to end and five more to start", func() bool {
		tis, _ := st.ListTaskInstances(ctx, run.PK)
		done := 0
		for _, ti := range tis {
			if first[ti.TaskID] && ti.State == "success" {
				done++
			}
		}
		h := holders()
		return done == len(first) && h["d1"]+h["d2"]+h["d3"] == 5
	}, logs(daemons)...)
	// Kill a daemon that runs another owner's entries.
	victim := ""
	for id, n := range holders() {
		if id != run.Owner && n > 0 && (victim == "" || id < victim) {
			victim = id
		}
	}
	daemons[victim].kill()
	delete(daemons, victim)
	until(t, 60*time.Second, "the victim's claims to be released", func() bool { return holders()[victim] == 0 }, logs(daemons)...)
	// Then the run's owner: the last daemon adopts the run and runs what is left.
	owner := run.Owner
	until(t, 60*time.Second, "the owner to hold slots", func() bool { return holders()[owner] > 0 }, logs(daemons)...)
	daemons[owner].kill()
	delete(daemons, owner)
	killed := map[string]bool{victim: true, owner: true}
	until(t, 60*time.Second, "the run to move to the last daemon", func() bool {
		r, _ := st.GetRunByPK(ctx, run.PK)
		return r.Owner != owner && holders()[owner] == 0
	}, logs(daemons)...)
	touch(t, gate)
	until(t, 60*time.Second, "the run to succeed", func() bool {
		r, _ := st.GetRunByPK(ctx, run.PK)
		return r.State == "success"
	}, logs(daemons)...)
	tis, err := st.ListTaskInstances(ctx, run.PK)
	if err != nil {
		t.Fatal(err)
	}
	ranBy, replayed, firstBy := map[string]int{}, 0, map[string]bool{}
	for _, ti := range tis {
		if ti.State != "success" || ti.TryNumber != 1 {
			t.Errorf("%s: %s try %d, want success on try 1", ti.TaskID, ti.State, ti.TryNumber)
		}
		data, err := os.ReadFile(filepath.Join(marks, ti.TaskID))
		if err != nil {
			t.Fatalf("%s never ran: %v", ti.TaskID, err)
		}
		lines := strings.Fields(string(data))
		last := lines[len(lines)-1]
		ranBy[last]++
		if killed[last] && !first[ti.TaskID] {
			t.Errorf("%s ended on the killed daemon %s", ti.TaskID, last)
		}
		if first[ti.TaskID] {
			firstBy[last] = true
		}
		if len(lines) > 1 {
			replayed++
			for _, on := range lines[:len(lines)-1] {
				if !killed[on] {
					t.Errorf("%s ran on %v: only the killed daemons' share runs again", ti.TaskID, lines)
				}
			}
		}
	}
	if replayed == 0 || len(firstBy) != 3 {
		t.Fatalf("replayed %d, first attempts ended on %v: want the killed daemons' share replayed, and the first "+
			"attempts recorded by the three daemons", replayed, firstBy)
	}
	atts, err := st.RunAttempts(ctx, run.PK)
	if err != nil || len(atts) != 12 {
		t.Fatalf("%d attempts recorded (%v), want 12", len(atts), err)
	}
	for _, a := range atts {
		data, _ := os.ReadFile(filepath.Join(marks, a.TaskID))
		if lines := strings.Fields(string(data)); a.Daemon != lines[len(lines)-1] {
			t.Errorf("attempt %s recorded as run by %q, ran last on %v", a.TaskID, a.Daemon, lines)
		}
	}
	if runs, _, _ := st.ListRuns(ctx, "fan", 10, 0); len(runs) != 1 {
		t.Fatalf("%d runs of fan, want 1", len(runs))
	}
	checkCapacity(t, holdsOf(t, st, run), map[string]int{"p": 5})
	t.Logf("owner %s, killed %s then the owner, attempts ended on %v, %d replayed", owner, victim, ranBy, replayed)
	for _, d := range daemons {
		d.stop(30 * time.Second)
	}
}
