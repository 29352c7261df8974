package executor

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/executor/decide"
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

const hourlyDAG = `schedule: '@hourly'
tasks:
  - {id: work, bash: 'true', pool_requirements: {db: 1}}
`

// newBackfill stores a backfill of dagID over n hourly dates ending an hour before t0, as the
// API does.
func (b *bundle) newBackfill(t *testing.T, dagID string, n int, bf store.Backfill) store.Backfill {
	t.Helper()
	from := t0.Add(-time.Duration(n) * time.Hour)
	dates := make([]time.Time, n)
	for i := range dates {
		dates[i] = from.Add(time.Duration(i) * time.Hour)
	}
	if bf.Backwards {
		for i, j := 0, len(dates)-1; i < j; i, j = i+1, j-1 {
			dates[i], dates[j] = dates[j], dates[i]
		}
	}
	bf.DAGID, bf.From, bf.To, bf.State, bf.CreatedAt = dagID, from, dates[0].Add(time.Duration(n-1)*time.Hour), vocab.BackfillRunning, t0
	if bf.Reprocess == "" {
		bf.Reprocess = vocab.ReprocessNone
	}
	if err := b.st.WithTx(context.Background(), func(tx store.Tx) error { return tx.InsertBackfill(&bf, dates) }); err != nil {
		t.Fatal(err)
	}
	return bf
}

// backfillRuns are the open runs of a backfill in a daemon's memory, by logical date.
func backfillRuns(h *Harness, id int64) map[time.Time]vocab.RunState {
	out := map[time.Time]vocab.RunState{}
	for _, r := range h.State().Runs {
		if r.Backfill == id {
			out[r.LogicalDate] = r.State
		}
	}
	return out
}

// TestBackfillRunsInOrder: a backfill creates its runs oldest first (newest first backwards),
// never more than its max_active_runs open at once, each of run type backfill and run id
// backfill__<date>, takes the next date as soon as one ends, and completes once every date's
// run ended, with its progress counted from the runs.
func TestBackfillRunsInOrder(t *testing.T) {
	t.Parallel()
	for _, backwards := range []bool{false, true} {
		b := setup(t, "pools:\n  db: 4\n", map[string]string{"hourly.yaml": hourlyDAG})
		clock := NewFakeClock(t0)
		b.clock = clock
		h := b.nodeHarness(t, "host-a:/state", clock)
		h.mustPass(t)
		bf := b.newBackfill(t, "hourly", 5, store.Backfill{MaxActiveRuns: 2, Backwards: backwards})
		var order []time.Time
		seen := map[time.Time]bool{}
		var running []*attempt.Spec
		for i := 0; i < 20; i++ {
			plans, err := h.Settle()
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range plans {
				running = append(running, p.Starts...)
			}
			open := backfillRuns(h, bf.ID)
			if len(open) > 2 {
				t.Fatalf("%d runs of the backfill open: %v", len(open), open)
			}
			runs := slices.Collect(maps.Values(h.State().Runs))
			slices.SortFunc(runs, func(a, b *state.Run) int { return cmp.Compare(a.PK, b.PK) })
			for _, r := range runs {
				if r.Backfill == bf.ID && !seen[r.LogicalDate] {
					seen[r.LogicalDate] = true
					order = append(order, r.LogicalDate)
					if r.RunType != vocab.RunBackfill || r.RunID != "backfill__"+r.LogicalDate.Format("2006-01-02T15:04:05.000Z07:00") {
						t.Fatalf("run %s of type %s", r.RunID, r.RunType)
					}
				}
			}
			if len(running) == 0 {
				break
			}
			s := running[0]
			running = running[1:]
			clock.Advance(time.Second)
			h.mustPass(t, h.End(s, true, ""))
		}
		if len(order) != 5 {
			t.Fatalf("backwards %v: runs created at %v", backwards, order)
		}
		for i := 1; i < len(order); i++ {
			if order[i].Before(order[i-1]) != backwards {
				t.Fatalf("backwards %v: order %v", backwards, order)
			}
		}
		got, err := b.st.GetBackfill(context.Background(), bf.ID)
		if err != nil || got.State != vocab.BackfillCompleted || got.Progress != (store.BackfillProgress{Total: 5, Done: 5}) ||
			got.Owner != "host-a:/state" {
			t.Fatalf("backwards %v: backfill %+v %v", backwards, got, err)
		}
	}
}

