package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	_ "github.com/poolflow/poolflow/store/postgres"
	"github.com/poolflow/poolflow/store/storetest"
)

// The daemon on PostgreSQL (SPEC §8, §9): each test has a database or schema of its own in the
// server of POOLFLOW_TEST_POSTGRES; without it they are skipped, loudly (required in CI).

// TestPostgresTwoDaemonsShareCapacity: two `dags test` processes on one PostgreSQL installation
// admit from the same pools at once, and from the recorded intervals no pool ever held more
// than its capacity.
func TestPostgresTwoDaemonsShareCapacity(t *testing.T) {
	t.Parallel()
	dsn := storetest.PostgresSchema(t, storetest.PostgresDSN(t))
	var b strings.Builder
	b.WriteString("dag_id: share\nmax_active_tasks: 100\ntasks:\n")
	reqs := []string{"{p: 1}", "{p: 1, q: 2}", "{q: 1}", "{p: 2}", "{q: 3}"}
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, "  - {id: t%02d, pool_requirements: %s, bash: 'sleep 0.05'}\n", i, reqs[i%len(reqs)])
	}
	p := newProject(t, "max_running: 32\npools:\n  p: 2\n  q:\n    slots: 3\n    ordering: strict\n", map[string]string{"share.yaml": b.String()})
	p.run(t, "--store", dsn, "store", "migrate")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	outs := make([]string, 2)
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := p.cmd("--store", dsn, "dags", "test", "share", "-o", "json")
			var out, errb bytes.Buffer
			c.Stdout, c.Stderr = &out, &errb
			errs[i] = c.Run()
			outs[i] = out.String() + errb.String()
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("daemon %d: %v\n%s", i, err, outs[i])
		}
	}
	st, err := store.Open(context.Background(), dsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, _, err := st.ListRuns(context.Background(), "share", 10, 0)
	if err != nil || len(runs) != 2 {
		t.Fatalf("runs: %v %v", runs, err)
	}
	var holds []hold
	for _, r := range runs {
		holds = append(holds, holdsOf(t, st, r)...)
	}
	checkCapacity(t, holds, map[string]int{"p": 2, "q": 3})
}

