package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

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

// testNotes: SetNote writes a run's or a task instance's note with who and when and stamps the
// row (another daemon's ChangesSince sees it); the scheduler's writes of the same rows from a
// copy that holds an older note (UpdateRun, UpdateTI, PutTIs) leave it; a trigger's note comes
// with InsertRun; a run or task instance that does not exist is ErrNotFound and leaves the
// transaction usable.
func testNotes(t *testing.T, h Harness) {
	target := h.Target(t)
	a, b := h.Open(t, target), h.Open(t, target)
	e := seed(t, a)
	at := day.Add(time.Hour)

	// A trigger's note.
	noted := &store.Run{DAGID: "etl", RunID: "noted", RunType: vocab.RunManual, LogicalDate: day, State: vocab.RunQueued,
		QueuedAt: day, Note: "rerun after the fix", NoteBy: "api:10.0.0.1:5555", NoteAt: day}
	must(t, a.WithTx(bg(), func(tx store.Tx) error { return tx.InsertRun(noted) }))
	if r, err := b.GetRun(bg(), "etl", "noted"); err != nil || r.Note != noted.Note || r.NoteBy != noted.NoteBy || !r.NoteAt.Equal(day) {
		t.Fatalf("a trigger's note: %+v %v", r, err)
	}

	// The run as the scheduler's memory holds it, and the task instance, before the notes.
	run, err := a.GetRunByPK(bg(), e.Run)
	must(t, err)
	tis, err := a.ListTaskInstances(bg(), e.Run)
	must(t, err)
	ti := tis[0]
	ti.Note, ti.NoteBy = "an older note", "someone"

	before, _ := commit(t, a, func(tx store.Tx) error {
		if err := tx.SetNote(e.Run, "", "the database was down", "api:10.0.0.1:5555", at); err != nil {
			return err
		}
		return tx.SetNote(e.Run, "transfer", "flaky: retried by hand", "cli:bob@host", at)
	})
	c := changesOf(t, b, before)
	if len(c.Runs) != 1 || c.Runs[0].Note != "the database was down" || c.Runs[0].NoteBy != "api:10.0.0.1:5555" ||
		!c.Runs[0].NoteAt.Equal(at) {
		t.Fatalf("changed runs after SetNote: %+v", c.Runs)
	}
	if len(c.TaskInstances) != 1 || c.TaskInstances[0].Note != "flaky: retried by hand" || c.TaskInstances[0].NoteBy != "cli:bob@host" ||
		!c.TaskInstances[0].NoteAt.Equal(at) {
		t.Fatalf("changed task instances after SetNote: %+v", c.TaskInstances)
	}

	// The scheduler writes the rows from its older copies.
	must(t, a.WithTx(bg(), func(tx store.Tx) error {
		run.State, run.StartDate = vocab.RunRunning, day
		if err := tx.UpdateRun(&run); err != nil {
			return err
		}
		ti.State, ti.TryNumber = vocab.TaskRunning, 1
		if err := tx.UpdateTI(&ti); err != nil {
			return err
		}
		ti.State = vocab.TaskUpForRetry
		return tx.PutTIs([]*store.TaskInstance{&ti})
	}))
	checkNotes := func(step, runNote, tiNote string) {
		t.Helper()
		r, err := b.GetRunByPK(bg(), e.Run)
		if err != nil || r.Note != runNote || (runNote != "" && (r.NoteBy != "api:10.0.0.1:5555" || !r.NoteAt.Equal(at))) {
			t.Errorf("%s: run %+v %v, want note %q", step, r, err, runNote)
		}
		runs, _, err := b.ListRunsWhere(bg(), store.RunFilter{DAGID: "etl", RunTypes: []vocab.RunType{vocab.RunManual}})
		must(t, err)
		for _, lr := range runs {
			if lr.PK == e.Run && (lr.Note != r.Note || lr.NoteBy != r.NoteBy || !lr.NoteAt.Equal(r.NoteAt)) {
				t.Errorf("%s: listed run %+v, read %+v", step, lr, r)
			}
		}
		tis, err := b.ListTaskInstances(bg(), e.Run)
		must(t, err)
		if len(tis) != 1 || tis[0].Note != tiNote || tis[0].NoteBy != "cli:bob@host" || !tis[0].NoteAt.Equal(at) {
			t.Errorf("%s: task instance %+v, want note %q", step, tis, tiNote)
		}
	}
	checkNotes("after the scheduler's writes", "the database was down", "flaky: retried by hand")
	if tis, _ := b.ListTaskInstances(bg(), e.Run); tis[0].State != vocab.TaskUpForRetry || tis[0].TryNumber != 1 {
		t.Errorf("the scheduler's write of the task instance was lost: %+v", tis[0])
	}

	// A note cleared is a note too: who cleared it and when.
	must(t, a.WithTx(bg(), func(tx store.Tx) error { return tx.SetNote(e.Run, "transfer", "", "cli:bob@host", at) }))
	checkNotes("after clearing the task's note", "the database was down", "")

	must(t, a.WithTx(bg(), func(tx store.Tx) error {
		for _, k := range []struct {
			run  int64
			task string
		}{{e.Run + 1000, ""}, {e.Run, "nope"}, {e.Run + 1000, "transfer"}} {
			if err := tx.SetNote(k.run, k.task, "x", "y", at); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("SetNote(%d, %q): %v, want ErrNotFound", k.run, k.task, err)
			}
		}
		return tx.SetNote(e.Run, "", "", "api:10.0.0.1:5555", at) // the transaction goes on
	}))
	checkNotes("after the refusals", "", "")
}

