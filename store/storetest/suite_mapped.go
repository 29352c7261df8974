package storetest

import (
	"fmt"
	"testing"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// testMappedLines: the instances of a mapped task's line that have no row yet (§14) are listed
// by every read of a run's task instances as none, reason code map_line — from its map_next to
// its map_length, once each, an instance that has a row (queued, or of an earlier expansion) as
// its row says — while the changes a refresh reads hold only rows that were written.
func testMappedLines(t *testing.T, h Harness) {
	st := h.New(t)
	e := seed(t, st)
	var seq int64
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		seq = tx.Seq()
		return tx.PutTIs([]*store.TaskInstance{
			{Run: e.Run, TaskID: "load", State: vocab.TaskRunning, MapFirst: 42, MapNext: 3, MapLength: 1500},
			{Run: e.Run, TaskID: "load[0]", State: vocab.TaskRunning, TryNumber: 1},
			{Run: e.Run, TaskID: "load[1]", State: vocab.TaskScheduled},
			{Run: e.Run, TaskID: "load[2]", State: vocab.TaskScheduled},
			{Run: e.Run, TaskID: "load[5]", State: vocab.TaskSuccess, TryNumber: 1},
			// A mapped task whose line is done lists only its rows.
			{Run: e.Run, TaskID: "sums", State: vocab.TaskRunning, MapFirst: 7, MapNext: 1, MapLength: 1},
			{Run: e.Run, TaskID: "sums[0]", State: vocab.TaskRunning, TryNumber: 1}})
	}))
	check := func(how string, tis []store.TaskInstance) {
		t.Helper()
		by := map[string]store.TaskInstance{}
		for _, ti := range tis {
			if _, twice := by[ti.TaskID]; twice {
				t.Fatalf("%s: %s listed twice", how, ti.TaskID)
			}
			by[ti.TaskID] = ti
		}
		if len(by) != 1504 { // transfer, load, its 1,500 instances, sums and its one
			t.Fatalf("%s: %d task instances, want 1504", how, len(by))
		}
		for i := 0; i < 1500; i++ {
			ti, ok := by[fmt.Sprintf("load[%d]", i)]
			switch {
			case !ok:
				t.Fatalf("%s: load[%d] not listed", how, i)
			case i == 5 && (ti.State != vocab.TaskSuccess || ti.TryNumber != 1):
				t.Fatalf("%s: load[5] is %s try %d: the row that exists was not read", how, ti.State, ti.TryNumber)
			case i < 3 && ti.State == vocab.TaskNone:
				t.Fatalf("%s: load[%d] is none: its row was not read", how, i)
			case i >= 3 && i != 5 && (ti.State != vocab.TaskNone || ti.ReasonCode != vocab.ReasonMapLine || ti.TryNumber != 0 ||
				ti.Run != e.Run || ti.MapLength != 0):
				t.Fatalf("%s: load[%d] listed as %+v", how, i, ti)
			}
		}
		if a := by["load[1499]"].Ahead; a != 1496 {
			t.Fatalf("%s: load[1499] has %d ahead of it in the line, want 1496", how, a)
		}
		if l := by["load"]; l.MapFirst != 42 || l.MapNext != 3 || l.MapLength != 1500 {
			t.Fatalf("%s: the mapped task's line reads back as %d, %d, %d; want 42, 3, 1500", how, l.MapFirst, l.MapNext, l.MapLength)
		}
	}
	tis, err := st.ListTaskInstances(bg(), e.Run)
	must(t, err)
	check("ListTaskInstances", tis)
	of, err := st.TaskInstancesOfRuns(bg(), []int64{e.Run})
	must(t, err)
	check("TaskInstancesOfRuns", of[e.Run])
	cells, err := st.TaskCellsOfRuns(bg(), []int64{e.Run})
	must(t, err)
	if len(cells[e.Run]) != 1504 {
		t.Fatalf("TaskCellsOfRuns: %d cells, want 1504", len(cells[e.Run]))
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		tis, err := tx.TaskInstances(e.Run)
		if err != nil {
			return err
		}
		check("Tx.TaskInstances", tis)
		ch, err := tx.ChangesSince(seq)
		if err != nil {
			return err
		}
		if len(ch.TaskInstances) != 7 {
			t.Fatalf("a refresh reads %d task instances, want the 7 written", len(ch.TaskInstances))
		}
		return nil
	}))
}

// testReserveEntryIDs: queue IDs a mapped task's expansion reserved are given to no entry
// inserted later (NextIDs answers past them), on a fresh table too, and a reservation below
// the ids in use changes nothing; the reserved ids can then be inserted with.
func testReserveEntryIDs(t *testing.T, h Harness) {
	st := h.New(t)
	var next int64
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		if err := tx.ReserveEntryIDs(100); err != nil { // no entry was ever inserted
			return err
		}
		var err error
		_, next, err = tx.NextIDs()
		return err
	}))
	if next != 101 {
		t.Fatalf("next entry id %d after reserving up to 100 on a fresh table, want 101", next)
	}
	e := seed(t, st)
	if e.ID <= 100 {
		t.Fatalf("an entry inserted after the reservation got id %d, one of those reserved", e.ID)
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		if err := tx.ReserveEntryIDs(e.ID + 1_000); err != nil {
			return err
		}
		if err := tx.ReserveEntryIDs(5); err != nil { // below: nothing moves back
			return err
		}
		var err error
		_, next, err = tx.NextIDs()
		if err != nil {
			return err
		}
		// A reserved id is the entry's own.
		return tx.InsertEntries([]*store.Entry{{ID: e.ID + 10, Run: e.Run, TaskID: "later", TryNumber: 1, Label: "etl.later try 1",
			Due: day, State: vocab.EntryWaiting, CreatedAt: day}})
	}))
	if next != e.ID+1_001 {
		t.Fatalf("next entry id %d, want %d", next, e.ID+1_001)
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		var err error
		_, next, err = tx.NextIDs()
		return err
	}))
	if next != e.ID+1_001 {
		t.Fatalf("next entry id %d after inserting a reserved one, want %d", next, e.ID+1_001)
	}
}