func (s *serveProc) get(path string) (int, string) {
	s.t.Helper()
	resp, err := http.Get(s.base + path)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// status GETs path and fails the test unless it answers want; it returns the body.
func (s *serveProc) status(path string, want int) string {
	s.t.Helper()
	got, body := s.get(path)
	if got != want {
		s.t.Fatalf("GET %s: %d %s, want %d", path, got, body, want)
	}
	return body
}

// failedPass waits for the daemon to log a failed pass (its store refused it).
func (s *serveProc) failedPass(limit time.Duration) {
	s.t.Helper()
	if !s.logs.waitLine("pass failed", limit) {
		s.t.Fatalf("no failed pass within %v:\n%s", limit, s.logs.String())
	}
}

// TestSchemaChangeWhileServing: a newer binary migrating the store while a daemon serves makes
// the daemon answer 503 "pool state is unavailable" and stop admitting, on both drivers.
func TestSchemaChangeWhileServing(t *testing.T) {
	t.Parallel()
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			var h storetest.Harness
			if driver == "postgres" {
				h = storetest.Postgres(t)
			} else {
				h = storetest.SQLite()
			}
			target := h.Target(t)
			p := newProject(t, "pools:\n  db: 1\n", map[string]string{"s.yaml": "dag_id: s\ntasks:\n  - {id: a, bash: 'true', pool_requirements: {db: 1}}\n"})
			s := p.serve(t, "--store", target)
			s.trigger("s", "before") // answered after the pass that created the run
			s.status("/api/v1/dags/s/dagRuns/before", http.StatusOK)
			h.Exec(t, target, fmt.Sprintf(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (%d, 'future', 0)`,
				store.SchemaVersion()+1))
			// The daemon's handle reads the newer version at its next look (the pass after
			// another connection's commit, or its bounded poll on PostgreSQL), then refuses all:
			// its pass fails, and so does every read of the API, which shares the handle.
			s.failedPass(10 * time.Second)
			body := s.status("/api/v1/pools", http.StatusServiceUnavailable)
			if !strings.Contains(body, "pool state is unavailable") {
				t.Fatalf("GET /pools: %s", body)
			}
			status, body := s.post("/api/v1/dags/s/dagRuns", `{"dag_run_id": "after"}`)
			if status != http.StatusServiceUnavailable || !strings.Contains(body, "pool state is unavailable") {
				t.Fatalf("trigger under a newer schema: %d %s", status, body)
			}
			s.stop(30 * time.Second)
			// Nothing was admitted under the newer schema: the refused run was never written.
			h.Exec(t, target, `DELETE FROM schema_migrations WHERE name = 'future'`)
			st, err := store.Open(context.Background(), target, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if _, err := st.GetRun(context.Background(), "s", "after"); err == nil {
				t.Fatal("a run was created under a newer schema")
			}
		})
	}
}

// TestPostgresLostDatabase: while PostgreSQL refuses the daemon (its connections ended, new
// ones refused), GET /pools and triggers answer 503 and the running attempt keeps running; when
// the database returns, the daemon carries on without a restart: the attempt's end is written,
// the run succeeds on its first try, and new runs are admitted.
func TestPostgresLostDatabase(t *testing.T) {
	t.Parallel()
	dsn := storetest.PostgresDatabase(t)
	db := storetest.DBName(t, dsn)
	tmp := t.TempDir()
	started, gate := pipe(t, tmp, "started"), pipe(t, tmp, "gate")
	p := newProject(t, "pools:\n  db: 1\n", map[string]string{"slow.yaml": "dag_id: slow\ntasks:\n" +
		fmt.Sprintf("  - {id: a, bash: 'echo $$ > %s; read _ < %s', pool_requirements: {db: 1}}\n", started.Path, gate.Path)})
	s := p.serve(t, "--store", dsn)
	s.trigger("slow", "r1")
	ti := "/api/v1/dags/slow/dagRuns/r1/taskInstances/a"
	pid := pidLine(t, started, "task a to start")
	if body := s.status(ti, http.StatusOK); !strings.Contains(body, `"state": "running"`) {
		t.Fatalf("task a once started: %s", body)
	}
	restore := func() { storetest.Admin(t, `ALTER DATABASE `+db+` WITH ALLOW_CONNECTIONS true`) }
	storetest.Admin(t, `ALTER DATABASE `+db+` WITH ALLOW_CONNECTIONS false`)
	t.Cleanup(restore)
	storetest.Admin(t, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, db)
	s.failedPass(15 * time.Second)
	body := s.status("/api/v1/pools", http.StatusServiceUnavailable)
	if !strings.Contains(body, "pool state is unavailable") {
		t.Fatalf("GET /pools while the database is away: %s", body)
	}
	if status, body := s.post("/api/v1/dags/slow/dagRuns", `{"dag_run_id": "away"}`); status != http.StatusServiceUnavailable {
		t.Fatalf("trigger while the database is away: %d %s", status, body)
	}
	// The attempt ends meanwhile; its end cannot be written yet.
	if err := gate.Send("go"); err != nil {
		t.Fatal(err)
	}
	exited(t, pid, 10*time.Second, "task a to end while the database is away")
	back := time.Now()
	restore()
	s.logs.waitPassSince(t, back, 30*time.Second) // a pass committed: the daemon carries on
	s.status("/api/v1/pools", http.StatusOK)
	if state := runEnded(t, 30*time.Second, "slow", "r1", s.logs); state != "success" {
		t.Fatalf("run r1 %s after the database returned", state)
	}
	if body := s.status(ti, http.StatusOK); !strings.Contains(body, `"state": "success"`) || !strings.Contains(body, `"try_number": 1,`) {
		t.Fatalf("the attempt ran again after the outage: %s", body)
	}
	s.trigger("slow", "r2")
	if !strings.Contains(s.logs.String(), "pass failed") {
		t.Fatalf("no failed pass logged during the outage:\n%s", s.logs.String())
	}
	if err := gate.Send("go"); err != nil { // r2's attempt
		t.Fatal(err)
	}
	s.stop(30 * time.Second)
}
