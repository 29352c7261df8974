package storetest

import (
	"errors"
	"sort"
	"testing"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// testChangeStamps: every write transaction that changes a row commits the next change number,
// and ChangesSince the previous number reads exactly the runs, task instances and entries it
// wrote — whichever handle wrote them and through whichever Tx method. A transaction that
// writes nothing takes no number.
func testChangeStamps(t *testing.T, h Harness) {
	target := h.Target(t)
	a, b := h.Open(t, target), h.Open(t, target)
	seq := func(st store.Store) int64 {
		t.Helper()
		var s int64
		must(t, st.WithTx(bg(), func(tx store.Tx) error { s = tx.Seq(); return nil }))
		return s
	}
	// write runs fn in a transaction of st and returns the numbers before and after its commit.
	write := func(st store.Store, fn func(tx store.Tx) error) (before, after int64) {
		t.Helper()
		tx, err := st.Begin(bg())
		must(t, err)
		before = tx.Seq()
		if err := fn(tx); err != nil {
			tx.Rollback()
			t.Fatal(err)
		}
		must(t, tx.Commit())
		return before, tx.Seq()
	}
	changes := func(st store.Store, since int64) store.Changes {
		t.Helper()
		var c store.Changes
		must(t, st.WithTx(bg(), func(tx store.Tx) error {
			var err error
			c, err = tx.ChangesSince(since)
			return err
		}))
		return c
	}
	// what lists the changed rows in a comparable form.
	what := func(c store.Changes) []string {
		var out []string
		for _, r := range c.Runs {
			out = append(out, "run "+r.RunID+" "+string(r.State)+" "+r.Owner)
		}
		for _, ti := range c.TaskInstances {
			out = append(out, "ti "+ti.TaskID+" "+string(ti.State))
		}
		for _, e := range c.Entries {
			out = append(out, "entry "+e.TaskID+" "+string(e.State)+" "+string(e.ReasonCode)+" "+itoa(len(e.Needs))+" "+string(e.RunType))
		}
		sort.Strings(out)
		return out
	}
	expect := func(step string, c store.Changes, want ...string) {
		t.Helper()
		got := what(c)
		sort.Strings(want)
		if len(got) != len(want) {
			t.Fatalf("%s: changes %q, want %q", step, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: changes %q, want %q", step, got, want)
			}
		}
	}

	s0 := seq(a)
	e := seed(t, a)
	s1 := seq(b)
	if s1 != s0+1 {
		t.Fatalf("seed: change number %d → %d, want one more", s0, s1)
	}
	expect("seed", changes(b, s0), "run r1 running ", "ti transfer scheduled", "entry transfer waiting  3 manual")
	expect("nothing since", changes(b, s1))

	// A transaction that writes nothing takes no number.
	if before, after := write(b, func(tx store.Tx) error { _, err := tx.Claims(); return err }); before != after || after != s1 {
		t.Fatalf("read-only transaction: %d → %d, want %d", before, after, s1)
	}

	// Admission on one handle, seen from the other; then the stop request and the requeue.
	before, after := write(b, func(tx store.Tx) error {
		if err := tx.Admit(e, "d2", 1, day, day.Add(30e9)); err != nil {
			return err
		}
		return tx.UpdateTI(&store.TaskInstance{Run: e.Run, TaskID: "transfer", State: vocab.TaskRunning, TryNumber: 1})
	})
	if before != s1 || after != s1+1 {
		t.Fatalf("admission: %d → %d, want %d → %d", before, after, s1, s1+1)
	}
	expect("admission", changes(a, s1), "ti transfer running", "entry transfer admitted  3 manual")
	s2 := after
	_, s3 := write(a, func(tx store.Tx) error { return tx.RequestStop(e.ID, vocab.ReasonStopRequested, "replaced") })
	expect("stop request", changes(b, s2), "entry transfer admitted stop_requested 3 manual")
	if err := a.WithTx(bg(), func(tx store.Tx) error { return tx.RequestStop(999999, vocab.ReasonStopRequested, "x") }); !errors.Is(err, store.ErrEntryState) {
		t.Fatalf("stop request of no admitted entry: %v, want ErrEntryState", err)
	}
	_, s4 := write(b, func(tx store.Tx) error { _, err := tx.ReleaseOwnerClaims("d2", 1); return err })
	// The stop request survives the requeue: the run's owner fails the task.
	expect("requeue", changes(a, s3), "ti transfer scheduled", "entry transfer waiting stop_requested 3 manual")

	// Requirement changes, force, a new entry, a run moved to another owner, a run failed.
	_, s5 := write(a, func(tx store.Tx) error { return tx.SetImplicitLimit([]int64{e.ID}, "_global", 0) })
	expect("implicit limit", changes(b, s4), "entry transfer waiting stop_requested 2 manual")
	_, s6 := write(a, func(tx store.Tx) error { return tx.SetForce(e.ID) })
	expect("force", changes(b, s5), "entry transfer waiting stop_requested 2 manual")
	var s1PK int64
	_, s7 := write(a, func(tx store.Tx) error {
		r := &store.Run{DAGID: "etl", RunID: "s1", RunType: vocab.RunSchedule, LogicalDate: day, State: vocab.RunRunning, QueuedAt: day, Owner: "d1"}
		if err := tx.InsertRun(r); err != nil {
			return err
		}
		s1PK = r.PK
		if err := tx.InsertTI(&store.TaskInstance{Run: r.PK, TaskID: "load", State: vocab.TaskNone}); err != nil {
			return err
		}
		return tx.InsertEntry(&store.Entry{Run: r.PK, TaskID: "load", TryNumber: 1, Label: "etl.load try 1", Due: day,
			State: vocab.EntryWaiting, CreatedAt: day, Needs: []store.Requirement{{Pool: "p", Slots: 1}}})
	})
	expect("new run", changes(b, s6), "run s1 running d1", "ti load none", "entry load waiting  1 schedule")
	_, s8 := write(b, func(tx store.Tx) error { _, err := tx.AdoptRuns("d1", "d2", vocab.RunSchedule); return err })
	expect("adopt", changes(a, s7), "run s1 running d2")
	// PutTIs updates one task instance and inserts another in one statement.
	_, s9 := write(a, func(tx store.Tx) error {
		return tx.PutTIs([]*store.TaskInstance{{Run: s1PK, TaskID: "load", State: vocab.TaskScheduled},
			{Run: s1PK, TaskID: "report", State: vocab.TaskNone}})
	})
	expect("put task instances", changes(b, s8), "ti load scheduled", "ti report none")
	write(b, func(tx store.Tx) error {
		r, err := tx.RunByPK(e.Run)
		if err != nil {
			return err
		}
		return tx.FailRun(&r, "gone", day)
	})
	expect("fail run", changes(a, s9), "run r1 failed ", "ti transfer failed", "entry transfer retired retired 2 manual")
	expect("everything", changes(a, s0), "run r1 failed ", "run s1 running d2", "ti transfer failed", "ti load scheduled",
		"ti report none", "entry transfer retired retired 2 manual", "entry load waiting  1 schedule")
}
