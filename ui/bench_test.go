package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
)

// fill writes n finished runs of diamond straight into the store, each with its four task
// instances, attempts and done queue entries (admitted and ended within the last hour, so the
// pool timeline has them all), as a daemon that ran them would have left them.
func fill(b testing.TB, bd *bundle, n int) {
	b.Helper()
	now := time.Now().UTC()
	const batch = 250 // short transactions: one long one exceeds the store's 5 s bound on a busy machine
	for lo := 0; lo < n; lo += batch {
		fillBatch(b, bd, now, lo, min(lo+batch, n), n)
	}
}

func fillBatch(b testing.TB, bd *bundle, now time.Time, lo, hi, n int) {
	b.Helper()
	err := bd.st.WithTx(context.Background(), func(tx store.Tx) error {
		for i := lo; i < hi; i++ {
			at := now.Add(-time.Duration(n-i) * 3 * time.Second)
			run := store.Run{DAGID: "diamond", RunID: fmt.Sprintf("bench_%05d", i), RunType: "manual", LogicalDate: at,
				State: "success", QueuedAt: at, StartDate: at, EndDate: at.Add(2 * time.Second)}
			if i%7 == 0 {
				run.State = "failed"
			}
			if err := tx.InsertRun(&run); err != nil {
				return err
			}
			for k, task := range []string{"start", "left", "right", "join"} {
				start := at.Add(time.Duration(k) * 400 * time.Millisecond)
				end := start.Add(300 * time.Millisecond)
				if err := tx.InsertTI(&store.TaskInstance{Run: run.PK, TaskID: task, State: "success", TryNumber: 1,
					StartDate: start, EndDate: end}); err != nil {
					return err
				}
				if err := tx.InsertAttempt(&store.Attempt{Run: run.PK, TaskID: task, TryNumber: 1, State: "success",
					StartDate: start, EndDate: end}); err != nil {
					return err
				}
				e := store.Entry{Run: run.PK, TaskID: task, TryNumber: 1, Label: "diamond." + task + " try 1", Priority: 1,
					Due: at, State: "waiting", CreatedAt: at, Needs: []store.Requirement{{Pool: "default", Slots: 1},
						{Pool: "_global", Slots: 1, Implicit: true, Capacity: 8}}}
				if err := tx.InsertEntry(&e); err != nil {
					return err
				}
				if err := tx.Admit(&e, "bench", 1, start, end); err != nil {
					return err
				}
				if _, err := tx.ReleaseHeld(e.ID, "bench", 1, end); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPages renders each page with 1,000 and 10,000 runs in the store (the whole request,
// store reads included, in process).
func BenchmarkPages(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		bd := setup(b, setupOpts{})
		fill(b, bd, n)
		last := fmt.Sprintf("bench_%05d", n-1)
		for _, p := range []struct{ name, path string }{
			{"dags", "/ui/"},
			{"dag", "/ui/dags/diamond"},
			{"run", "/ui/dags/diamond/runs/" + last},
			{"task", "/ui/dags/diamond/runs/" + last + "/tasks/join"},
			{"pools", "/ui/pools"},
		} {
			b.Run(fmt.Sprintf("%s/runs=%d", p.name, n), func(b *testing.B) {
				for b.Loop() {
					rec := httptest.NewRecorder()
					bd.srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p.path, nil))
					if rec.Code != http.StatusOK {
						b.Fatalf("%s: %d", p.path, rec.Code)
					}
				}
			})
		}
	}
}
