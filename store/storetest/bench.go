package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// BenchPass measures the store half of one admission pass, as the scheduler loop runs it:
// begin (taking the writers' lock), read the change version and every claim, admit one entry
// into three pools, release one earlier admission, record a wait reason, commit. held is how
// many admissions hold claims meanwhile (the claims the pass reads).
func BenchPass(b *testing.B, h Harness) {
	for _, held := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			st := h.New(b)
			var ids []int64
			var entries []*store.Entry
			mk := func(tx store.Tx, run int64, i int) (*store.Entry, error) {
				e := &store.Entry{Run: run, TaskID: fmt.Sprintf("t%07d", i), TryNumber: 1, Label: "bench", Due: day,
					State: vocab.EntryWaiting, CreatedAt: day, Needs: []store.Requirement{{Pool: "a", Slots: 1}, {Pool: "b", Slots: 1},
						{Pool: "_global", Slots: 1, Implicit: true, Capacity: 1 << 30}}}
				return e, tx.InsertEntry(e)
			}
			var run int64
			must(b, st.WithTx(bg(), func(tx store.Tx) error {
				r := &store.Run{DAGID: "bench", RunID: "r", RunType: vocab.RunManual, LogicalDate: day, State: vocab.RunRunning, QueuedAt: day}
				if err := tx.InsertRun(r); err != nil {
					return err
				}
				run = r.PK
				for i := 0; i < held+b.N; i++ {
					e, err := mk(tx, run, i)
					if err != nil {
						return err
					}
					entries = append(entries, e)
				}
				for _, e := range entries[:held] {
					if err := tx.Admit(e, "d", 1, day, day.Add(time.Hour)); err != nil {
						return err
					}
					ids = append(ids, e.ID)
				}
				return nil
			}))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e := entries[held+i]
				err := st.WithTx(bg(), func(tx store.Tx) error {
					if _, err := tx.DataVersion(); err != nil {
						return err
					}
					if _, err := tx.Claims(); err != nil {
						return err
					}
					if err := tx.Admit(e, "d", 1, day, day.Add(time.Hour)); err != nil {
						return err
					}
					_, err := tx.ReleaseHeld(ids[i], "d", 1, day)
					return err
				})
				must(b, err)
				ids = append(ids, e.ID)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/pass")
		})
	}
}
