package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/poolflow/poolflow/store"
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
			Priority: i, Due: day, State: "waiting", CreatedAt: day}
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
	got, err := st.ListEntries(bg(), "waiting")
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
