package explain_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/storetest"
	"github.com/poolflow/poolflow/vocab"
)

// TestReasonsAmong: walking only what store.WaitingThrough reads for a bound gives every entry
// up to the bound the reason the walk of the whole queue gives it (the pools page explains a
// page of a long line this way), with strict and backfill pools, force starts, a sensor keeping
// claims, a backfill's entries, and an entry last in line whose starvation keeps room in wh
// ahead of everyone (leave it out of the read and the entries before it read pool_full instead
// of starved_head).
func TestReasonsAmong(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t, filepath.Join(t.TempDir(), "poolflow.db"), store.Options{Synchronous: "OFF"})
	now := storetest.WaitingFixture(t, st)
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
	walkOrder(all, keeps)
	whole, err := explain.Reasons(ctx, st, now)
	if err != nil {
		t.Fatal(err)
	}
	starvedHead := 0
	starved := map[string]time.Time{"wh": now.Add(-10 * time.Minute)}
	for _, k := range []int{0, 4, 11, 30, 60, len(all) - 1} {
		among, err := st.WaitingThrough(ctx, store.WalkBound{Through: all[k].ID, Starved: starved})
		if err != nil {
			t.Fatal(err)
		}
		part, err := explain.ReasonsAmong(ctx, st, now, among)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range all[:k+1] {
			a, b := e, e
			whole.Fill(&a)
			part.Fill(&b)
			if a.ReasonCode != b.ReasonCode || a.Reason != b.Reason {
				t.Errorf("through %d: entry %d waits for %s %q walked with %d entries, %s %q in the whole walk", k, e.ID,
					b.ReasonCode, b.Reason, len(among), a.ReasonCode, a.Reason)
			}
			if a.ReasonCode == vocab.ReasonStarvedHead {
				starvedHead++
			}
		}
	}
	if starvedHead == 0 {
		t.Errorf("no entry waits for a starved one: the fixture does not test promotion")
	}
}

func walkOrder(es []store.Entry, keeps map[int64]bool) {
	entry := func(e store.Entry) pools.Entry {
		pe := explain.Entry(&e, pools.NotBlocked)
		if keeps[e.ID] {
			pe.Kept = []pools.Need{{}}
		}
		return pe
	}
	slices.SortStableFunc(es, func(a, b store.Entry) int {
		pa, pb := entry(a), entry(b)
		return pools.Compare(&pa, &pb)
	})
}
