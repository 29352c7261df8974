package storetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// WaitingFixture fills st with a waiting queue that has every kind of entry in line: strict
// (db) and backfill pools (wh, whose starvation_after is 10 minutes, and lot), force starts, a
// sensor keeping its claims between pokes, two running attempts, the entries of a backfill's
// runs, and one entry last in line that has starved in wh. It returns the time to read it at.
// Explain's tests walk it too (ReasonsAmong against the whole walk).
func WaitingFixture(t testing.TB, st store.Store) time.Time {
	t.Helper()
	now := day.Add(time.Hour)
	rng := rand.New(rand.NewPCG(7, 21))
	var bf store.Backfill
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		for _, p := range []store.Pool{
			{Name: "db", Slots: 1, Ordering: vocab.Strict},
			{Name: "wh", Slots: 4, Ordering: vocab.Backfill, StarvationAfter: 10 * time.Minute},
			{Name: "lot", Slots: 2, Ordering: vocab.Backfill},
		} {
			p.TargetSlots, p.Source, p.OnResize = store.NoTarget, "store", vocab.ResizeImmediate
			if err := tx.PutPool(&p, day); err != nil {
				return err
			}
		}
		if err := tx.PutOwner(&store.Owner{ID: "d1", Kind: vocab.OwnerDaemon, Host: "elsewhere", Epoch: 1, StartedAt: day,
			Heartbeat: now, LeaseUntil: now.Add(time.Hour)}); err != nil {
			return err
		}
		bf = store.Backfill{DAGID: "bfdag", From: day, To: day, State: vocab.BackfillRunning, Owner: "d1", CreatedAt: day,
			Reprocess: vocab.ReprocessNone, MaxActiveRuns: 2}
		return tx.InsertBackfill(&bf, []time.Time{day})
	}))
	var held []*store.Entry
	for lo := 0; lo < 90; lo += 30 { // short transactions: the store's 5 s bound holds on a busy machine
		must(t, st.WithTx(bg(), func(tx store.Tx) error {
			for i := lo; i < lo+30; i++ {
				dagID := []string{"alpha", "beta", "bfdag"}[i%3]
				r := &store.Run{DAGID: dagID, RunID: fmt.Sprintf("r%02d", i), RunType: vocab.RunManual,
					LogicalDate: day.Add(time.Duration(i) * time.Minute), State: vocab.RunRunning, QueuedAt: day, Owner: "d1"}
				if dagID == "bfdag" && i%2 == 0 {
					r.Backfill = bf.ID
				}
				if err := tx.InsertRun(r); err != nil {
					return err
				}
				e := &store.Entry{Run: r.PK, TaskID: "t", TryNumber: 1, Label: fmt.Sprintf("%s.t try 1 (%d)", dagID, i),
					Priority: rng.IntN(3), Due: day.Add(time.Duration(rng.IntN(5)) * time.Minute), State: vocab.EntryWaiting,
					CreatedAt: now.Add(-time.Duration(rng.IntN(9)) * time.Minute), Force: i%29 == 5}
				for _, p := range []string{"db", "wh", "lot"} {
					if rng.IntN(2) == 0 {
						e.Needs = append(e.Needs, store.Requirement{Pool: p, Slots: 1 + rng.IntN(2)})
					}
				}
				e.Needs = append(e.Needs, store.Requirement{Pool: pools.GlobalPool, Slots: 1, Implicit: true, Capacity: 6})
				if i == 40 { // last in line, and starved in wh: its promotion keeps room for it ahead of everyone
					e.Priority, e.CreatedAt, e.Force = -5, now.Add(-time.Hour), false
					e.Needs = []store.Requirement{{Pool: "wh", Slots: 1}, e.Needs[len(e.Needs)-1]}
				}
				if err := tx.InsertEntry(e); err != nil {
					return err
				}
				if i < 3 {
					held = append(held, e)
				}
			}
			return nil
		}))
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		for i, e := range held { // two running attempts, and a sensor keeping its claims between pokes
			if err := tx.Admit(e, "d1", 1, now, now.Add(time.Minute)); err != nil {
				return err
			}
			if i == 2 {
				if err := tx.Reschedule(e.ID, []string{"db", "wh", "lot"}, now.Add(time.Minute)); err != nil {
					return err
				}
			}
		}
		return nil
	}))
	return now
}

// testWaitingReads: ClaimEntries reads the entries holding claims (two running attempts and a
// sensor keeping its claims between pokes); EntriesByID reads the entries asked for, by queue
// ID, with their requirements, leaving out IDs with no entry. (The pools page's lines are
// checked against the whole walk in server's TestWaitingLinePages, on this fixture.)
func testWaitingReads(t *testing.T, h Harness) {
	st := h.New(t)
	WaitingFixture(t, st)
	all, err := st.ListEntries(bg(), vocab.EntryWaiting)
	must(t, err)
	ids := func(es []store.Entry) []int64 {
		var out []int64
		for _, e := range es {
			out = append(out, e.ID)
		}
		return out
	}
	holding, err := st.ClaimEntries(bg())
	must(t, err)
	if len(holding) != 3 {
		t.Errorf("claim entries %v, want the three admitted", ids(holding))
	}
	ask := []int64{all[9].ID, all[2].ID, 1 << 40, all[30].ID}
	got, err := st.EntriesByID(bg(), ask)
	must(t, err)
	want := []int64{all[9].ID, all[2].ID, all[30].ID}
	slices.Sort(want)
	if !slices.Equal(ids(got), want) || len(got) == 0 || len(got[0].Needs) == 0 {
		t.Errorf("entries by ID %v: %v, want %v with their needs", ask, ids(got), want)
	}
}

// testQueueSeq: the queue's change stamp moves when an entry is put or changed, by this handle
// or another, and not with other writes.
func testQueueSeq(t *testing.T, h Harness) {
	st := h.New(t)
	seq := func() int64 {
		t.Helper()
		n, err := st.QueueSeq(bg())
		must(t, err)
		return n
	}
	empty := seq()
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		p := store.Pool{Name: "seq", Slots: 1, Ordering: vocab.Backfill, TargetSlots: store.NoTarget, Source: "store",
			OnResize: vocab.ResizeImmediate}
		return tx.PutPool(&p, day)
	}))
	if n := seq(); n != empty {
		t.Errorf("queue stamp moved from %d to %d with a pool's write", empty, n)
	}
	var e *store.Entry
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		r := &store.Run{DAGID: "d", RunID: "r", RunType: vocab.RunManual, LogicalDate: day, State: vocab.RunRunning,
			QueuedAt: day, Owner: "d1"}
		if err := tx.InsertRun(r); err != nil {
			return err
		}
		e = &store.Entry{Run: r.PK, TaskID: "t", TryNumber: 1, Label: "d.t try 1", Due: day, State: vocab.EntryWaiting,
			CreatedAt: day, Needs: []store.Requirement{{Pool: "seq", Slots: 1}}}
		return tx.InsertEntries([]*store.Entry{e})
	}))
	put := seq()
	if put <= empty {
		t.Errorf("queue stamp %d after an entry was put, was %d", put, empty)
	}
	if n := seq(); n != put {
		t.Errorf("queue stamp moved from %d to %d with no write", put, n)
	}
	// Another handle's change of the entry moves it too.
	other, err := st.Reopen(bg())
	must(t, err)
	defer other.Close()
	must(t, other.WithTx(bg(), func(tx store.Tx) error { return tx.SetForce(e.ID) }))
	if n := seq(); n <= put {
		t.Errorf("queue stamp %d after another handle changed an entry, was %d", n, put)
	}
}
