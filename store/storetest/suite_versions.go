package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// putVersion records v as its DAG's version at at, in a transaction of st.
func putVersion(t testing.TB, st store.Store, v store.DAGVersion, at time.Time) error {
	t.Helper()
	return st.WithTx(bg(), func(tx store.Tx) error {
		if err := tx.UpsertDAG(v.DAGID, v.File, "", at); err != nil {
			return err
		}
		return tx.PutDAGVersion(&v, at)
	})
}

// testDAGVersions: a version is inserted once with its text and seen again by number and hash;
// the DAG's row names its current one, and the one it replaced is seen last when it was
// replaced; numbers and hashes are unique per DAG.
func testDAGVersions(t *testing.T, h Harness) {
	st := h.New(t)
	v1 := store.DAGVersion{DAGID: "etl", Version: 1, Hash: "h1", Format: "yaml", File: "dags/etl.yaml", Source: "dag_id: etl\n"}
	v2 := store.DAGVersion{DAGID: "etl", Version: 2, Hash: "h2", Format: "yaml", File: "dags/etl.yaml", Source: "dag_id: etl # 2\n"}
	must(t, putVersion(t, st, v1, day))
	must(t, putVersion(t, st, v2, day.Add(time.Hour)))
	list, total, err := st.ListDAGVersions(bg(), "etl", 0, 0)
	must(t, err)
	if total != 2 || len(list) != 2 || list[0].Version != 2 || !list[0].Current || list[1].Current || list[0].Source != "" {
		t.Fatalf("versions %+v (%d)", list, total)
	}
	// v1 was current until v2 replaced it.
	if !list[1].FirstSeen.Equal(day) || !list[1].LastSeen.Equal(day.Add(time.Hour)) || !list[0].FirstSeen.Equal(day.Add(time.Hour)) {
		t.Fatalf("seen %+v", list)
	}
	cur, err := st.GetDAGVersion(bg(), "etl", 0)
	if err != nil || cur.Version != 2 || cur.Source != v2.Source || cur.Hash != "h2" || cur.Format != "yaml" || !cur.Current {
		t.Fatalf("current version %+v %v", cur, err)
	}
	if old, err := st.GetDAGVersion(bg(), "etl", 1); err != nil || old.Source != v1.Source || old.Current || old.File != "dags/etl.yaml" {
		t.Fatalf("version 1 %+v %v", old, err)
	}
	if _, err := st.GetDAGVersion(bg(), "etl", 3); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("version 3: %v", err)
	}
	if _, err := st.GetDAGVersion(bg(), "nope", 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("no DAG: %v", err)
	}
	// The file back to its first text: version 1 again, seen now; version 2 seen last now.
	back := day.Add(2 * time.Hour)
	must(t, putVersion(t, st, store.DAGVersion{DAGID: "etl", Version: 1, Hash: "h1"}, back))
	if cur, err := st.GetDAGVersion(bg(), "etl", 0); err != nil || cur.Version != 1 || !cur.LastSeen.Equal(back) {
		t.Fatalf("current after going back %+v %v", cur, err)
	}
	if v, err := st.GetDAGVersion(bg(), "etl", 2); err != nil || !v.LastSeen.Equal(back) || v.Current {
		t.Fatalf("version 2 after going back %+v %v", v, err)
	}
	for name, bad := range map[string]store.DAGVersion{
		"a taken number":          {DAGID: "etl", Version: 2, Hash: "h3", Format: "yaml", Source: "x"},
		"a taken hash":            {DAGID: "etl", Version: 3, Hash: "h2", Format: "go", Source: "{}"},
		"seen again, not stored":  {DAGID: "etl", Version: 7, Hash: "h7"},
		"seen again, wrong hash":  {DAGID: "etl", Version: 1, Hash: "h2"},
		"a format not yaml or go": {DAGID: "etl", Version: 3, Hash: "h3", Format: "python", Source: "x"},
	} {
		err := putVersion(t, st, bad, back)
		want := store.ErrConflict
		if bad.Format == "python" {
			want = store.ErrConstraint
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		if err := tx.PutDAGVersion(&store.DAGVersion{DAGID: "unknown", Version: 1, Hash: "u", Format: "go", Source: "{}"}, day); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a version of a DAG without its row: %v", err)
		}
		keys, err := tx.VersionKeys()
		if err != nil || len(keys) != 2 || keys[0] != (store.VersionKey{DAGID: "etl", Version: 1, Hash: "h1"}) ||
			keys[1] != (store.VersionKey{DAGID: "etl", Version: 2, Hash: "h2"}) {
			t.Errorf("keys %+v %v", keys, err)
		}
		if n, err := tx.VersionOf("etl", "h2"); err != nil || n != 2 {
			t.Errorf("version of h2: %d %v", n, err)
		}
		if n, err := tx.VersionOf("etl", "nope"); err != nil || n != 0 {
			t.Errorf("version of an unknown hash: %d %v", n, err)
		}
		return nil
	}))
	rows, err := st.ListDAGRows(bg())
	if err != nil || len(rows) != 1 || rows[0].Version != 1 {
		t.Fatalf("dag rows %+v %v", rows, err)
	}
	if page, total, err := st.ListDAGVersions(bg(), "etl", 1, 1); err != nil || total != 2 || len(page) != 1 || page[0].Version != 1 {
		t.Fatalf("second page %+v %d %v", page, total, err)
	}
}

