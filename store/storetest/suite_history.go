package storetest

import (
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// testPoolHistory: the claim history the pool timeline reads: which admissions held a pool's
// slots within a window (PoolHistory) and at an instant (PoolHoldersAt, with their attempts),
// from the queue entries' admission and end times. An implicit pool's rows are not a pool's
// history, and an entry that ended at an instant no longer holds at it.
func testPoolHistory(t *testing.T, h Harness) {
	st := h.New(t)
	t0 := day.Add(time.Hour)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	entries := map[string]*store.Entry{}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		r := &store.Run{DAGID: "etl", RunID: "r1", RunType: vocab.RunManual, LogicalDate: day, State: vocab.RunRunning, QueuedAt: day}
		if err := tx.InsertRun(r); err != nil {
			return err
		}
		for _, c := range []struct {
			task  string
			try   int
			slots int
		}{{"extract", 1, 1}, {"load", 2, 2}, {"report", 1, 1}} {
			if err := tx.InsertTI(&store.TaskInstance{Run: r.PK, TaskID: c.task, State: vocab.TaskScheduled, TryNumber: c.try}); err != nil {
				return err
			}
			e := &store.Entry{Run: r.PK, TaskID: c.task, TryNumber: c.try, Label: "etl." + c.task, Priority: 1, Due: day,
				State: vocab.EntryWaiting, CreatedAt: day, Needs: []store.Requirement{{Pool: "db", Slots: c.slots},
					{Pool: "_global", Slots: 1, Implicit: true, Capacity: 32}}}
			if err := tx.InsertEntry(e); err != nil {
				return err
			}
			entries[c.task] = e
		}
		return nil
	}))
	step := func(f func(tx store.Tx) error) { must(t, st.WithTx(bg(), f)) }
	admit := func(task string, m int) {
		step(func(tx store.Tx) error { return tx.Admit(entries[task], "d1", 1, at(m), at(m).Add(time.Hour)) })
	}
	release := func(task string, m int) {
		step(func(tx store.Tx) error {
			held, err := tx.ReleaseHeld(entries[task].ID, "d1", 1, at(m))
			if !held && err == nil {
				t.Errorf("releasing %s: not held", task)
			}
			return err
		})
	}
	admit("extract", 0)
	admit("load", 10)
	release("extract", 20)
	admit("report", 30)
	release("load", 40)

	for _, c := range []struct {
		name string
		m    int
		want []string // task:try:slots, by admission
	}{
		{"before any", -1, nil},
		{"at the first admission", 0, []string{"extract:1:1"}},
		{"two held", 15, []string{"extract:1:1", "load:2:2"}},
		{"at an end: the ended one no longer holds", 20, []string{"load:2:2"}},
		{"one ended, one open", 35, []string{"load:2:2", "report:1:1"}},
		{"only the open one", 50, []string{"report:1:1"}},
	} {
		hs, err := st.PoolHoldersAt(bg(), "db", at(c.m))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range hs {
			if h.DAGID != "etl" || h.RunID != "r1" || h.Pool != "db" {
				t.Errorf("%s: holder %+v", c.name, h)
			}
			got = append(got, h.TaskID+":"+itoa(h.TryNumber)+":"+itoa(h.Slots))
		}
		if !equalStrings(got, c.want) {
			t.Errorf("%s (minute %d): holders %v, want %v", c.name, c.m, got, c.want)
		}
	}
	if hs, err := st.PoolHoldersAt(bg(), "db", at(15)); err != nil || len(hs) != 2 || hs[0].State != vocab.EntryDone ||
		!hs[0].AdmittedAt.Equal(at(0)) || !hs[0].EndedAt.Equal(at(20)) || hs[1].Entry != entries["load"].ID {
		t.Errorf("holders at minute 15: %+v %v", hs, err)
	}
	if hs, err := st.PoolHoldersAt(bg(), "_global", at(15)); err != nil || len(hs) != 0 {
		t.Errorf("an implicit pool's holders: %+v %v", hs, err)
	}

	for _, c := range []struct {
		name     string
		from, to int
		want     []string // task, by admission
	}{
		{"the whole", -60, 60, []string{"extract", "load", "report"}},
		{"after the first ended", 25, 60, []string{"load", "report"}},
		{"before the last began", -60, 25, []string{"extract", "load"}},
		{"before any", -120, -60, nil},
		{"a window ending as the first ends", 20, 20, []string{"extract", "load"}},
	} {
		hs, err := st.PoolHistory(bg(), "db", at(c.from), at(c.to))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range hs {
			for task, e := range entries {
				if e.ID == h.Entry {
					got = append(got, task)
				}
			}
		}
		if !equalStrings(got, c.want) {
			t.Errorf("%s: history %v, want %v", c.name, got, c.want)
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