// rowsOfRun counts what run pk holds in every table that belongs to it.
func rowsOfRun(t testing.TB, st store.Store, pk int64) map[string]int {
	t.Helper()
	run, entries := itoa(int(pk)), `(SELECT id FROM queue_entries WHERE run = `+itoa(int(pk))+`)`
	return map[string]int{
		"dag_runs":           Count(t, st, `SELECT COUNT(*) FROM dag_runs WHERE id = `+run),
		"task_instances":     Count(t, st, `SELECT COUNT(*) FROM task_instances WHERE run = `+run),
		"attempts":           Count(t, st, `SELECT COUNT(*) FROM attempts WHERE run = `+run),
		"queue_entries":      Count(t, st, `SELECT COUNT(*) FROM queue_entries WHERE run = `+run),
		"entry_requirements": Count(t, st, `SELECT COUNT(*) FROM entry_requirements WHERE entry IN `+entries),
		"claims":             Count(t, st, `SELECT COUNT(*) FROM claims WHERE entry IN `+entries),
		"commands":           Count(t, st, `SELECT COUNT(*) FROM commands WHERE run = `+run),
	}
}

// testDeleteRun: DeleteRun refuses a run whose entry is admitted (an attempt runs), leaving the
// transaction usable for the refusal's event; otherwise it removes the run and every row it
// holds, and nothing of another run; its tombstone comes back from ChangesSince exactly once per
// window, on another handle too; a deleted run's id is never given again; old tombstones are
// pruned, but the highest.
func testDeleteRun(t *testing.T, h Harness) {
	target := h.Target(t)
	a, b := h.Open(t, target), h.Open(t, target)
	e := seed(t, a) // run r1: task instance transfer, an entry needing three pools
	kept := ownedRun(t, a, "r2", "d1")
	now := time.Now()
	fill := func(run int64, task string) {
		t.Helper()
		must(t, a.WithTx(bg(), func(tx store.Tx) error {
			if err := tx.InsertTI(&store.TaskInstance{Run: run, TaskID: task + "_done", State: vocab.TaskSuccess, TryNumber: 1}); err != nil {
				return err
			}
			if err := tx.InsertAttempt(&store.Attempt{Run: run, TaskID: task + "_done", TryNumber: 1, State: vocab.TaskSuccess,
				StartDate: day, EndDate: day}); err != nil {
				return err
			}
			if err := tx.InsertEntry(&store.Entry{Run: run, TaskID: task + "_done", TryNumber: 1, Label: "l", Due: day,
				State: vocab.EntryDone, CreatedAt: day, EndedAt: day, Needs: []store.Requirement{{Pool: "p", Slots: 1}}}); err != nil {
				return err
			}
			return tx.InsertCommand(&store.Command{Kind: vocab.CommandFail, Run: run, TaskID: task, Who: "cli:ann@host"}, day)
		}))
	}
	fill(e.Run, "transfer")
	fill(kept.PK, "extract")
	must(t, a.WithTx(bg(), func(tx store.Tx) error { return tx.Admit(e, "d1", 1, now, now.Add(time.Minute)) }))
	keptRows := rowsOfRun(t, a, kept.PK)
	rows := rowsOfRun(t, a, e.Run)
	if want := map[string]int{"dag_runs": 1, "task_instances": 2, "attempts": 1, "queue_entries": 2, "entry_requirements": 4,
		"claims": 3, "commands": 1}; !reflect.DeepEqual(rows, want) {
		t.Fatalf("run r1 holds %v, want %v", rows, want)
	}

	// Refused while the entry is admitted: nothing goes, and the refusal's event commits.
	must(t, a.WithTx(bg(), func(tx store.Tx) error {
		err := tx.DeleteRun(e.Run)
		if !errors.Is(err, store.ErrConflict) {
			t.Errorf("delete of a run with an admitted entry: %v, want ErrConflict", err)
		}
		return tx.InsertEvent(&store.Event{At: now, Actor: "cli:ann@host", Action: vocab.ActionDeleteRun, DAGID: "etl",
			RunID: "r1", Outcome: fmt.Sprint(err)})
	}))
	if got := rowsOfRun(t, a, e.Run); !reflect.DeepEqual(got, rows) {
		t.Fatalf("a refused delete changed the run's rows: %v, want %v", got, rows)
	}
	if evs, n, err := a.ListEvents(bg(), store.EventFilter{Action: vocab.ActionDeleteRun}); err != nil || n != 1 ||
		!strings.Contains(evs[0].Outcome, "attempt running") {
		t.Fatalf("the refusal's event: %+v %d %v", evs, n, err)
	}

	// A sensor between pokes keeps one claim while waiting: it goes with the run.
	must(t, a.WithTx(bg(), func(tx store.Tx) error { return tx.Reschedule(e.ID, []string{"destination_db"}, now.Add(time.Minute)) }))
	if n := rowsOfRun(t, a, e.Run)["claims"]; n != 1 {
		t.Fatalf("claims kept between pokes: %d, want 1", n)
	}
	before, after := commit(t, a, func(tx store.Tx) error { return tx.DeleteRun(e.Run) })
	for table, n := range rowsOfRun(t, b, e.Run) {
		if n != 0 {
			t.Errorf("%s keeps %d rows of the deleted run", table, n)
		}
	}
	if got := rowsOfRun(t, b, kept.PK); !reflect.DeepEqual(got, keptRows) {
		t.Errorf("the other run's rows %v, want %v", got, keptRows)
	}
	if claims, err := b.ListClaims(bg()); err != nil || len(claims) != 0 {
		t.Errorf("claims after the delete: %+v %v", claims, err)
	}
	if _, err := b.GetRunByPK(bg(), e.Run); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the deleted run reads %v, want ErrNotFound", err)
	}

	// The tombstone, once per window, on the other handle.
	c := changesOf(t, b, before)
	if !slices.Equal(c.DeletedRuns, []int64{e.Run}) || len(c.Runs) != 0 || len(c.TaskInstances) != 0 || len(c.Entries) != 0 {
		t.Fatalf("changes of the delete: %+v, want run %d deleted and nothing else", c, e.Run)
	}
	if c := changesOf(t, b, after); len(c.DeletedRuns) != 0 {
		t.Fatalf("changes after the delete: deleted %v", c.DeletedRuns)
	}
	// A run created and deleted after a daemon's last look is only a deletion to it.
	_, s2 := commit(t, a, func(tx store.Tx) error { return tx.SetNote(kept.PK, "", "keep", "cli:ann@host", now) })
	gone := ownedRun(t, a, "gone", "d1")
	_, s3 := commit(t, a, func(tx store.Tx) error { return tx.DeleteRun(gone.PK) })
	c = changesOf(t, b, s2)
	if !slices.Equal(c.DeletedRuns, []int64{gone.PK}) || len(c.Runs) != 0 || len(c.TaskInstances) != 0 {
		t.Fatalf("changes of a run created and deleted: %+v", c)
	}
	if c := changesOf(t, b, before); !slices.Equal(c.DeletedRuns, []int64{e.Run, gone.PK}) {
		t.Fatalf("deleted since the first delete: %v", c.DeletedRuns)
	}

	// Refusals leave the transaction usable.
	must(t, a.WithTx(bg(), func(tx store.Tx) error {
		if err := tx.DeleteRun(e.Run); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a second delete: %v, want ErrNotFound", err)
		}
		return tx.SetNote(kept.PK, "", "still here", "cli:ann@host", now)
	}))

	// The newest run's id is not given again, with or without an id from NextIDs.
	next := func() int64 {
		t.Helper()
		var r int64
		must(t, a.WithTx(bg(), func(tx store.Tx) error {
			var err error
			r, _, err = tx.NextIDs()
			return err
		}))
		return r
	}
	if n := next(); n <= gone.PK {
		t.Fatalf("NextIDs after deleting run %d: %d", gone.PK, n)
	}
	fresh := ownedRun(t, a, "fresh", "d1") // InsertRun without an id
	if fresh.PK <= gone.PK {
		t.Fatalf("a new run got id %d after run %d was deleted", fresh.PK, gone.PK)
	}
	if c := changesOf(t, b, s3); len(c.DeletedRuns) != 0 || !slices.ContainsFunc(c.Runs, func(r store.Run) bool { return r.PK == fresh.PK }) {
		t.Fatalf("changes after the new run: %+v", c)
	}

	// Tombstones older than a day go at the next delete, except the highest.
	tombstones := func() int { return Count(t, a, `SELECT COUNT(*) FROM deleted_runs`) }
	x, y := ownedRun(t, a, "x", "d1"), ownedRun(t, a, "y", "d1")
	must(t, a.WithTx(bg(), func(tx store.Tx) error { return tx.DeleteRun(y.PK) }))
	if n := tombstones(); n != 3 {
		t.Fatalf("tombstones %d, want 3", n)
	}
	Exec(t, a, `UPDATE deleted_runs SET deleted_at = `+fmt.Sprint(store.Micros(now.Add(-25*time.Hour))))
	must(t, a.WithTx(bg(), func(tx store.Tx) error { return tx.DeleteRun(x.PK) })) // below y
	if n := tombstones(); n != 2 {
		t.Fatalf("tombstones after pruning %d, want 2 (x's new one, y's the highest)", n)
	}
	if n := next(); n <= y.PK {
		t.Fatalf("NextIDs after pruning: %d, the deleted run y was %d", n, y.PK)
	}
}

