package executor

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

const versionOne = `# version one
dag_id: v
tasks:
  - {id: a, bash: 'echo one'}
  - {id: b, bash: 'echo b', depends_on: [a]}
`

// versionTwo changes a's command; b stays as it was.
const versionTwo = `# version two
dag_id: v
tasks:
  - {id: a, bash: 'echo two'}
  - {id: b, bash: 'echo b', depends_on: [a]}
`

// TestRunsRecordTheirVersion (§12): the DAG file changed between two runs; each run records the
// version it was created with and its attempts the version they ran, the store keeps each text
// once, and going back to the first text is version 1 again. A clear runs the current version:
// the cleared task's new attempt records it while its run keeps the one it was created with.
func TestRunsRecordTheirVersion(t *testing.T) {
	t.Parallel()
	b := setup(t, "", map[string]string{"v.yaml": versionOne})
	h, _ := b.harness(t, nil)
	ctx := context.Background()
	runVersion := func(pk int64) int {
		t.Helper()
		r, err := b.st.GetRunByPK(ctx, pk)
		if err != nil {
			t.Fatal(err)
		}
		return r.Version
	}
	attempts := func(pk int64) map[string][]int {
		t.Helper()
		as, err := b.st.RunAttempts(ctx, pk)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]int{}
		for _, a := range as {
			out[a.TaskID] = append(out[a.TaskID], a.Version)
		}
		return out
	}
	first, started := h.trigger(t, TriggerRequest{DAGID: "v", RunID: "first"})
	h.succeed(t, specOf(t, h.succeed(t, specOf(t, started, "v", "a")), "v", "b"))

	write(t, filepath.Join(b.dagsDir, "v.yaml"), versionTwo)
	if !h.Reload() {
		t.Fatal("the changed DAG file was not loaded")
	}
	second, started := h.trigger(t, TriggerRequest{DAGID: "v", RunID: "second"})
	h.succeed(t, specOf(t, h.succeed(t, specOf(t, started, "v", "a")), "v", "b"))

	if v1, v2 := runVersion(first.Run.PK), runVersion(second.Run.PK); v1 != 1 || v2 != 2 {
		t.Fatalf("runs' versions %d and %d, want 1 and 2", v1, v2)
	}
	if got := attempts(first.Run.PK); len(got["a"]) != 1 || got["a"][0] != 1 || got["b"][0] != 1 {
		t.Fatalf("first run's attempts ran versions %v, want 1", got)
	}
	if got := attempts(second.Run.PK); got["a"][0] != 2 || got["b"][0] != 2 {
		t.Fatalf("second run's attempts ran versions %v, want 2", got)
	}
	for n, text := range map[int]string{1: versionOne, 2: versionTwo} {
		v, err := b.st.GetDAGVersion(ctx, "v", n)
		if err != nil || v.Source != text || v.Format != dag.SourceYAML || v.File != filepath.Join(b.dagsDir, "v.yaml") {
			t.Fatalf("version %d: %+v %v", n, v, err)
		}
	}
	if cur, err := b.st.GetDAGVersion(ctx, "v", 0); err != nil || cur.Version != 2 {
		t.Fatalf("current version %+v %v", cur, err)
	}

	// Clear the first run's a: it runs version 2, the DAG's current one; the run stays 1.
	params, _ := json.Marshal(store.ClearParams{TaskIDs: []string{"a"}})
	started, err := h.command(t, store.Command{Kind: vocab.CommandClear, Run: first.Run.PK, Who: "cli:test@host",
		Params: string(params)})
	if err != nil {
		t.Fatal(err)
	}
	h.succeed(t, specOf(t, started, "v", "a"))
	if got := attempts(first.Run.PK); len(got["a"]) != 2 || got["a"][0] != 1 || got["a"][1] != 2 {
		t.Fatalf("the cleared a's attempts ran versions %v, want [1 2]", got["a"])
	}
	if v := runVersion(first.Run.PK); v != 1 {
		t.Fatalf("the cleared run's version became %d; it was created with 1", v)
	}

	// Back to the first text: version 1 again, not a third version.
	write(t, filepath.Join(b.dagsDir, "v.yaml"), versionOne)
	if !h.Reload() {
		t.Fatal("the DAG file changed back was not loaded")
	}
	third, started := h.trigger(t, TriggerRequest{DAGID: "v", RunID: "third"})
	h.succeed(t, specOf(t, started, "v", "a"))
	if v := runVersion(third.Run.PK); v != 1 {
		t.Fatalf("a run of the first text again has version %d, want 1", v)
	}
	if _, total, err := b.st.ListDAGVersions(ctx, "v", 0, 0); err != nil || total != 2 {
		t.Fatalf("%d versions stored (%v), want 2", total, err)
	}

	// A run another process created without a version (an older dags trigger) gets the
	// version of the daemon that takes it.
	cli := &store.Run{DAGID: "v", RunID: "cli", RunType: vocab.RunManual, LogicalDate: t0, State: vocab.RunQueued, QueuedAt: t0}
	if err := b.st.WithTx(ctx, func(tx store.Tx) error {
		if err := tx.InsertRun(cli); err != nil {
			return err
		}
		return tx.PutTIs([]*store.TaskInstance{{Run: cli.PK, TaskID: "a", State: vocab.TaskNone},
			{Run: cli.PK, TaskID: "b", State: vocab.TaskNone}})
	}); err != nil {
		t.Fatal(err)
	}
	h.settle(t)
	if v := runVersion(cli.PK); v != 1 {
		t.Fatalf("a run taken without a version has version %d, want 1", v)
	}
}