// TestBackfillReprocess: reprocess none skips a date that has a run; failed clears the failed
// tasks of a failed run (the run joins the backfill and runs again) and skips a successful one;
// completed clears both.
func TestBackfillReprocess(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reprocess        vocab.Reprocess
		cleared, skipped int
	}{
		{vocab.ReprocessNone, 0, 2},
		{vocab.ReprocessFailed, 1, 1},
		{vocab.ReprocessCompleted, 2, 0},
	} {
		b := setup(t, "pools:\n  db: 4\n", map[string]string{"hourly.yaml": hourlyDAG})
		clock := NewFakeClock(t0)
		b.clock = clock
		h := b.nodeHarness(t, "host-a:/state", clock)
		h.mustPass(t)
		// Two ended scheduled runs at the first two dates: one failed, one succeeded.
		for i, st := range []vocab.RunState{vocab.RunFailed, vocab.RunSuccess} {
			at := t0.Add(-time.Duration(3-i) * time.Hour)
			ti := vocab.TaskSuccess
			if st == vocab.RunFailed {
				ti = vocab.TaskFailed
			}
			err := b.st.WithTx(context.Background(), func(tx store.Tx) error {
				r := &store.Run{DAGID: "hourly", RunID: "scheduled__" + at.Format(time.RFC3339), RunType: vocab.RunSchedule,
					LogicalDate: at, State: st, QueuedAt: at, EndDate: at}
				if err := tx.InsertRun(r); err != nil {
					return err
				}
				return tx.InsertTI(&store.TaskInstance{Run: r.PK, TaskID: "work", State: ti, TryNumber: 1})
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		bf := b.newBackfill(t, "hourly", 3, store.Backfill{MaxActiveRuns: 3, Reprocess: tc.reprocess})
		if _, err := h.Settle(); err != nil {
			t.Fatal(err)
		}
		dates, _, err := b.st.ListBackfillDates(context.Background(), bf.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		cleared, skipped, created := 0, 0, 0
		for _, d := range dates {
			switch d.Action {
			case vocab.BackfillCleared:
				cleared++
				if d.RunState != vocab.RunRunning {
					t.Errorf("%s: cleared run %s is %s", tc.reprocess, d.RunID, d.RunState)
				}
			case vocab.BackfillSkipped:
				skipped++
			case vocab.BackfillCreated:
				created++
			}
		}
		if cleared != tc.cleared || skipped != tc.skipped || created != 1 {
			t.Fatalf("%s: cleared %d skipped %d created %d: %+v", tc.reprocess, cleared, skipped, created, dates)
		}
		if n := len(backfillRuns(h, bf.ID)); n != 1+tc.cleared {
			t.Fatalf("%s: %d runs of the backfill in memory", tc.reprocess, n)
		}
	}
}

// TestBackfillSurvivesRestart: a daemon that stops mid-backfill leaves its dates taken; the
// next start (a new epoch) goes on from the next date and runs no date twice; cancelling then
// fails the waiting work and completes nothing more.
func TestBackfillSurvivesRestart(t *testing.T) {
	t.Parallel()
	b := setup(t, "pools:\n  db: 4\n", map[string]string{"hourly.yaml": hourlyDAG})
	clock := NewFakeClock(t0)
	b.clock = clock
	h := b.nodeHarness(t, "host-a:/state", clock)
	h.mustPass(t)
	bf := b.newBackfill(t, "hourly", 4, store.Backfill{MaxActiveRuns: 1})
	plans, err := h.Settle()
	if err != nil {
		t.Fatal(err)
	}
	var first *attempt.Spec
	for _, p := range plans {
		if len(p.Starts) > 0 {
			first = p.Starts[0]
		}
	}
	if first == nil {
		t.Fatal("nothing started")
	}
	clock.Advance(time.Second)
	h.mustPass(t, h.End(first, true, ""))
	h.Stop()
	h2 := b.nodeHarness(t, "host-a:/state", clock)
	if _, err := h2.Settle(); err != nil {
		t.Fatal(err)
	}
	if err := b.st.WithTx(context.Background(), func(tx store.Tx) error { return tx.CancelBackfill(bf.ID, clock.Now()) }); err != nil {
		t.Fatal(err)
	}
	if _, err := h2.Settle(); err != nil {
		t.Fatal(err)
	}
	runs := b.runs(t, "hourly")
	byDate := map[time.Time]int{}
	for _, r := range runs {
		byDate[r.LogicalDate]++
		if byDate[r.LogicalDate] > 1 {
			t.Fatalf("date %s run twice: %+v", r.LogicalDate, runs)
		}
	}
	got, err := b.st.GetBackfill(context.Background(), bf.ID)
	if err != nil || got.State != vocab.BackfillCancelled || got.Progress.Done != 1 || got.Progress.Left != 2 {
		t.Fatalf("backfill %+v %v (runs %+v)", got, err, runs)
	}
	_ = decide.BackfillTodoLimit
}

// TestBackfillMaxSlots (§11): max_slots caps the backfill's share of a pool as an implicit pool
// debited with the pool in the same admission: with db: 4 and max_slots {db: 1}, three open
// backfill runs hold one slot between them, a fresh run of another DAG gets another at once,
// and the waiting backfill entries say why.
func TestBackfillMaxSlots(t *testing.T) {
	t.Parallel()
	b := setup(t, "pools:\n  db: 4\n", map[string]string{"hourly.yaml": hourlyDAG,
		"fresh.yaml": "tasks:\n  - {id: go, bash: 'true', pool_requirements: {db: 1}}\n"})
	clock := NewFakeClock(t0)
	b.clock = clock
	h := b.nodeHarness(t, "host-a:/state", clock)
	h.mustPass(t)
	bf := b.newBackfill(t, "hourly", 3, store.Backfill{MaxActiveRuns: 3, MaxSlots: map[string]int{"db": 1}})
	plans, err := h.Settle()
	if err != nil {
		t.Fatal(err)
	}
	var starts []*attempt.Spec
	for _, p := range plans {
		starts = append(starts, p.Starts...)
	}
	if len(starts) != 1 || len(backfillRuns(h, bf.ID)) != 3 {
		t.Fatalf("started %d with %d backfill runs open", len(starts), len(backfillRuns(h, bf.ID)))
	}
	ev, _ := h.Trigger(TriggerRequest{DAGID: "fresh"})
	if p := h.mustPass(t, ev); len(p.Starts) != 1 || p.Starts[0].Task.ID != "go" {
		t.Fatalf("the fresh run waits behind the backfill: %v", started(p))
	}
	claims, err := b.st.ListClaims(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]int{}
	for _, c := range claims {
		held[c.Pool] += c.Slots
	}
	if held["db"] != 2 || held["_backfill/1/db"] != 1 {
		t.Fatalf("claims %v", held)
	}
	waiting, err := b.st.ListEntries(context.Background(), vocab.EntryWaiting)
	if err != nil || len(waiting) != 2 {
		t.Fatalf("waiting %+v %v", waiting, err)
	}
	e, err := b.latest(waiting[0].Run, "work")
	if err != nil || e.ReasonCode != vocab.ReasonBackfillLimit ||
		e.Reason != "waiting: backfill 1 has its max_slots of pool db in use (1 of 1)" {
		t.Fatalf("reason %q %q %v", e.ReasonCode, e.Reason, err)
	}
	// The backfill's attempt ends: the next of its entries takes the share.
	clock.Advance(time.Second)
	if p := h.mustPass(t, h.End(starts[0], true, "")); len(p.Starts) != 1 {
		t.Fatalf("after the end: %v", started(p))
	}
}
