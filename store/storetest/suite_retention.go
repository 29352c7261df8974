package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// retentionRun is a run of a retention test: ended at end (zero: open), with a task instance,
// an ended attempt, a done entry with its requirement row, and a done command; entry, when
// set, is one more entry in that state.
type retentionRun struct {
	dag, id string
	end     time.Time
	entry   vocab.EntryState
	version int
}

func seedRetention(t testing.TB, st store.Store, runs []retentionRun) map[string]int64 {
	t.Helper()
	pks := map[string]int64{}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		for i, rr := range runs {
			queued := day.Add(-30 * 24 * time.Hour).Add(time.Duration(i) * time.Minute)
			r := &store.Run{DAGID: rr.dag, RunID: rr.id, RunType: vocab.RunManual, LogicalDate: queued, State: vocab.RunSuccess,
				QueuedAt: queued, StartDate: queued, EndDate: rr.end, Owner: "d1", Version: rr.version}
			if rr.end.IsZero() {
				r.State = vocab.RunRunning
			}
			if err := tx.InsertRun(r); err != nil {
				return err
			}
			pks[rr.id] = r.PK
			if err := tx.PutTIs([]*store.TaskInstance{{Run: r.PK, TaskID: "t", State: vocab.TaskSuccess, TryNumber: 1}}); err != nil {
				return err
			}
			if err := tx.PutAttempts([]*store.Attempt{{Run: r.PK, TaskID: "t", TryNumber: 1, State: vocab.TaskSuccess,
				StartDate: queued, EndDate: queued, Version: rr.version}}); err != nil {
				return err
			}
			done := &store.Entry{Run: r.PK, TaskID: "t", TryNumber: 1, Label: "l", Priority: 1, Due: queued,
				State: vocab.EntryWaiting, CreatedAt: queued, Needs: []store.Requirement{{Pool: "p", Slots: 1}}}
			if err := tx.InsertEntry(done); err != nil {
				return err
			}
			if err := tx.EndEntry(done.ID, vocab.EntryDone, "", "", queued); err != nil {
				return err
			}
			if rr.entry != "" {
				e := &store.Entry{Run: r.PK, TaskID: "u", TryNumber: 1, Label: "l", Priority: 1, Due: queued,
					State: vocab.EntryWaiting, CreatedAt: queued, Needs: []store.Requirement{{Pool: "p", Slots: 1}}}
				if err := tx.InsertEntry(e); err != nil {
					return err
				}
				if rr.entry == vocab.EntryAdmitted {
					if err := tx.Admit(e, "d1", 1, queued, queued.Add(time.Hour)); err != nil {
						return err
					}
				}
			}
			if err := tx.InsertCommand(&store.Command{Kind: vocab.CommandFail, Run: r.PK, TaskID: "t"}, queued); err != nil {
				return err
			}
		}
		return nil
	}))
	return pks
}

