package server

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/storetest"
	"github.com/poolflow/poolflow/vocab"
)

// TestPick: the page of a merge of disjoint ascending lists, found without merging what comes
// before it, is the naive merge's, at every offset.
func TestPick(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for round := range 200 {
		k := 1 + rng.IntN(5)
		lists := make([][]int32, k)
		n := rng.IntN(60)
		for p := range n {
			i := rng.IntN(k)
			lists[i] = append(lists[i], int32(p*2+rng.IntN(2)))
		}
		var all []int32
		for _, l := range lists {
			all = append(all, l...)
		}
		slices.Sort(all)
		for _, off := range []int{0, 1, n / 2, n - 1, n, n + 3} {
			for _, lim := range []int{1, 7, 50} {
				got, total := pick(lists, max(off, 0), lim)
				want := all[min(max(off, 0), len(all)):min(max(off, 0)+lim, len(all))]
				if total != len(all) || !slices.Equal(got, want) && len(got)+len(want) > 0 {
					t.Fatalf("round %d, %d lists, offset %d limit %d: %v of %d, want %v of %d", round, k, off, lim, got, total,
						want, len(all))
				}
			}
		}
	}
}

// lineServer is a server with no daemon over WaitingFixture's store, at the fixture's time.
func lineServer(t *testing.T, sync int) (*Server, store.Store, time.Time) {
	t.Helper()
	st := storetest.Open(t, filepath.Join(t.TempDir(), "poolflow.db"), store.Options{Synchronous: "OFF"})
	now := storetest.WaitingFixture(t, st)
	srv := New(Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return now },
		LineSyncEntries: sync})
	t.Cleanup(func() { srv.Close() })
	return srv, st, now
}

// TestWaitingLinePages: every page of every pool's waiting list, with every filter (DAG, reason,
// both), is the part of the whole walk's line (explain over the whole queue, in pools.Compare's
// order) that the filters keep: the same entries, places, reasons and counts — with strict and
// backfill pools, force starts, a sensor keeping claims, a backfill's entries and a starved one.
func TestWaitingLinePages(t *testing.T) {
	ctx := context.Background()
	srv, st, now := lineServer(t, 0)
	all, err := st.ListEntries(ctx, vocab.EntryWaiting)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := st.ListClaims(ctx)
	if err != nil {
		t.Fatal(err)
	}
	keeps := map[int64]bool{}
	for _, c := range claims {
		keeps[c.Entry] = true
	}
	slices.SortStableFunc(all, func(a, b store.Entry) int {
		pa, pb := walkEntry(a, keeps[a.ID]), walkEntry(b, keeps[b.ID])
		return pools.Compare(&pa, &pb)
	})
	whole, err := explain.Reasons(ctx, st, now)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[vocab.ReasonCode]bool{}
	for i := range all {
		whole.Fill(&all[i])
		reasons[all[i].ReasonCode] = true
	}
	if len(reasons) < 3 {
		t.Fatalf("the fixture's entries wait for %d reasons; want several", len(reasons))
	}
	type row struct {
		id    int64
		place int
		code  vocab.ReasonCode
		text  string
	}
	for _, pool := range []string{"db", "wh", "lot"} {
		var line []row
		dags := map[int64]string{}
		for _, e := range all {
			for _, n := range e.Needs {
				if n.Pool == pool {
					line = append(line, row{e.ID, len(line) + 1, e.ReasonCode, e.Reason})
					dags[e.ID] = e.DAGID
				}
			}
		}
		for _, dag := range []string{"", "ETA", "a", "nope"} {
			for code := range reasons {
				for _, reason := range []vocab.ReasonCode{"", code} {
					var kept []row
					for _, r := range line {
						if strings.Contains(dags[r.id], strings.ToLower(dag)) && (reason == "" || r.code == reason) {
							kept = append(kept, r)
						}
					}
					for _, off := range []int{0, 3, len(kept) - 2} {
						off = max(off, 0)
						q := PoolsQuery{DAG: dag, Reason: reason, Pool: pool, Offset: off, Limit: 4}
						page, err := srv.PoolsPage(ctx, q)
						if err != nil {
							t.Fatal(err)
						}
						if !page.LineCurrent {
							t.Errorf("%+v: the line is not current though nothing changed", q)
						}
						var got []row
						var v PoolPage
						for _, p := range page.Pools {
							if p.Name == pool {
								v = p
							}
						}
						for i, e := range v.Waiting {
							r := row{id: e.QueueID, place: v.Positions[i]}
							if e.Reason != nil {
								r.code, r.text = e.Reason.Code, e.Reason.Text
							}
							got = append(got, r)
						}
						want := kept[min(off, len(kept)):min(off+4, len(kept))]
						if off >= len(kept) && len(kept) > 0 { // past the end: the last page
							want = kept[(len(kept)-1)/4*4:]
						}
						if !slices.Equal(got, want) || v.Matching != len(kept) || v.All != len(line) {
							t.Errorf("%+v: %v, %d of %d, want %v, %d of %d", q, got, v.Matching, v.All, want, len(kept), len(line))
						}
					}
				}
			}
		}
	}
}

