package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// newBackfill creates a backfill of dag etl over n hourly dates from day, in a transaction.
func newBackfill(t testing.TB, st store.Store, n int, b store.Backfill) store.Backfill {
	t.Helper()
	if b.DAGID == "" {
		b.DAGID = "etl"
	}
	b.From, b.To = day, day.Add(time.Duration(n-1)*time.Hour)
	if b.Reprocess == "" {
		b.Reprocess = vocab.ReprocessNone
	}
	if b.MaxActiveRuns == 0 {
		b.MaxActiveRuns = 2
	}
	b.State, b.CreatedAt = vocab.BackfillRunning, day
	dates := make([]time.Time, n)
	for i := range dates {
		dates[i] = day.Add(time.Duration(i) * time.Hour)
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.InsertBackfill(&b, dates) }))
	return b
}

// testBackfills: a backfill is stored with its dates pending; a pass's step takes dates and the
// owner only from what it read; progress counts the dates by their runs' states; pause, cancel
// and adoption change what they should and nothing once it is over.
func testBackfills(t *testing.T, h Harness) {
	st := h.New(t)
	b := newBackfill(t, st, 5, store.Backfill{MaxSlots: map[string]int{"warehouse": 2}, Conf: `{"k": 1}`, CreatedBy: "cli:me@host"})
	if b.ID == 0 {
		t.Fatal("no id")
	}
	got, err := st.GetBackfill(bg(), b.ID)
	must(t, err)
	if got.DAGID != "etl" || !got.From.Equal(day) || !got.To.Equal(day.Add(4*time.Hour)) || got.MaxSlots["warehouse"] != 2 ||
		got.State != vocab.BackfillRunning || got.Progress != (store.BackfillProgress{Total: 5, Left: 5}) || got.Conf != `{"k": 1}` ||
		got.CreatedBy != "cli:me@host" || got.Owner != "" {
		t.Fatalf("backfill %+v", got)
	}
	// A scheduled run exists at the second date: the work read shows it.
	sched := &store.Run{DAGID: "etl", RunID: "scheduled__2", RunType: vocab.RunSchedule, LogicalDate: day.Add(time.Hour),
		State: vocab.RunFailed, QueuedAt: day}
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.InsertRun(sched) }))
	var work []store.BackfillWork
	must(t, st.WithTx(bg(), func(tx store.Tx) (err error) { work, err = tx.BackfillWork(3); return err }))
	if len(work) != 1 || work[0].Pending != 5 || len(work[0].Todo) != 3 || work[0].Todo[0].Existing.PK != 0 ||
		work[0].Todo[1].Existing.PK != sched.PK || work[0].Todo[1].Existing.State != vocab.RunFailed ||
		!work[0].Todo[2].Date.LogicalDate.Equal(day.Add(2*time.Hour)) {
		t.Fatalf("work %+v", work)
	}
	// A backfill run at a date a scheduled run holds is refused: unique per (DAG, logical date).
	err = st.WithTx(bg(), func(tx store.Tx) error {
		return tx.InsertRun(&store.Run{DAGID: "etl", RunID: "backfill__2", RunType: vocab.RunBackfill,
			LogicalDate: day.Add(time.Hour), State: vocab.RunQueued, QueuedAt: day, Backfill: b.ID})
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a second run at one date: %v", err)
	}
	// The step of daemon d1: it creates the first date's run and clears the second.
	run := &store.Run{DAGID: "etl", RunID: "backfill__1", RunType: vocab.RunBackfill, LogicalDate: day, State: vocab.RunQueued,
		QueuedAt: day, Owner: "d1", Backfill: b.ID}
	step := store.BackfillStep{ID: b.ID, From: "", To: "d1", Dates: []store.BackfillDate{
		{Ordinal: 0, Action: vocab.BackfillCreated, Run: 0},
		{Ordinal: 1, Action: vocab.BackfillCleared, Run: sched.PK, Reason: "failed run cleared"}}}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		if err := tx.InsertRun(run); err != nil {
			return err
		}
		step.Dates[0].Run = run.PK
		return tx.StepBackfill(step, day)
	}))
	if r, err := st.GetRunByPK(bg(), run.PK); err != nil || r.Backfill != b.ID || r.RunType != vocab.RunBackfill {
		t.Fatalf("backfill run %+v %v", r, err)
	}
	// The same step again (another daemon read before it): refused, nothing changes.
	if err := st.WithTx(bg(), func(tx store.Tx) error { return tx.StepBackfill(step, day) }); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a stale step: %v", err)
	}
	step2 := store.BackfillStep{ID: b.ID, From: "d1", To: "d1", Dates: []store.BackfillDate{{Ordinal: 0, Action: vocab.BackfillSkipped}}}
	if err := st.WithTx(bg(), func(tx store.Tx) error { return tx.StepBackfill(step2, day) }); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a date taken twice: %v", err)
	}
	// The cleared run joins the backfill; the scheduled run's state counts for the cleared date.
	sched.State, sched.Backfill = vocab.RunQueued, b.ID
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.UpdateRun(sched) }))
	run.State = vocab.RunSuccess
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.UpdateRun(run) }))
	got, err = st.GetBackfill(bg(), b.ID)
	must(t, err)
	if got.Progress != (store.BackfillProgress{Total: 5, Done: 1, Running: 1, Left: 3}) || got.Owner != "d1" {
		t.Fatalf("progress %+v owner %q", got.Progress, got.Owner)
	}
	dates, total, err := st.ListBackfillDates(bg(), b.ID, 0, 0)
	must(t, err)
	if total != 5 || len(dates) != 5 || dates[0].RunID != "backfill__1" || dates[0].RunState != vocab.RunSuccess ||
		dates[1].Action != vocab.BackfillCleared || dates[1].Reason != "failed run cleared" || dates[4].Action != vocab.BackfillPending {
		t.Fatalf("dates %+v", dates)
	}
	if rs, err := st.ListRunsBetween(bg(), "etl", day, day.Add(time.Hour)); err != nil || len(rs) != 2 || rs[0].PK != run.PK {
		t.Fatalf("runs between %+v %v", rs, err)
	}
	// Pause, adoption by a live daemon, then cancel; an ended backfill refuses all three.
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.SetBackfillPaused(b.ID, true, day) }))
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		n, err := tx.AdoptBackfills("d1", "d2")
		if n != 1 {
			t.Errorf("adopted %d", n)
		}
		return err
	}))
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.CancelBackfill(b.ID, day) }))
	got, err = st.GetBackfill(bg(), b.ID)
	if err != nil || !got.Paused || got.Owner != "d2" || got.State != vocab.BackfillCancelling {
		t.Fatalf("after pause, adopt, cancel %+v %v", got, err)
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		return tx.StepBackfill(store.BackfillStep{ID: b.ID, From: "d2", To: "d2", State: vocab.BackfillCancelled}, day.Add(time.Hour))
	}))
	got, err = st.GetBackfill(bg(), b.ID)
	if err != nil || got.State != vocab.BackfillCancelled || !got.CompletedAt.Equal(day.Add(time.Hour)) {
		t.Fatalf("cancelled %+v %v", got, err)
	}
	if err := st.WithTx(bg(), func(tx store.Tx) error { return tx.SetBackfillPaused(b.ID, false, day) }); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("unpause of a cancelled backfill: %v", err)
	}
	if err := st.WithTx(bg(), func(tx store.Tx) error { return tx.CancelBackfill(99, day) }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("cancel of no backfill: %v", err)
	}
	// Listing: newest first, by DAG; open ones by DAG.
	other := newBackfill(t, st, 2, store.Backfill{DAGID: "load"})
	list, n, err := st.ListBackfills(bg(), "", 0, 0)
	if err != nil || n != 2 || list[0].ID != other.ID || list[1].Progress.Total != 5 {
		t.Fatalf("list %+v %d %v", list, n, err)
	}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		open, err := tx.OpenBackfills("etl")
		if len(open) != 0 {
			t.Errorf("open of etl %+v", open)
		}
		return err
	}))
	// Deleting a run leaves its date without a run.
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.DeleteRun(run.PK) }))
	if dates, _, err := st.ListBackfillDates(bg(), b.ID, 1, 0); err != nil || dates[0].Run != 0 || dates[0].Action != vocab.BackfillCreated {
		t.Fatalf("date of a deleted run %+v %v", dates, err)
	}
}

// testBackfillManyDates: a backfill of 1,000 dates is stored in one transaction, in order.
func testBackfillManyDates(t *testing.T, h Harness) {
	st := h.New(t)
	b := newBackfill(t, st, 1000, store.Backfill{Backwards: true})
	dates, total, err := st.ListBackfillDates(bg(), b.ID, 10, 995)
	if err != nil || total != 1000 || len(dates) != 5 || dates[4].Ordinal != 999 || !dates[4].LogicalDate.Equal(day.Add(999*time.Hour)) {
		t.Fatalf("dates %+v %d %v", dates, total, err)
	}
}
