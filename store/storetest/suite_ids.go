package storetest

import (
	"testing"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// testNextIDs: NextIDs names the ids the next run and entry get, whether they are inserted
// with those ids (a pass) or without (a command); ids are never handed out twice, also after a
// pass that rolled back, and a run id that exists is found.
func testNextIDs(t *testing.T, h Harness) {
	st := h.New(t)
	next := func() (int64, int64) {
		var r, e int64
		must(t, st.WithTx(bg(), func(tx store.Tx) error {
			var err error
			r, e, err = tx.NextIDs()
			return err
		}))
		return r, e
	}
	run := func(id string, pk int64) *store.Run {
		return &store.Run{PK: pk, DAGID: "d", RunID: id, RunType: vocab.RunManual, LogicalDate: day, State: vocab.RunRunning, QueuedAt: day}
	}
	entry := func(r *store.Run, task string, id int64) *store.Entry {
		return &store.Entry{ID: id, Run: r.PK, TaskID: task, TryNumber: 1, Label: task, Priority: 1, Due: day, State: vocab.EntryWaiting,
			CreatedAt: day, Needs: []store.Requirement{{Pool: "p", Slots: 1}}}
	}
	r0, e0 := next()
	if r0 < 1 || e0 < 1 {
		t.Fatalf("first ids %d %d", r0, e0)
	}
	// A pass gives its rows the ids it read.
	var a *store.Run
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		r, e, err := tx.NextIDs()
		if err != nil {
			return err
		}
		a = run("a", r)
		if err := tx.InsertRun(a); err != nil {
			return err
		}
		return tx.InsertEntries([]*store.Entry{entry(a, "x", e), entry(a, "y", e+1)})
	}))
	if a.PK != r0 {
		t.Fatalf("run inserted as %d, want %d", a.PK, r0)
	}
	es, err := st.ListEntries(bg(), vocab.EntryWaiting)
	must(t, err)
	if len(es) != 2 || es[0].ID != e0 || es[1].ID != e0+1 {
		t.Fatalf("entries %+v, want ids %d and %d", es, e0, e0+1)
	}
	// A command inserts without ids: it goes on after them.
	r1, e1 := next()
	if r1 != r0+1 || e1 != e0+2 {
		t.Fatalf("after a pass: %d %d, want %d %d", r1, e1, r0+1, e0+2)
	}
	var b *store.Run
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		b = run("b", 0)
		if err := tx.InsertRun(b); err != nil {
			return err
		}
		return tx.InsertEntries([]*store.Entry{entry(b, "z", 0)})
	}))
	if b.PK != r1 {
		t.Fatalf("run without an id got %d, want %d", b.PK, r1)
	}
	es, _ = st.ListEntries(bg(), vocab.EntryWaiting)
	if es[len(es)-1].ID != e1 {
		t.Fatalf("entry without an id got %d, want %d", es[len(es)-1].ID, e1)
	}
	// A pass that rolls back takes nothing for good: the ids are read again, and still free.
	tx, err := st.Begin(bg())
	must(t, err)
	r2, e2, err := tx.NextIDs()
	must(t, err)
	must(t, tx.InsertRun(run("c", r2)))
	must(t, tx.InsertEntries([]*store.Entry{entry(b, "w", e2)}))
	tx.Rollback()
	if r3, e3 := next(); r3 < r2 || e3 < e2 {
		t.Fatalf("after a rollback: %d %d, before %d %d", r3, e3, r2, e2)
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		r, e, err := tx.NextIDs()
		if err != nil {
			return err
		}
		if err := tx.InsertRun(run("c", r)); err != nil {
			return err
		}
		if err := tx.InsertEntries([]*store.Entry{entry(b, "w", e)}); err != nil {
			return err
		}
		for _, id := range []string{"a", "c"} {
			if ok, err := tx.RunExists("d", id); err != nil || !ok {
				t.Errorf("RunExists(d, %s) = %v, %v", id, ok, err)
			}
		}
		if ok, err := tx.RunExists("d", "nope"); err != nil || ok {
			t.Errorf("RunExists(d, nope) = %v, %v", ok, err)
		}
		return nil
	}))
}
