package explain_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/storetest"
	"github.com/poolflow/poolflow/vocab"
)

// TestReasonsAmong: walking a queue the caller read (the pools page's snapshot reads every
// waiting entry once and walks those) gives every entry the reason Reasons, which reads the queue
// itself, gives it — with strict and backfill pools, force starts, a sensor keeping claims, a
// backfill's entries, and an entry last in line whose starvation keeps room in wh ahead of
// everyone.
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
	read, err := explain.ReasonsAmong(ctx, st, now, all)
	if err != nil {
		t.Fatal(err)
	}
	starvedHead, codes := 0, map[vocab.ReasonCode]bool{}
	for _, e := range all {
		a, b := e, e
		whole.Fill(&a)
		read.Fill(&b)
		if a.ReasonCode != b.ReasonCode || a.Reason != b.Reason {
			t.Errorf("entry %d waits for %s %q walked from the caller's read, %s %q in Reasons' walk", e.ID,
				b.ReasonCode, b.Reason, a.ReasonCode, a.Reason)
		}
		if a.ReasonCode == vocab.ReasonStarvedHead {
			starvedHead++
		}
		codes[a.ReasonCode] = true
	}
	if starvedHead == 0 || len(codes) < 3 {
		t.Errorf("reasons %v: the fixture does not test promotion, or too few reasons", codes)
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
