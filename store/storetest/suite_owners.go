package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// testOwnerRows: each start takes the next epoch, clears the handled mark and records the API
// address it advertises now; a heartbeat reports a takeover (handled epoch) or a newer owner of
// the id and renews nothing then.
func testOwnerRows(t *testing.T, h Harness) {
	st := h.New(t)
	var epochs []int64
	for i := 0; i < 2; i++ {
		o := store.Owner{ID: "d1", Kind: vocab.OwnerDaemon, Host: "h", PID: 42, StartedAt: day, Heartbeat: day,
			LeaseUntil: day.Add(time.Minute), API: "http://h:808" + itoa(i+1)}
		must(t, st.WithTx(bg(), func(tx store.Tx) error {
			if err := tx.PutOwner(&o); err != nil {
				return err
			}
			return tx.MarkOwnerHandled("d1", o.Epoch)
		}))
		epochs = append(epochs, o.Epoch)
	}
	if epochs[0] != 1 || epochs[1] != 2 {
		t.Fatalf("epochs %v, want 1, 2", epochs)
	}
	if o, err := st.GetOwner(bg(), "d1"); err != nil || o.API != "http://h:8082" {
		t.Fatalf("owner row %+v %v, want the API address of its latest start, http://h:8082", o, err)
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		rows, err := tx.Owners()
		if len(rows) != 1 || rows[0].API != "http://h:8082" {
			t.Errorf("owners in a transaction %+v, want d1 with its API address", rows)
		}
		return err
	}))
	later := day.Add(time.Hour)
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		row, err := tx.Heartbeat("d1", 2, later, later.Add(time.Minute))
		if row.HandledEpoch != 2 {
			t.Errorf("heartbeat after a takeover: handled %d, want 2", row.HandledEpoch)
		}
		return err
	}))
	o, err := st.GetOwner(bg(), "d1")
	if err != nil || !o.Heartbeat.Equal(day) {
		t.Fatalf("a handled owner's heartbeat renewed its lease: %+v %v", o, err)
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.ReleaseOwner("d1", 2, later) }))
	if o, _ := st.GetOwner(bg(), "d1"); !o.LeaseUntil.Equal(later) {
		t.Fatalf("released lease until %v, want %v", o.LeaseUntil, later)
	}
	if _, err := st.GetOwner(bg(), "nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown owner: %v, want ErrNotFound", err)
	}
}

// testTakeover: a dead owner's claims are released (entries back in the queue with their try),
// its leader-owned runs move, and its test runs fail.
func testTakeover(t *testing.T, h Harness) {
	st := h.New(t)
	e := seed(t, st)
	now := time.Now()
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		r, err := tx.RunByPK(e.Run)
		if err != nil {
			return err
		}
		r.Owner = "dead"
		if err := tx.UpdateRun(&r); err != nil {
			return err
		}
		if err := tx.Admit(e, "dead", 3, now, now.Add(time.Minute)); err != nil {
			return err
		}
		sched := &store.Run{DAGID: "etl", RunID: "s1", RunType: vocab.RunSchedule, LogicalDate: day, State: vocab.RunRunning,
			QueuedAt: day, Owner: "dead"}
		return tx.InsertRun(sched)
	}))
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		released, err := tx.ReleaseOwnerClaims("dead", 3)
		if err != nil || len(released) != 1 || released[0] != e.ID {
			t.Errorf("released %v %v", released, err)
		}
		n, err := tx.AdoptRuns("dead", "alive", vocab.RunSchedule, vocab.RunCatchup)
		if err != nil || n != 1 {
			t.Errorf("adopted %d %v", n, err)
		}
		ended, skipped, err := tx.FailOwnerRuns("dead", vocab.RunManual, "owner gone", now)
		if err != nil || len(ended) != 1 || skipped != 0 {
			t.Errorf("failed runs %+v skipped %d %v", ended, skipped, err)
		}
		return err
	}))
	got, err := st.EntryByID(bg(), e.ID)
	if err != nil || got.State != vocab.EntryRetired || !got.Replay {
		t.Fatalf("entry after the takeover: %+v %v", got, err)
	}
	run, err := st.GetRun(bg(), "etl", "s1")
	if err != nil || run.Owner != "alive" {
		t.Fatalf("adopted run %+v %v", run, err)
	}
	if claims, _ := st.ListClaims(bg()); len(claims) != 0 {
		t.Fatalf("claims after the takeover: %+v", claims)
	}
}