// testEvents: InsertEvent writes every field and sets increasing ids; ListEvents lists newest
// first (by time, then id), with every filter, pages of Limit (0: 100, at most 1000) from
// Offset, and the count of all it selects; an unknown action or a missing actor is refused.
func testEvents(t *testing.T, h Harness) {
	st := h.New(t)
	m := func(n int) time.Time { return day.Add(time.Duration(n) * time.Minute) }
	evs := []store.Event{
		{At: m(0), Actor: "cli:ann@host", Action: vocab.ActionTrigger, DAGID: "etl", RunID: "r1", Params: `{"conf":{}}`, Outcome: "ok"},
		{At: m(1), Actor: "api:10.0.0.1:5555", Action: vocab.ActionClear, DAGID: "etl", RunID: "r1", TaskID: "load", Try: 2,
			Params: `{"only_failed":true}`, Outcome: "ok"},
		{At: m(2), Actor: "cli:ann@host", Action: vocab.ActionMark, DAGID: "etl", RunID: "r1", TaskID: "load", Try: 3, Outcome: "ok"},
		{At: m(2), Actor: "api:10.0.0.1:5555", Action: vocab.ActionDeleteRun, DAGID: "etl", RunID: "r2",
			Outcome: "conflict: an attempt runs"},
		{At: m(3), Actor: vocab.ActorScheduler + ":d1", Action: vocab.ActionTakeover, Outcome: "ok"},
		{At: m(4), Actor: "cli:bob@host", Action: vocab.ActionPoolSet, Pool: "db", Params: `{"slots":4}`, Outcome: "ok"},
		{At: m(5), Actor: "cli:bob@host", Action: vocab.ActionPause, DAGID: "report", Outcome: "ok"},
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		for i := range evs {
			if err := tx.InsertEvent(&evs[i]); err != nil {
				return err
			}
			if i > 0 && evs[i].ID <= evs[i-1].ID {
				t.Errorf("event ids %d then %d", evs[i-1].ID, evs[i].ID)
			}
		}
		return nil
	}))
	show := func(e store.Event) string {
		return fmt.Sprintf("%d %d %s %s %s/%s/%s/%d %s %s %s", e.ID, e.At.UnixMicro(), e.Actor, e.Action, e.DAGID, e.RunID, e.TaskID,
			e.Try, e.Pool, e.Params, e.Outcome)
	}
	list := func(name string, f store.EventFilter, wantTotal int, want ...int) {
		t.Helper()
		got, total, err := st.ListEvents(bg(), f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var g, w []string
		for _, e := range got {
			g = append(g, show(e))
		}
		for _, i := range want {
			w = append(w, show(evs[i]))
		}
		if total != wantTotal || !slices.Equal(g, w) {
			t.Errorf("%s: %d in all, %q\nwant %d in all, %q", name, total, g, wantTotal, w)
		}
	}
	list("all, newest first", store.EventFilter{}, 7, 6, 5, 4, 3, 2, 1, 0)
	list("dag", store.EventFilter{DAGID: "etl"}, 4, 3, 2, 1, 0)
	list("run", store.EventFilter{DAGID: "etl", RunID: "r1"}, 3, 2, 1, 0)
	list("task", store.EventFilter{DAGID: "etl", RunID: "r1", TaskID: "load"}, 2, 2, 1)
	list("run id alone", store.EventFilter{RunID: "r2"}, 1, 3)
	list("task id alone", store.EventFilter{TaskID: "load"}, 2, 2, 1)
	list("action", store.EventFilter{Action: vocab.ActionMark}, 1, 2)
	list("actor", store.EventFilter{Actor: "cli:bob@host"}, 2, 6, 5)
	list("after, inclusive", store.EventFilter{After: m(2)}, 5, 6, 5, 4, 3, 2)
	list("before, exclusive", store.EventFilter{Before: m(2)}, 2, 1, 0)
	list("between", store.EventFilter{After: m(1), Before: m(4)}, 4, 4, 3, 2, 1)
	list("none match", store.EventFilter{Action: vocab.ActionTrigger, Actor: "cli:bob@host"}, 0)
	list("first page", store.EventFilter{Limit: 2}, 7, 6, 5)
	list("second page", store.EventFilter{Limit: 2, Offset: 2}, 7, 4, 3)
	list("last page", store.EventFilter{Limit: 2, Offset: 6}, 7, 0)
	list("past the end", store.EventFilter{Limit: 2, Offset: 7}, 7)
	list("a page of a filter", store.EventFilter{DAGID: "etl", Limit: 3, Offset: 1}, 4, 2, 1, 0)
	// A bounded count: the same page, a total of at most the bound plus one.
	list("counted to 2", store.EventFilter{Limit: 2, CountAtMost: 2}, 3, 6, 5)
	list("counted to 7", store.EventFilter{Limit: 2, CountAtMost: 7}, 7, 6, 5)
	list("counted to 3 of a filter", store.EventFilter{DAGID: "etl", Limit: 3, Offset: 1, CountAtMost: 3}, 4, 2, 1, 0)
	list("negative offset", store.EventFilter{Limit: 1, Offset: -5}, 7, 6)

	for _, bad := range []store.Event{
		{At: day, Actor: "cli:ann@host", Action: "explode"},
		{At: day, Action: vocab.ActionNote},
	} {
		must(t, st.WithTx(bg(), func(tx store.Tx) error {
			if err := tx.InsertEvent(&bad); !errors.Is(err, store.ErrConstraint) {
				t.Errorf("event %+v: %v, want ErrConstraint", bad, err)
			}
			return tx.UpsertDAG("etl", "etl.yaml", "", day) // the transaction goes on
		}))
	}

	// Limit 0 is 100; no page holds more than 1000.
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		for i := 0; i < 1000; i++ {
			if err := tx.InsertEvent(&store.Event{At: m(10 + i), Actor: vocab.ActorScheduler + ":d1", Action: vocab.ActionReplay,
				DAGID: "etl", RunID: "r3", TaskID: "t", Try: i}); err != nil {
				return err
			}
		}
		return nil
	}))
	for _, c := range []struct{ limit, want int }{{0, 100}, {250, 250}, {5000, 1000}} {
		got, total, err := st.ListEvents(bg(), store.EventFilter{Limit: c.limit})
		if err != nil || len(got) != c.want || total != 1007 || got[0].Try != 999 || got[0].Action != vocab.ActionReplay {
			t.Errorf("limit %d: %d events, %d in all, %v; want %d of 1007", c.limit, len(got), total, err, c.want)
		}
	}
}