// TestWaitingLineStale: a change to the queue makes the line stale; a short line is read again
// before the page, a long one (over LineSyncEntries) answers from the last read, saying it is not
// current, while a read in the background brings the next page up to date. The entries of a stale
// page are as they are now.
func TestWaitingLineStale(t *testing.T) {
	ctx := context.Background()
	for _, long := range []bool{false, true} {
		sync := 0
		if long {
			sync = 10
		}
		srv, st, _ := lineServer(t, sync)
		built := make(chan struct{}, 4)
		srv.line.built = func() { built <- struct{}{} }
		first := func() PoolPage {
			t.Helper()
			page, err := srv.PoolsPage(ctx, PoolsQuery{Limit: 50})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range page.Pools {
				if p.Name == "lot" {
					p.Offset = 0
					if page.LineCurrent {
						p.Offset = 1 // marks a current page
					}
					return p
				}
			}
			t.Fatal("no pool lot")
			return PoolPage{}
		}
		before := first()
		if before.Offset != 1 || len(before.Waiting) == 0 {
			t.Fatalf("long %v: first page not current (%d) or empty", long, before.Offset)
		}
		head := before.Waiting[0].QueueID
		if err := st.WithTx(ctx, func(tx store.Tx) error {
			return tx.EndEntry(head, vocab.EntryCancelled, vocab.ReasonCancelled, "cancelled by a test", time.Now())
		}); err != nil {
			t.Fatal(err)
		}
		after := first()
		switch {
		case !long && (after.Offset != 1 || after.All != before.All-1 || after.Waiting[0].QueueID == head):
			t.Errorf("short line: after a cancel, current %v, %d waiting (was %d), head %d (was %d)", after.Offset == 1,
				after.All, before.All, after.Waiting[0].QueueID, head)
		case long && (after.Offset != 0 || after.All != before.All || after.Waiting[0].QueueID != head ||
			after.Waiting[0].State != vocab.EntryCancelled):
			t.Errorf("long line: after a cancel, current %v, %d waiting (was %d), head %d %s; want the last read, "+
				"its head as it is now", after.Offset == 1, after.All, before.All, after.Waiting[0].QueueID, after.Waiting[0].State)
		}
		if !long || t.Failed() {
			continue // no read in the background to wait for
		}
		select {
		case <-built:
		case <-time.After(time.Minute):
			t.Fatal("long line: no read in the background after a minute")
		}
		again := first()
		if again.Offset != 1 || again.All != before.All-1 || again.Waiting[0].QueueID == head {
			t.Errorf("long line, read again: current %v, %d waiting (was %d), head %d (was %d)", again.Offset == 1,
				again.All, before.All, again.Waiting[0].QueueID, head)
		}
	}
}