// testPruneRuns (§12): retention deletes ended runs older than the cutoff, oldest first and as
// many as asked, with everything they hold; never an open run, a run with a waiting or
// admitted entry (a live attempt), the newest run of a DAG, or the highest run id. A dry run
// counts exactly what it deletes; a run that ended within the hour leaves a tombstone.
func testPruneRuns(t *testing.T, h Harness) {
	st := h.New(t)
	d := 24 * time.Hour
	now := day
	pks := seedRetention(t, st, []retentionRun{
		{dag: "a", id: "old", end: now.Add(-10 * d)},
		{dag: "c", id: "c-old", end: now.Add(-9 * d)},
		{dag: "a", id: "live", end: now.Add(-10 * d), entry: vocab.EntryAdmitted},
		{dag: "a", id: "orphan", end: now.Add(-10 * d), entry: vocab.EntryWaiting},
		{dag: "a", id: "open"},
		{dag: "a", id: "recent", end: now.Add(-10 * time.Minute)},
		{dag: "a", id: "a-last", end: now.Add(-8 * d)},
		{dag: "b", id: "b-last", end: now.Add(-10 * d)},
		{dag: "c", id: "c-last", end: now.Add(-d)},
	})
	counts, err := st.CountPrunable(bg(), now.Add(-2*d), time.Time{})
	must(t, err)
	if counts != (store.PruneCounts{Runs: 2, TaskInstances: 2, Attempts: 2, Entries: 2}) {
		t.Fatalf("a dry run counts %+v, want the 2 old runs", counts)
	}
	if runs, err := st.PrunableRuns(bg(), now.Add(-2*d), 10); err != nil || len(runs) != 2 || runs[0].RunID != "old" ||
		runs[1].RunID != "c-old" || runs[1].DAGID != "c" {
		t.Fatalf("prunable runs %+v %v", runs, err)
	}
	var pruned []store.PrunedRun
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		var err error
		pruned, err = tx.PruneRuns(now.Add(-2*d), now, 1) // one at a time: the oldest
		return err
	}))
	if len(pruned) != 1 || pruned[0] != (store.PrunedRun{PK: pks["old"], DAGID: "a", RunID: "old"}) {
		t.Fatalf("first batch pruned %+v", pruned)
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		var err error
		pruned, err = tx.PruneRuns(now.Add(-2*d), now, 100)
		return err
	}))
	if len(pruned) != 1 || pruned[0].RunID != "c-old" {
		t.Fatalf("second batch pruned %+v", pruned)
	}
	for _, id := range []string{"old", "c-old"} {
		pk := pks[id]
		for _, q := range []string{`task_instances WHERE run = `, `attempts WHERE run = `, `queue_entries WHERE run = `,
			`commands WHERE run = `, `entry_requirements WHERE entry IN (SELECT id FROM queue_entries WHERE run = `} {
			closeParen := ""
			if q[0] == 'e' {
				closeParen = ")"
			}
			if n := Count(t, st, `SELECT COUNT(*) FROM `+q+itoa(int(pk))+closeParen); n != 0 {
				t.Errorf("run %s: %d rows left in %s", id, n, q)
			}
		}
	}
	if n := Count(t, st, `SELECT COUNT(*) FROM deleted_runs`); n != 0 {
		t.Errorf("%d tombstones for runs that ended days ago", n)
	}
	// With the cutoff at now, the run that ended minutes ago goes, and leaves a tombstone;
	// the others stay whatever their age.
	seq := Count(t, st, `SELECT seq FROM poolflow_changes`)
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		var err error
		pruned, err = tx.PruneRuns(now, now, 100)
		return err
	}))
	if len(pruned) != 1 || pruned[0].RunID != "recent" {
		t.Fatalf("pruned at now %+v", pruned)
	}
	if ch := changesOf(t, st, int64(seq)); !slices.Equal(ch.DeletedRuns, []int64{pks["recent"]}) {
		t.Fatalf("deleted runs reported %v, want the recent one", ch.DeletedRuns)
	}
	for _, id := range []string{"live", "orphan", "open", "a-last", "b-last", "c-last"} {
		if _, err := st.GetRunByPK(bg(), pks[id]); err != nil {
			t.Errorf("run %s: %v", id, err)
		}
	}
	if c, err := st.CountPrunable(bg(), now.Add(time.Hour), time.Time{}); err != nil || c.Runs != 0 {
		t.Fatalf("left to prune %+v %v", c, err)
	}
	// What the logs folder's walk reads: a deleted run is missing, an open one has no end.
	ends, err := st.RunEnds(bg(), "a", []string{"old", "live", "open", "never"})
	if _, gone := ends["old"]; err != nil || gone || len(ends) != 2 || !ends["live"].Equal(now.Add(-10*d)) ||
		!ends["open"].IsZero() {
		t.Fatalf("run ends %v %v", ends, err)
	}
}

// testPruneHighestRun: the run with the highest id stays even when a newer-queued run of its
// DAG exists (SQLite counts the next id from it).
func testPruneHighestRun(t *testing.T, h Harness) {
	st := h.New(t)
	old := &store.Run{DAGID: "a", RunID: "newest-queued", RunType: vocab.RunManual, LogicalDate: day, State: vocab.RunSuccess,
		QueuedAt: day, EndDate: day}
	high := &store.Run{DAGID: "a", RunID: "highest-id", RunType: vocab.RunManual, LogicalDate: day, State: vocab.RunSuccess,
		QueuedAt: day.Add(-time.Hour), EndDate: day.Add(-time.Hour)}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		if err := tx.InsertRun(old); err != nil {
			return err
		}
		return tx.InsertRun(high)
	}))
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		pruned, err := tx.PruneRuns(day.Add(time.Hour), day.Add(time.Hour), 10)
		if len(pruned) != 0 {
			t.Errorf("pruned %+v", pruned)
		}
		return err
	}))
}

