package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// TestDBClean (§12): two runs of a DAG by dags test, each with its logs; db clean --before now
// says what it would delete with --dry-run and deletes nothing, refuses a future moment, asks
// before deleting, and with --yes deletes the older run with its rows and logs, keeps the last
// run of the DAG, and leaves an audit event.
func TestDBClean(t *testing.T) {
	t.Parallel()
	p := newProject(t, "", map[string]string{"etl.yaml": "dag_id: etl\ntasks:\n  - {id: a, bash: 'echo ran'}\n"})
	for range 2 {
		if _, errs, code := p.run("dags", "test", "etl"); code != 0 {
			t.Fatalf("dags test: %d %s", code, errs)
		}
	}
	st, err := store.Open(context.Background(), filepath.Join(p.state, "poolflow.db"), store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, _, err := st.ListRuns(context.Background(), "etl", 10, 0)
	if err != nil || len(runs) != 2 {
		t.Fatalf("runs %+v %v", runs, err)
	}
	older, last := runs[1], runs[0]
	logs := func(r store.Run) bool {
		_, err := os.Stat(filepath.Join(p.state, "logs", "etl", r.RunID, "a", "1.log"))
		return err == nil
	}
	if !logs(older) || !logs(last) {
		t.Fatal("dags test wrote no logs")
	}

	out, errs, code := p.run("db", "clean", "--before", "0s", "--dry-run")
	if code != 0 || !strings.Contains(out, "Would delete what is older than") || !strings.Contains(out, "runs          1 (with 1 task instances, 1 attempts, 1 queue entries)") ||
		!strings.Contains(out, "  notifications 0 (delivered or failed") ||
		!strings.Contains(out, "  etl "+older.RunID) || strings.Contains(out, last.RunID) {
		t.Fatalf("dry run: %d\n%s%s", code, out, errs)
	}
	if _, err := st.GetRunByPK(context.Background(), older.PK); err != nil || !logs(older) {
		t.Fatalf("the dry run deleted: %v", err)
	}

	future := time.Now().UTC().Add(48 * time.Hour).Format("2006-01-02")
	if out, errs, code := p.run("db", "clean", "--before", future, "--yes"); code != ExitUsage || !strings.Contains(errs, "is in the future") {
		t.Fatalf("a future date: %d\n%s%s", code, out, errs)
	}
	for _, bad := range []string{"", "soon", "-3d"} {
		args := []string{"db", "clean", "--yes"}
		if bad != "" {
			args = append(args, "--before", bad)
		}
		if out, errs, code := p.run(args...); code != ExitUsage {
			t.Fatalf("--before %q: %d\n%s%s", bad, code, out, errs)
		}
	}
	// Not confirmed (stdin is empty under go test): nothing deleted.
	if out, errs, code := p.run("db", "clean", "--before", "0s"); code != ExitFailed || !strings.Contains(errs, "not confirmed") {
		t.Fatalf("unconfirmed: %d\n%s%s", code, out, errs)
	}
	if _, err := st.GetRunByPK(context.Background(), older.PK); err != nil {
		t.Fatalf("an unconfirmed clean deleted: %v", err)
	}

	out, errs, code = p.run("db", "clean", "--before", "0s", "--yes", "--vacuum")
	if code != 0 || !strings.Contains(out, "Deleted 1 runs, ") || !strings.Contains(out, "and 1 run log folders") ||
		!strings.Contains(out, "Vacuumed ") {
		t.Fatalf("clean: %d\n%s%s", code, out, errs)
	}
	if _, err := st.GetRunByPK(context.Background(), older.PK); err == nil || logs(older) {
		t.Fatalf("the older run is still there (%v) or its logs (%v)", err, logs(older))
	}
	if _, err := st.GetRunByPK(context.Background(), last.PK); err != nil || !logs(last) {
		t.Fatalf("the last run of the DAG went: %v (logs %v)", err, logs(last))
	}
	evs, _, err := st.ListEvents(context.Background(), store.EventFilter{Action: vocab.ActionDBClean})
	if err != nil || len(evs) != 1 || !strings.HasPrefix(evs[0].Actor, "cli:") || !strings.Contains(evs[0].Params, `"runs":1`) {
		t.Fatalf("audit events %+v %v", evs, err)
	}
}
