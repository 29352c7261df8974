package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The store half of repairing runs (§10, issue 18): command arguments, MaxTries, notes, run
// deletion with its tombstone, the audit log, and migration 0006 of an existing database.

// ownedRun inserts a running manual run of dag etl owned by owner, with one task instance.
func ownedRun(t testing.TB, st store.Store, runID, owner string) *store.Run {
	t.Helper()
	r := &store.Run{DAGID: "etl", RunID: runID, RunType: vocab.RunManual, LogicalDate: day, State: vocab.RunRunning, QueuedAt: day,
		Owner: owner}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		if err := tx.InsertRun(r); err != nil {
			return err
		}
		return tx.InsertTI(&store.TaskInstance{Run: r.PK, TaskID: "extract", State: vocab.TaskNone})
	}))
	return r
}

// changesOf reads ChangesSince(since) in a transaction of st.
func changesOf(t testing.TB, st store.Store, since int64) store.Changes {
	t.Helper()
	var c store.Changes
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		var err error
		c, err = tx.ChangesSince(since)
		return err
	}))
	return c
}

// commit runs fn in a transaction of st and returns the change number before it and its own.
func commit(t testing.TB, st store.Store, fn func(tx store.Tx) error) (before, after int64) {
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

// testCommandParams: every command kind is accepted, clear and mark carry their arguments as
// JSON through PendingCommands, a command without arguments reads "", and a kind the schema
// does not know is refused.
func testCommandParams(t *testing.T, h Harness) {
	st := h.New(t)
	r := ownedRun(t, st, "r1", "d1")
	clearJSON, err := json.Marshal(store.ClearParams{TaskIDs: []string{"extract", "load"}, Downstream: true, OnlyFailed: true})
	must(t, err)
	markJSON, err := json.Marshal(store.MarkParams{State: string(vocab.TaskSuccess), TaskIDs: []string{"extract"}, Upstream: true})
	must(t, err)
	want := map[vocab.CommandKind]string{}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		for _, k := range vocab.CommandKinds() {
			c := &store.Command{Kind: k, Run: r.PK, TaskID: "extract", Who: "cli:ann@host", Note: "why"}
			switch k {
			case vocab.CommandClear:
				c.Params = string(clearJSON)
			case vocab.CommandMark:
				c.Params = string(markJSON)
			}
			if err := tx.InsertCommand(c, day); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			want[k] = c.Params
		}
		return nil
	}))
	var got []store.Command
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		var err error
		got, err = tx.PendingCommands([]string{"d1"})
		return err
	}))
	if len(got) != len(vocab.CommandKinds()) {
		t.Fatalf("pending commands %+v, want one of each kind", got)
	}
	for _, c := range got {
		if c.Params != want[c.Kind] || c.Who != "cli:ann@host" || c.Note != "why" || c.Run != r.PK {
			t.Errorf("command %s: %+v, want params %q", c.Kind, c, want[c.Kind])
		}
		if c.Kind == vocab.CommandClear {
			var p store.ClearParams
			must(t, json.Unmarshal([]byte(c.Params), &p))
			if !reflect.DeepEqual(p, store.ClearParams{TaskIDs: []string{"extract", "load"}, Downstream: true, OnlyFailed: true}) {
				t.Errorf("clear params %+v", p)
			}
		}
	}
	err = st.WithTx(bg(), func(tx store.Tx) error {
		return tx.InsertCommand(&store.Command{Kind: "explode", Run: r.PK}, day)
	})
	if !errors.Is(err, store.ErrConstraint) {
		t.Fatalf("an unknown command kind: %v, want ErrConstraint", err)
	}
}

// testMaxTries: a task instance's MaxTries is written by InsertTI, UpdateTI and PutTIs (insert
// and update) and read by every read of task instances, ChangesSince included.
func testMaxTries(t *testing.T, h Harness) {
	target := h.Target(t)
	a, b := h.Open(t, target), h.Open(t, target)
	e := seed(t, a)
	maxTries := func(tis []store.TaskInstance) map[string]int {
		out := map[string]int{}
		for _, ti := range tis {
			out[ti.TaskID] = ti.MaxTries
		}
		return out
	}
	before, _ := commit(t, a, func(tx store.Tx) error {
		return tx.PutTIs([]*store.TaskInstance{
			{Run: e.Run, TaskID: "transfer", State: vocab.TaskUpForRetry, TryNumber: 3, MaxTries: 6},
			{Run: e.Run, TaskID: "load", State: vocab.TaskNone, MaxTries: 2}})
	})
	if got := maxTries(changesOf(t, b, before).TaskInstances); !reflect.DeepEqual(got, map[string]int{"transfer": 6, "load": 2}) {
		t.Fatalf("changed task instances' MaxTries %v", got)
	}
	must(t, a.WithTx(bg(), func(tx store.Tx) error {
		if err := tx.UpdateTI(&store.TaskInstance{Run: e.Run, TaskID: "transfer", State: vocab.TaskScheduled, TryNumber: 3,
			MaxTries: 7}); err != nil {
			return err
		}
		if err := tx.InsertTI(&store.TaskInstance{Run: e.Run, TaskID: "report", State: vocab.TaskNone, MaxTries: 4}); err != nil {
			return err
		}
		tis, err := tx.TaskInstances(e.Run)
		if got := maxTries(tis); got["transfer"] != 7 || got["report"] != 4 {
			t.Errorf("TaskInstances' MaxTries %v", got)
		}
		return err
	}))
	tis, err := b.ListTaskInstances(bg(), e.Run)
	must(t, err)
	if got := maxTries(tis); !reflect.DeepEqual(got, map[string]int{"transfer": 7, "load": 2, "report": 4}) {
		t.Errorf("ListTaskInstances' MaxTries %v", got)
	}
	byRun, err := b.TaskInstancesOfRuns(bg(), []int64{e.Run})
	must(t, err)
	if got := maxTries(byRun[e.Run]); got["transfer"] != 7 {
		t.Errorf("TaskInstancesOfRuns' MaxTries %v", got)
	}
}