// testMigrateRepair: a database at schema 5 reaches 6 with its commands (ids, kinds, outcomes;
// params empty) and its rows: task instances with MaxTries 0 and no note, a run's trigger note
// dated from its queueing; the new kinds, events and deletion work on it.
func testMigrateRepair(t *testing.T, h Harness) {
	target := h.Target(t)
	h.Exec(t, target, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`)
	for v, name := range []string{"0001_init.sql", "0002_owners.sql", "0003_read_indexes.sql", "0004_change_stamps.sql",
		"0005_reason_codes.sql"} {
		body, err := fs.ReadFile(h.Migrations, name)
		if err != nil {
			t.Fatal(err)
		}
		h.Exec(t, target, string(body))
		h.Exec(t, target, `INSERT INTO schema_migrations VALUES (`+itoa(v+1)+`, '`+name+`', 0)`)
	}
	for _, q := range []string{
		`INSERT INTO dag_runs (id, dag_id, run_id, run_type, logical_date, state, note, owner, queued_at, seq) VALUES
			(1, 'd', 'noted', 'manual', 0, 'running', 'why I ran it', 'd1', 5000000, 1),
			(2, 'd', 'plain', 'manual', 0, 'success', '', 'd1', 6000000, 1)`,
		`INSERT INTO task_instances (run, task_id, state, try_number, seq) VALUES (1, 'a', 'failed', 2, 1), (2, 'b', 'success', 1, 1)`,
		`INSERT INTO commands (id, kind, run, task_id, who, note, created_at, done_at, error) VALUES
			(7, 'replace', 1, '', 'd2', '', 1, 2, 'refused'),
			(8, 'fail', 1, 'a', 'cli:ann@host', 'stuck', 3, NULL, NULL)`,
		`UPDATE poolflow_changes SET seq = 1`,
	} {
		h.Exec(t, target, q)
	}
	if h.Driver == "postgres" {
		// As the store's inserts (and store copy) leave them: the identity sequences past the ids.
		h.Exec(t, target, `SELECT setval(pg_get_serial_sequence('dag_runs', 'id'), 2), setval(pg_get_serial_sequence('commands', 'id'), 8)`)
	}
	st := h.Open(t, target)
	if r, err := st.GetRun(bg(), "d", "noted"); err != nil || r.Note != "why I ran it" || r.NoteBy != "" ||
		!r.NoteAt.Equal(store.FromMicros(5000000)) {
		t.Errorf("noted run %+v %v", r, err)
	}
	if r, err := st.GetRun(bg(), "d", "plain"); err != nil || r.Note != "" || !r.NoteAt.IsZero() {
		t.Errorf("plain run %+v %v", r, err)
	}
	tis, err := st.ListTaskInstances(bg(), 1)
	if err != nil || len(tis) != 1 || tis[0].MaxTries != 0 || tis[0].Note != "" || !tis[0].NoteAt.IsZero() || tis[0].TryNumber != 2 {
		t.Errorf("task instances %+v %v", tis, err)
	}
	if done, refused, err := st.CommandOutcome(bg(), 7); err != nil || !done || refused != "refused" {
		t.Errorf("command 7: %v %q %v", done, refused, err)
	}
	var c9 int64
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		cs, err := tx.PendingCommands([]string{"d1"})
		if err != nil {
			return err
		}
		if len(cs) != 1 || cs[0] != (store.Command{ID: 8, Kind: vocab.CommandFail, Run: 1, TaskID: "a", Who: "cli:ann@host", Note: "stuck"}) {
			t.Errorf("pending commands %+v", cs)
		}
		c := &store.Command{Kind: vocab.CommandClear, Run: 1, TaskID: "a", Params: `{"include_downstream":true}`}
		if err := tx.InsertCommand(c, day); err != nil {
			return err
		}
		c9 = c.ID
		if err := tx.InsertEvent(&store.Event{At: day, Actor: "cli:ann@host", Action: vocab.ActionClear, DAGID: "d",
			RunID: "noted", TaskID: "a", Outcome: "ok"}); err != nil {
			return err
		}
		return tx.SetNote(1, "a", "cleared after the fix", "cli:ann@host", day)
	}))
	if c9 <= 8 {
		t.Errorf("a new command's id %d after 8", c9)
	}
	if n := Count(t, st, map[string]string{
		"sqlite":   `SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'commands_pending'`,
		"postgres": `SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'commands_pending'`,
	}[h.Driver]); n != 1 {
		t.Errorf("index commands_pending: %d", n)
	}
	if evs, n, err := st.ListEvents(bg(), store.EventFilter{DAGID: "d"}); err != nil || n != 1 || evs[0].Action != vocab.ActionClear {
		t.Errorf("events %+v %d %v", evs, n, err)
	}
	before, _ := commit(t, st, func(tx store.Tx) error { return tx.DeleteRun(2) })
	if c := changesOf(t, st, before); !slices.Equal(c.DeletedRuns, []int64{2}) {
		t.Errorf("deleted runs %v", c.DeletedRuns)
	}
	var next int64
	must(t, st.WithTx(bg(), func(tx store.Tx) error { next, _, err = tx.NextIDs(); return err }))
	if next != 3 {
		t.Errorf("next run id %d after deleting run 2, want 3", next)
	}
}

// testCopyRepair: store copy moves notes, MaxTries, command arguments and the audit log, keeps
// event ids (new ones go on after them), and leaves the source's tombstones behind; a target
// holding only tombstones is not empty, and replace removes them.
func testCopyRepair(t *testing.T, h Harness) {
	src, dst := h.New(t), h.New(t)
	r := ownedRun(t, src, "r1", "d1")
	must(t, src.WithTx(bg(), func(tx store.Tx) error {
		if err := tx.PutTIs([]*store.TaskInstance{{Run: r.PK, TaskID: "extract", State: vocab.TaskScheduled, TryNumber: 2,
			MaxTries: 5}}); err != nil {
			return err
		}
		if err := tx.SetNote(r.PK, "", "run note", "api:10.0.0.1:5555", day); err != nil {
			return err
		}
		if err := tx.SetNote(r.PK, "extract", "task note", "cli:ann@host", day.Add(time.Second)); err != nil {
			return err
		}
		if err := tx.InsertCommand(&store.Command{Kind: vocab.CommandMark, Run: r.PK, TaskID: "extract",
			Params: `{"state":"skipped"}`}, day); err != nil {
			return err
		}
		for i, a := range []vocab.Action{vocab.ActionTrigger, vocab.ActionNote, vocab.ActionMark} {
			if err := tx.InsertEvent(&store.Event{At: day.Add(time.Duration(i) * time.Second), Actor: "cli:ann@host", Action: a,
				DAGID: "etl", RunID: "r1", TaskID: "extract", Try: i, Pool: "p", Params: `{"i":` + itoa(i) + `}`, Outcome: "ok"}); err != nil {
				return err
			}
		}
		return nil
	}))
	gone := ownedRun(t, src, "gone", "d1")
	must(t, src.WithTx(bg(), func(tx store.Tx) error { return tx.DeleteRun(gone.PK) }))
	old := ownedRun(t, dst, "old", "d1")
	must(t, dst.WithTx(bg(), func(tx store.Tx) error { return tx.DeleteRun(old.PK) }))

	if _, err := store.Copy(bg(), src, dst, false); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "deleted_runs") {
		t.Fatalf("copy into a target holding a tombstone: %v, want ErrConflict naming deleted_runs", err)
	}
	counts, err := store.Copy(bg(), src, dst, true)
	must(t, err)
	for _, c := range counts {
		if c.Table == "events" && c.Rows != 3 || c.Table == "deleted_runs" {
			t.Errorf("copied %+v", c)
		}
	}
	if n := Count(t, dst, `SELECT COUNT(*) FROM deleted_runs`); n != 0 {
		t.Errorf("tombstones in the target: %d", n)
	}
	got, err := dst.GetRunByPK(bg(), r.PK)
	if err != nil || got.Note != "run note" || got.NoteBy != "api:10.0.0.1:5555" || !got.NoteAt.Equal(day) {
		t.Errorf("copied run %+v %v", got, err)
	}
	tis, err := dst.ListTaskInstances(bg(), r.PK)
	if err != nil || len(tis) != 1 || tis[0].MaxTries != 5 || tis[0].Note != "task note" || tis[0].NoteBy != "cli:ann@host" ||
		!tis[0].NoteAt.Equal(day.Add(time.Second)) {
		t.Errorf("copied task instances %+v %v", tis, err)
	}
	must(t, dst.WithTx(bg(), func(tx store.Tx) error {
		cs, err := tx.PendingCommands([]string{"d1"})
		if len(cs) != 1 || cs[0].Params != `{"state":"skipped"}` {
			t.Errorf("copied commands %+v", cs)
		}
		return err
	}))
	want, _, err := src.ListEvents(bg(), store.EventFilter{})
	must(t, err)
	copied, _, err := dst.ListEvents(bg(), store.EventFilter{})
	must(t, err)
	if len(copied) != 3 || fmt.Sprint(copied) != fmt.Sprint(want) {
		t.Errorf("copied events %+v\nwant %+v", copied, want)
	}
	e := &store.Event{At: day, Actor: "cli:ann@host", Action: vocab.ActionReload}
	must(t, dst.WithTx(bg(), func(tx store.Tx) error { return tx.InsertEvent(e) }))
	if e.ID <= want[0].ID {
		t.Errorf("a new event's id %d after the copied %d", e.ID, want[0].ID)
	}
}