// testRunVersions: a run keeps the version it was created with (a daemon taking a run created
// without one gives it its own, once); an admission records the version in force on its entry,
// and the attempt's end carries it (RecordEnd takes it from the entry).
func testRunVersions(t *testing.T, h Harness) {
	st := h.New(t)
	r := &store.Run{DAGID: "etl", RunID: "r1", RunType: vocab.RunSchedule, LogicalDate: day, State: vocab.RunQueued, QueuedAt: day,
		Version: 3}
	cli := &store.Run{DAGID: "etl", RunID: "cli", RunType: vocab.RunManual, LogicalDate: day, State: vocab.RunQueued, QueuedAt: day}
	e := &store.Entry{TaskID: "t", TryNumber: 1, Label: "etl.t try 1", Priority: 1, Due: day, State: vocab.EntryWaiting, CreatedAt: day,
		Needs: []store.Requirement{{Pool: "p", Slots: 1}}}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		for _, run := range []*store.Run{r, cli} {
			if err := tx.InsertRun(run); err != nil {
				return err
			}
		}
		e.Run = r.PK
		return tx.InsertEntry(e)
	}))
	if got, err := st.GetRunByPK(bg(), r.PK); err != nil || got.Version != 3 {
		t.Fatalf("run %+v %v", got, err)
	}
	update := func(run store.Run, v int) {
		run.Version = v
		must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.UpdateRun(&run) }))
	}
	update(*r, 4) // a later write never changes what the run was created with
	update(*cli, 0)
	if got, _ := st.GetRunByPK(bg(), cli.PK); got.Version != 0 {
		t.Fatalf("a run without a version: %d", got.Version)
	}
	update(*cli, 2) // taken by a daemon running version 2
	update(*cli, 5)
	for pk, want := range map[int64]int{r.PK: 3, cli.PK: 2} {
		if got, err := st.GetRunByPK(bg(), pk); err != nil || got.Version != want {
			t.Errorf("run %d: version %d %v, want %d", pk, got.Version, err, want)
		}
	}
	e.Version = 4
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.Admit(e, "d1", 1, day, day.Add(time.Minute)) }))
	if got, err := st.EntryByID(bg(), e.ID); err != nil || got.Version != 4 {
		t.Fatalf("admitted entry %+v %v", got, err)
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		if err := tx.RecordEnd(e.ID, &store.Attempt{TryNumber: 1, State: vocab.TaskSuccess, StartDate: day, EndDate: day}); err != nil {
			return err
		}
		return tx.PutAttempts([]*store.Attempt{{Run: cli.PK, TaskID: "t", TryNumber: 1, State: vocab.TaskFailed, Version: 2},
			{Run: cli.PK, TaskID: "u", TryNumber: 1, State: vocab.TaskFailed}})
	}))
	as, err := st.RunAttempts(bg(), r.PK)
	if err != nil || len(as) != 1 || as[0].Version != 4 {
		t.Fatalf("attempts of r1 %+v %v", as, err)
	}
	as, err = st.RunAttempts(bg(), cli.PK)
	if err != nil || len(as) != 2 || as[0].Version != 2 || as[1].Version != 0 {
		t.Fatalf("attempts of cli %+v %v", as, err)
	}
}

// testCopyVersions: store copy moves the versions and every version column.
func testCopyVersions(t *testing.T, h Harness) {
	src, dst := h.New(t), h.New(t)
	must(t, putVersion(t, src, store.DAGVersion{DAGID: "etl", Version: 1, Hash: "h1", Format: "go", Source: "{}\n"}, day))
	r := &store.Run{DAGID: "etl", RunID: "r1", RunType: vocab.RunManual, LogicalDate: day, State: vocab.RunSuccess, QueuedAt: day,
		Version: 1}
	must(t, src.WithTx(bg(), func(tx store.Tx) error {
		if err := tx.InsertRun(r); err != nil {
			return err
		}
		return tx.PutAttempts([]*store.Attempt{{Run: r.PK, TaskID: "t", TryNumber: 1, State: vocab.TaskSuccess, Version: 1}})
	}))
	_, err := store.Copy(bg(), src, dst, false)
	must(t, err)
	if v, err := dst.GetDAGVersion(bg(), "etl", 0); err != nil || v.Version != 1 || v.Source != "{}\n" || v.Format != "go" {
		t.Fatalf("copied version %+v %v", v, err)
	}
	if got, err := dst.GetRunByPK(bg(), r.PK); err != nil || got.Version != 1 {
		t.Fatalf("copied run %+v %v", got, err)
	}
	if as, err := dst.RunAttempts(bg(), r.PK); err != nil || len(as) != 1 || as[0].Version != 1 {
		t.Fatalf("copied attempts %+v %v", as, err)
	}
}