// testPruneEventsAndVersions: events older than the cutoff go, oldest first; a DAG version goes
// once it is old, neither current nor the highest, and nothing records it.
func testPruneEventsAndVersions(t *testing.T, h Harness) {
	st := h.New(t)
	d := 24 * time.Hour
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		for i, at := range []time.Time{day.Add(-10 * d), day.Add(-9 * d), day.Add(-d), day} {
			if err := tx.InsertEvent(&store.Event{At: at, Actor: "cli:a@h", Action: vocab.ActionPause, DAGID: itoa(i)}); err != nil {
				return err
			}
		}
		return nil
	}))
	if c, err := st.CountPrunable(bg(), time.Time{}, day.Add(-2*d)); err != nil || c != (store.PruneCounts{Events: 2}) {
		t.Fatalf("events to prune %+v %v", c, err)
	}
	for _, want := range []int{1, 1, 0} {
		var n int
		must(t, st.WithTx(bg(), func(tx store.Tx) error {
			var err error
			n, err = tx.PruneEvents(day.Add(-2*d), 1)
			return err
		}))
		if n != want {
			t.Fatalf("pruned %d events, want %d", n, want)
		}
	}
	if evs, total, err := st.ListEvents(bg(), store.EventFilter{}); err != nil || total != 2 || evs[1].DAGID != "2" {
		t.Fatalf("events left %+v %d %v", evs, total, err)
	}

	// Versions 1–4 of a, all last seen long ago; 3 is current again, 4 the highest; a run's
	// attempt records 1, the run itself 3: 2 alone may go.
	for i, n := range []int{1, 2, 4} {
		must(t, putVersion(t, st, store.DAGVersion{DAGID: "a", Version: n, Hash: "h" + itoa(n), Format: "yaml", Source: itoa(n)},
			day.Add(time.Duration(i-20)*d)))
	}
	must(t, putVersion(t, st, store.DAGVersion{DAGID: "a", Version: 3, Hash: "h3", Format: "yaml", Source: "3"}, day.Add(-15*d)))
	seedRetention(t, st, []retentionRun{{dag: "a", id: "r", end: day, version: 3}})
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		return tx.PutAttempts([]*store.Attempt{{Run: 1, TaskID: "t", TryNumber: 2, State: vocab.TaskFailed, Version: 1}})
	}))
	if c, err := st.CountPrunable(bg(), day.Add(-d), time.Time{}); err != nil || c.Versions != 1 {
		t.Fatalf("versions to prune %+v %v", c, err)
	}
	var n int
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		var err error
		n, err = tx.PruneVersions(day.Add(-d), 10)
		return err
	}))
	list, _, err := st.ListDAGVersions(bg(), "a", 0, 0)
	must(t, err)
	var left []int
	for _, v := range list {
		left = append(left, v.Version)
	}
	if n != 1 || !slices.Equal(left, []int{4, 3, 1}) {
		t.Fatalf("pruned %d versions, left %v; want 2 gone", n, left)
	}
}

// testVacuum: Vacuum runs on an open store, and a SQLite database is incremental afterwards
// (a new one is from its creation), so retention's batches shrink it.
func testVacuum(t *testing.T, h Harness) {
	st := h.New(t)
	if h.Driver == "sqlite" {
		if n := Count(t, st, `PRAGMA auto_vacuum`); n != 2 {
			t.Fatalf("a new database has auto_vacuum %d, want 2 (incremental)", n)
		}
		Exec(t, st, `PRAGMA auto_vacuum = NONE; VACUUM`) // as an older binary created it
		if n := Count(t, st, `PRAGMA auto_vacuum`); n != 0 {
			t.Fatalf("auto_vacuum %d after turning it off", n)
		}
	}
	seedRetention(t, st, []retentionRun{{dag: "a", id: "r", end: day}})
	must(t, store.Vacuum(bg(), st))
	if h.Driver == "sqlite" {
		if n := Count(t, st, `PRAGMA auto_vacuum`); n != 2 {
			t.Fatalf("auto_vacuum %d after Vacuum, want 2 (incremental)", n)
		}
	}
	if _, err := st.GetRun(bg(), "a", "r"); err != nil {
		t.Fatal(err)
	}
}

// testPruneShrinks: on SQLite, the pages a retention batch freed go back to the file system at
// its end (incremental_vacuum), so the file shrinks with the history.
func testPruneShrinks(t *testing.T, h Harness) {
	if h.Driver != "sqlite" {
		t.Skip("PostgreSQL reuses the space of deleted rows after autovacuum; its files keep their size")
	}
	st := h.New(t)
	// The schema's own pages (every table and index, empty) stay: what must go is the history's.
	empty := Count(t, st, `PRAGMA page_count`)
	runs := make([]retentionRun, 600)
	for i := range runs {
		runs[i] = retentionRun{dag: "a", id: "r" + itoa(i), end: day.Add(-48 * time.Hour)}
	}
	seedRetention(t, st, runs)
	before := Count(t, st, `PRAGMA page_count`)
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		_, err := tx.PruneRuns(day, day, 1000)
		return err
	}))
	after, free := Count(t, st, `PRAGMA page_count`), Count(t, st, `PRAGMA freelist_count`)
	if free != 0 || after-empty > (before-empty)/2 {
		t.Fatalf("pages %d before, %d after with %d free (%d empty): the file did not shrink", before, after, free, empty)
	}
}
