package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// testRunPages: ListRunsWhere's pages, whichever end it reads them from (a page past the
// middle is read backwards and turned round), are the slices of the whole ordered list, for
// every order column both ways, ties (equal times) going to the newest run and the runs not
// started or ended last; an offset past the end is an empty page with the total; a bounded
// count (CountAtMost) changes the total only, never the page.
func testRunPages(t *testing.T, h Harness) {
	st := h.New(t)
	const n = 23
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		for i := range n {
			at := day.Add(time.Duration(i/3) * time.Minute) // three runs share each time
			run := store.Run{DAGID: []string{"etl", "report"}[i%2], RunID: fmt.Sprintf("r%02d", i), RunType: vocab.RunManual,
				LogicalDate: at, State: vocab.RunSuccess, QueuedAt: at}
			if i%4 != 0 {
				run.StartDate = at.Add(time.Duration(i%5) * time.Second)
			}
			if i%3 == 1 {
				run.EndDate = run.StartDate.Add(time.Second)
			}
			if err := tx.InsertRun(&run); err != nil {
				return err
			}
		}
		return nil
	}))
	ids := func(runs []store.Run) []string {
		out := make([]string, len(runs))
		for i, r := range runs {
			out[i] = r.RunID
		}
		return out
	}
	for _, col := range []string{"queued_at", "logical_date", "start_date", "end_date", "run_id"} {
		for _, desc := range []bool{true, false} {
			for _, dag := range []string{"", "etl"} {
				f := store.RunFilter{DAGID: dag, OrderBy: col, Desc: desc, Limit: 1000}
				all, total, err := st.ListRunsWhere(bg(), f)
				must(t, err)
				if total != len(all) {
					t.Fatalf("%s desc=%v dag %q: total %d, %d runs", col, desc, dag, total, len(all))
				}
				for _, limit := range []int{1, 4, 5} {
					for off := 0; off <= total+1; off++ {
						f.Limit, f.Offset = limit, off
						page, got, err := st.ListRunsWhere(bg(), f)
						must(t, err)
						want := ids(all[min(off, total):min(off+limit, total)])
						if fmt.Sprint(ids(page)) != fmt.Sprint(want) || got != total {
							t.Fatalf("%s desc=%v dag %q limit %d offset %d: %v (total %d), want %v (total %d)",
								col, desc, dag, limit, off, ids(page), got, want, total)
						}
					}
				}
				// A bounded count gives the same pages, read forwards, and a total of at most
				// the bound plus one (more than the bound) or the count.
				for _, bound := range []int{1, 5, total - 1, total, total + 3} {
					for off := 0; off <= total+1; off += 3 {
						f.Limit, f.Offset, f.CountAtMost = 4, off, bound
						page, got, err := st.ListRunsWhere(bg(), f)
						must(t, err)
						want, wantTotal := ids(all[min(off, total):min(off+4, total)]), min(total, bound+1)
						if fmt.Sprint(ids(page)) != fmt.Sprint(want) || got != wantTotal || f.Capped(got) != (total > bound) {
							t.Fatalf("%s desc=%v dag %q offset %d counting to %d: %v (total %d), want %v (total %d)",
								col, desc, dag, off, bound, ids(page), got, want, wantTotal)
						}
					}
				}
				f.CountAtMost = 0
				// The whole list itself: ties to the newest run, runs without the date last.
				for i := 1; i < len(all); i++ {
					a, b := all[i-1], all[i]
					ta, tb := orderKey(a, col), orderKey(b, col)
					if ta == "" && tb != "" {
						t.Fatalf("%s desc=%v: %s without the date before %s", col, desc, a.RunID, b.RunID)
					}
					if ta == tb && a.PK < b.PK {
						t.Fatalf("%s desc=%v: tie %s before the newer %s", col, desc, a.RunID, b.RunID)
					}
					if ta != "" && tb != "" && ta != tb && (ta > tb) != desc {
						t.Fatalf("%s desc=%v: %s (%s) before %s (%s)", col, desc, a.RunID, ta, b.RunID, tb)
					}
				}
			}
		}
	}
}

// orderKey is a run's value of an order column as text ("" when the date is unset).
func orderKey(r store.Run, col string) string {
	t := map[string]time.Time{"queued_at": r.QueuedAt, "logical_date": r.LogicalDate, "start_date": r.StartDate, "end_date": r.EndDate}
	if col == "run_id" {
		return r.RunID
	}
	if t[col].IsZero() {
		return ""
	}
	return t[col].UTC().Format("2006-01-02T15:04:05.000000") // sorts as text
}