// testReads: what the API and the UI read comes back as written.
func testReads(t *testing.T, h Harness) {
	st := h.New(t)
	e := seed(t, st)
	now := day.Add(time.Minute)
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		for _, p := range []store.Pool{
			{Name: "source_db", Slots: 1, TargetSlots: store.NoTarget, Ordering: vocab.Backfill, Source: "file"},
			{Name: "destination_db", Slots: 3, TargetSlots: 2, Ordering: vocab.Strict, MaxQueued: 7,
				StarvationAfter: time.Minute, IncludeDeferred: true, OnResize: vocab.ResizeDrain, Description: "dw", Source: "store"},
		} {
			if p.OnResize == "" {
				p.OnResize = vocab.ResizeImmediate
			}
			if err := tx.PutPool(&p, now); err != nil {
				return err
			}
		}
		if err := tx.UpsertDAG("etl", "etl.yaml", "@daily", now); err != nil {
			return err
		}
		if err := tx.SetPaused("etl", true, now); err != nil {
			return err
		}
		if err := tx.SetCheckpoint("etl", day); err != nil {
			return err
		}
		if err := tx.SetImportErrors(map[string]string{"bad.yaml": "line 1: oops"}, now); err != nil {
			return err
		}
		if err := tx.SetForce(e.ID); err != nil {
			return err
		}
		if err := tx.SetImplicitLimit([]int64{e.ID}, "_global", 32); err != nil {
			return err
		}
		if err := tx.SetPaused("nope", true, now); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("pausing an unknown DAG: %v", err)
		}
		return tx.Admit(e, "d1", 1, now, now.Add(time.Minute))
	}))
	ps, err := st.ListPools(bg())
	if err != nil || len(ps) != 2 || ps[0].Name != "destination_db" || ps[0].TargetSlots != 2 || !ps[0].IncludeDeferred ||
		ps[0].StarvationAfter != time.Minute || ps[1].TargetSlots != store.NoTarget {
		t.Fatalf("pools %+v %v", ps, err)
	}
	got, err := st.LatestEntry(bg(), e.Run, "transfer")
	if err != nil || !got.Force || got.State != vocab.EntryAdmitted || got.Owner != "" || got.DAGID != "etl" || len(got.Needs) != 3 ||
		!got.Needs[0].Implicit || got.Needs[0].Capacity != 32 {
		t.Fatalf("entry %+v %v", got, err)
	}
	states, err := st.ListDAGStates(bg())
	if err != nil || !states["etl"].Paused || !states["etl"].Checkpoint.Equal(day) {
		t.Fatalf("dag states %+v %v", states, err)
	}
	ie, err := st.ImportErrors(bg())
	if err != nil || ie["bad.yaml"] != "line 1: oops" {
		t.Fatalf("import errors %+v %v", ie, err)
	}
	runs, total, err := st.ListRuns(bg(), "", 10, 0)
	if err != nil || total != 1 || len(runs) != 1 || runs[0].RunID != "r1" {
		t.Fatalf("runs %+v %d %v", runs, total, err)
	}
	hs, err := st.PoolHoldings(bg(), day)
	if err != nil || len(hs) != 2 {
		t.Fatalf("holdings %+v %v", hs, err)
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		held, waiting, err := tx.PoolHeld("destination_db")
		if held != 2 || waiting != 0 {
			t.Errorf("held %d waiting %d", held, waiting)
		}
		return err
	}))
	if _, err := st.GetRun(bg(), "etl", "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown run: %v", err)
	}
}

