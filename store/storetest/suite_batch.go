package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// testInsertEntries: a batch of entries, more than one statement's worth, gets queue IDs in
// the order given, after every earlier entry, and each entry exactly its own requirement rows
// (none, named pools, an implicit pool with its capacity).
func testInsertEntries(t *testing.T, h Harness) {
	st := h.New(t)
	first := seed(t, st)
	const n = 150
	batch := make([]*store.Entry, n)
	for i := range batch {
		e := &store.Entry{Run: first.Run, TaskID: fmt.Sprintf("t%03d", i), TryNumber: 1 + i%3, Label: fmt.Sprintf("etl.t%03d", i),
			Priority: i, Due: day, State: vocab.EntryWaiting, CreatedAt: day}
		switch i % 3 {
		case 1:
			e.Needs = []store.Requirement{{Pool: "a", Slots: 1 + i%2}}
		case 2:
			e.Needs = []store.Requirement{{Pool: "a", Slots: 1}, {Pool: "b", Slots: 2},
				{Pool: "_global", Slots: 1, Implicit: true, Capacity: 8}}
		}
		batch[i] = e
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.InsertEntries(batch) }))
	prev := first.ID
	for i, e := range batch {
		if e.ID <= prev {
			t.Fatalf("entry %d (%s) got id %d after %d: not in the order given", i, e.TaskID, e.ID, prev)
		}
		prev = e.ID
	}
	got, err := st.ListEntries(bg(), vocab.EntryWaiting)
	must(t, err)
	byID := map[int64]store.Entry{}
	for _, e := range got {
		byID[e.ID] = e
	}
	for _, want := range batch {
		e, ok := byID[want.ID]
		if !ok {
			t.Fatalf("entry %d (%s) not stored", want.ID, want.TaskID)
		}
		if e.TaskID != want.TaskID || e.TryNumber != want.TryNumber || e.Priority != want.Priority {
			t.Fatalf("entry %d stored as %s try %d priority %d, want %s try %d priority %d", e.ID, e.TaskID, e.TryNumber,
				e.Priority, want.TaskID, want.TryNumber, want.Priority)
		}
		wantNeeds := slices.Clone(want.Needs) // read back by pool
		slices.SortFunc(wantNeeds, func(a, b store.Requirement) int { return strings.Compare(a.Pool, b.Pool) })
		if fmt.Sprint(e.Needs) != fmt.Sprint(wantNeeds) && !(len(e.Needs) == 0 && len(want.Needs) == 0) {
			t.Fatalf("entry %s needs %+v, want %+v", e.TaskID, e.Needs, want.Needs)
		}
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.InsertEntries(nil) }))
}

// testPutAttempts: a batch of ended attempts, more than one statement's worth, is written whole;
// of two versions of one try in a batch the later wins, and a try written before is replaced.
func testPutAttempts(t *testing.T, h Harness) {
	st := h.New(t)
	e := seed(t, st)
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		return tx.InsertAttempt(&store.Attempt{Run: e.Run, TaskID: "transfer", TryNumber: 1, State: vocab.TaskFailed, Reason: "first"})
	}))
	var batch []*store.Attempt
	for i := 1; i <= 100; i++ {
		batch = append(batch, &store.Attempt{Run: e.Run, TaskID: "transfer", TryNumber: i, State: vocab.TaskFailed,
			StartDate: day, EndDate: day.Add(time.Second), Reason: fmt.Sprint("try ", i), Daemon: "d1"})
	}
	batch = append(batch, &store.Attempt{Run: e.Run, TaskID: "transfer", TryNumber: 7, State: vocab.TaskSuccess, Daemon: "d2"})
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.PutAttempts(batch) }))
	got, err := st.ListAttempts(bg(), e.Run, "transfer")
	must(t, err)
	if len(got) != 100 {
		t.Fatalf("%d attempts, want 100", len(got))
	}
	for i, a := range got {
		want := fmt.Sprint("try ", i+1)
		switch {
		case a.TryNumber != i+1:
			t.Fatalf("attempt %d has try %d", i, a.TryNumber)
		case i+1 == 7 && (a.State != vocab.TaskSuccess || a.Daemon != "d2"):
			t.Fatalf("try 7 = %s by %s, want the later version (success by d2)", a.State, a.Daemon)
		case i+1 != 7 && (a.Reason != want || a.Daemon != "d1" || !a.EndDate.Equal(day.Add(time.Second))):
			t.Fatalf("try %d = %+v, want reason %q by d1", i+1, a, want)
		}
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.PutAttempts(nil) }))
}
