package cli

import (
	"context"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/storetest"
)

// TestStoreMigrate: `store migrate` migrates the store --store names (or the default file under
// the state folder) and prints its version; a bad target is a usage error.
func TestStoreMigrate(t *testing.T) {
	t.Parallel()
	p := newProject(t, "", nil)
	out, errs, code := p.run("store", "migrate")
	want := filepath.Join(p.state, "poolflow.db") + ": schema version " + itoa(store.SchemaVersion()) + " (sqlite)"
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("store migrate: %d %q %q, want %q", code, out, errs, want)
	}
	other := filepath.Join(t.TempDir(), "other.db")
	if out, errs, code := p.run("--store", "sqlite:"+other, "store", "migrate"); code != 0 || !strings.Contains(out, other) {
		t.Fatalf("store migrate --store: %d %q %q", code, out, errs)
	}
	if _, errs, code := p.run("--store", "mysql://x/y", "store", "migrate"); code != ExitUsage || !strings.Contains(errs, "--store") {
		t.Fatalf("a bad --store: %d %q", code, errs)
	}
}

// TestStoreDSNFromEnvironment: POOLFLOW_STORE_DSN selects the store when --store is not given.
func TestStoreDSNFromEnvironment(t *testing.T) {
	p := newProject(t, "", nil)
	path := filepath.Join(t.TempDir(), "env.db")
	t.Setenv("POOLFLOW_STORE_DSN", "sqlite:"+path)
	if out, errs, code := p.run("store", "migrate"); code != 0 || !strings.Contains(out, path) {
		t.Fatalf("store migrate with POOLFLOW_STORE_DSN: %d %q %q", code, out, errs)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// installation runs a DAG through `dags test` so the store has a row in every table the copy
// moves: owners, dags, pools, runs, task instances, attempts, entries, requirements, commands.
func installation(t *testing.T) *project {
	t.Helper()
	p := newProject(t, "pools:\n  db: 2\n", map[string]string{"etl.yaml": "dag_id: etl\ntasks:\n" +
		"  - {id: a, bash: 'true', pool_requirements: {db: 1}}\n  - {id: b, bash: 'exit 0', depends_on: [a]}\n"})
	if _, errs, code := p.run("dags", "test", "etl"); code != 0 {
		t.Fatalf("dags test: %d %s", code, errs)
	}
	st, err := store.Open(context.Background(), filepath.Join(p.state, "poolflow.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	err = st.WithTx(context.Background(), func(tx store.Tx) error {
		r := lastRun(t, st)
		return tx.InsertCommand(&store.Command{Kind: "cancel", Run: r.PK, TaskID: "a", Who: "me"}, r.QueuedAt)
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func lastRun(t *testing.T, st store.Store) store.Run {
	t.Helper()
	runs, _, err := st.ListRuns(context.Background(), "etl", 1, 0)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %+v %v", runs, err)
	}
	return runs[0]
}

// snapshot reads what the API shows of an installation, for comparing two stores.
func snapshot(t *testing.T, st store.Store) map[string]any {
	t.Helper()
	ctx := context.Background()
	out := map[string]any{}
	runs, _, err := st.ListRuns(ctx, "", 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	out["runs"] = runs
	for _, r := range runs {
		tis, _ := st.ListTaskInstances(ctx, r.PK)
		as, _ := st.RunAttempts(ctx, r.PK)
		es, _ := st.LatestEntries(ctx, r.PK)
		out["tis"], out["attempts"], out["entries"] = tis, as, es
	}
	out["pools"], _ = st.ListPools(ctx)
	out["owners"], _ = st.ListOwners(ctx)
	out["dags"], _ = st.ListDAGRows(ctx)
	done, refused, _ := st.CommandOutcome(ctx, 1)
	out["command"] = []any{done, refused}
	return out
}

// TestStoreCopy: `store copy` moves every table, keeping ids; a second copy into the now
// non-empty target is refused unless --replace; ids go on after the copied ones. SQLite to
// SQLite always; SQLite to PostgreSQL and back when POOLFLOW_TEST_POSTGRES is set.
func TestStoreCopy(t *testing.T) {
	t.Parallel()
	targets := map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "copy.db") },
		"postgres": func(t *testing.T) string {
			return storetest.PostgresSchema(t, storetest.PostgresDSN(t))
		},
	}
	for name, target := range targets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := installation(t)
			from := "sqlite:" + filepath.Join(p.state, "poolflow.db")
			to := target(t)
			out, errs, code := p.run("store", "copy", "--from", from, "--to", to)
			if code != 0 || !strings.Contains(out, "queue_entries") || !strings.Contains(out, "copied") {
				t.Fatalf("store copy: %d %q %q", code, out, errs)
			}
			src, err := store.Open(context.Background(), from, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			dst, err := store.Open(context.Background(), to, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer dst.Close()
			if a, b := snapshot(t, src), snapshot(t, dst); !reflect.DeepEqual(a, b) {
				t.Fatalf("the copy differs:\nsource %+v\ntarget %+v", a, b)
			}
			if _, errs, code := p.run("store", "copy", "--from", from, "--to", to); code == 0 || !strings.Contains(errs, "not empty") {
				t.Fatalf("a copy into a non-empty target: %d %q", code, errs)
			}
			if _, errs, code := p.run("store", "copy", "--from", from, "--to", to, "--replace"); code != 0 {
				t.Fatalf("store copy --replace: %d %q", code, errs)
			}
			run := lastRun(t, dst)
			err = dst.WithTx(context.Background(), func(tx store.Tx) error {
				r := &store.Run{DAGID: "etl", RunID: "new", RunType: "manual", State: "queued"}
				if err := tx.InsertRun(r); err != nil {
					return err
				}
				if r.PK <= run.PK {
					t.Errorf("a new run's id %d after the copied %d", r.PK, run.PK)
				}
				e := &store.Entry{Run: r.PK, TaskID: "a", TryNumber: 1, Label: "x", State: "waiting"}
				if err := tx.InsertEntry(e); err != nil {
					return err
				}
				c := &store.Command{Kind: "cancel", Run: r.PK, TaskID: "a"}
				return tx.InsertCommand(c, r.QueuedAt)
			})
			if err != nil {
				t.Fatalf("writing after the copy: %v", err)
			}
			back := "sqlite:" + filepath.Join(t.TempDir(), "back.db")
			if _, errs, code := p.run("store", "copy", "--from", to, "--to", back); code != 0 {
				t.Fatalf("copy back: %d %q", code, errs)
			}
		})
	}
}