// testRunText: the runs list's text filter finds runs by a part of their run id, DAG id or
// note, ignoring case, and takes LIKE's wildcards literally.
func testRunText(t *testing.T, h Harness) {
	st := h.New(t)
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		for i, r := range []struct{ dag, id, note string }{
			{"etl", "manual__Nightly_1", ""}, {"etl", "scheduled__2", "the DB was down"},
			{"report", "manual__3", ""}, {"report", "50%_off", ""},
		} {
			at := day.Add(time.Duration(i) * time.Minute)
			run := store.Run{DAGID: r.dag, RunID: r.id, RunType: vocab.RunManual, LogicalDate: at, State: vocab.RunSuccess,
				QueuedAt: at, Note: r.note}
			if err := tx.InsertRun(&run); err != nil {
				return err
			}
		}
		return nil
	}))
	for _, c := range []struct {
		text string
		dag  string
		want []string
	}{
		{"nightly", "", []string{"manual__Nightly_1"}},
		{"REPORT", "", []string{"50%_off", "manual__3"}},
		{"db was", "", []string{"scheduled__2"}},
		{"manual", "report", []string{"manual__3"}},
		{"%", "", []string{"50%_off"}},
		{"_o", "", []string{"50%_off"}},
		{"nothing", "", nil},
	} {
		runs, total, err := st.ListRunsWhere(bg(), store.RunFilter{Text: c.text, DAGID: c.dag, OrderBy: "queued_at", Desc: true})
		must(t, err)
		var got []string
		for _, r := range runs {
			got = append(got, r.RunID)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) || total != len(c.want) {
			t.Errorf("text %q dag %q: %v (total %d), want %v", c.text, c.dag, got, total, c.want)
		}
	}
}

// testRunWaits: a run's queue entries are its waits' history (RunEntries, every try), and the
// open runs waiting for a person or a pool are counted per DAG (OpenRunWaits).
func testRunWaits(t *testing.T, h Harness) {
	st := h.New(t)
	e := seed(t, st) // run of etl, transfer try 1 waiting
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		if err := tx.Admit(e, "d1", 1, day.Add(90*time.Second), day.Add(time.Hour)); err != nil {
			return err
		}
		e2 := store.Entry{Run: e.Run, TaskID: "transfer", TryNumber: 2, Label: "etl.transfer try 2", Priority: 1, Due: day.Add(2 * time.Minute),
			State: vocab.EntryWaiting, CreatedAt: day.Add(2 * time.Minute), Needs: []store.Requirement{{Pool: "source_db", Slots: 1}}}
		return tx.InsertEntry(&e2)
	}))
	es, err := st.RunEntries(bg(), e.Run)
	must(t, err)
	if len(es) != 2 || es[0].TryNumber != 1 || !es[0].AdmittedAt.Equal(day.Add(90*time.Second)) || es[1].TryNumber != 2 ||
		len(es[0].Needs) != 3 || es[1].State != vocab.EntryWaiting {
		t.Fatalf("RunEntries: %+v", es)
	}
	if es, err := st.RunEntries(bg(), e.Run+1000); err != nil || len(es) != 0 {
		t.Errorf("RunEntries of no run: %v %v", es, err)
	}

	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		for i, c := range []struct {
			dag   string
			state vocab.RunState
			tis   []vocab.TaskState
		}{
			{"gate", vocab.RunRunning, []vocab.TaskState{vocab.TaskAwaitingApproval, vocab.TaskScheduled}},
			{"gate", vocab.RunRunning, []vocab.TaskState{vocab.TaskAwaitingApproval}},
			{"gate", vocab.RunFailed, []vocab.TaskState{vocab.TaskAwaitingApproval}}, // ended: not counted
			{"load", vocab.RunQueued, []vocab.TaskState{vocab.TaskScheduled, vocab.TaskScheduled}},
			{"quiet", vocab.RunRunning, []vocab.TaskState{vocab.TaskRunning}},
		} {
			at := day.Add(time.Duration(i) * time.Hour)
			run := store.Run{DAGID: c.dag, RunID: "r" + itoaTest(i), RunType: vocab.RunManual, LogicalDate: at, State: c.state, QueuedAt: at}
			if err := tx.InsertRun(&run); err != nil {
				return err
			}
			for k, s := range c.tis {
				if err := tx.InsertTI(&store.TaskInstance{Run: run.PK, TaskID: "t" + itoaTest(k), State: s}); err != nil {
					return err
				}
			}
		}
		return nil
	}))
	got, err := st.OpenRunWaits(bg())
	must(t, err)
	want := map[string]store.RunWaits{"gate": {Approval: 2, Pool: 1}, "load": {Pool: 1}}
	for dag, w := range want {
		if got[dag] != w {
			t.Errorf("OpenRunWaits[%s] = %+v, want %+v", dag, got[dag], w)
		}
	}
	if _, ok := got["quiet"]; ok {
		t.Errorf("a run waiting for nothing is counted: %+v", got)
	}
}

func itoaTest(i int) string { return fmt.Sprint(i) }
