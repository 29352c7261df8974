package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// testConcurrentAdmission is the store half of the admission model: several daemons (handles on
// one database) pass concurrently. A pass reads pools and claims in its
// transaction, admits the first waiting entries that fit in every pool they need, completes some
// of its own admissions, and injects a failure between two pools of a debit now and then. Under
// any interleaving the transaction sees its own writes over everyone's committed ones, so after
// its writes no pool may hold more than its capacity, and no entry may hold part of its needs.
func testConcurrentAdmission(t *testing.T, h Harness) {
	target := h.Target(t)
	const daemons, workers, entries = 3, 1, 120
	handles := make([]store.Store, daemons)
	for i := range handles {
		handles[i] = h.Open(t, target)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, 1))
	caps := map[string]int{"a": 1, "b": 2, "c": 3, "d": 2}
	names := []string{"a", "b", "c", "d"}
	must(t, handles[0].WithTx(bg(), func(tx store.Tx) error {
		for _, n := range names {
			p := &store.Pool{Name: n, Slots: caps[n], TargetSlots: store.NoTarget, Ordering: vocab.Backfill,
				OnResize: vocab.ResizeImmediate, Source: "store"}
			if err := tx.PutPool(p, day); err != nil {
				return err
			}
		}
		r := &store.Run{DAGID: "m", RunID: "r", RunType: vocab.RunManual, LogicalDate: day, State: vocab.RunRunning, QueuedAt: day}
		if err := tx.InsertRun(r); err != nil {
			return err
		}
		for i := 0; i < entries; i++ {
			e := &store.Entry{Run: r.PK, TaskID: fmt.Sprintf("t%03d", i), TryNumber: 1, Label: "m", Due: day,
				State: vocab.EntryWaiting, CreatedAt: day}
			for _, n := range names {
				if rnd.IntN(2) == 0 {
					e.Needs = append(e.Needs, store.Requirement{Pool: n, Slots: 1 + rnd.IntN(caps[n])})
				}
			}
			if len(e.Needs) == 0 {
				e.Needs = []store.Requirement{{Pool: "a", Slots: 1}}
			}
			if err := tx.InsertEntry(e); err != nil {
				return err
			}
		}
		return nil
	}))
	var done, retries, passes atomic.Int64
	var violations []string
	var mu sync.Mutex
	violate := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(violations) < 10 {
			violations = append(violations, fmt.Sprintf(format, args...))
		}
	}
	var wg sync.WaitGroup
	// A liveness bound in passes, not in time (a wall-clock deadline failed on a loaded
	// machine): 200 to 3,600 passes were seen on either store, the most when daemons that hold
	// nothing pass again while the holders are descheduled; a store that stopped admitting
	// would use them all, in about a minute.
	const maxPasses = 200_000
	for d := range handles {
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(d, w int) {
				defer wg.Done()
				r := rand.New(rand.NewPCG(seed, uint64(d*workers+w+2)))
				daemon := fmt.Sprintf("d%d", d)
				for done.Load() < entries && passes.Add(1) <= maxPasses {
					n, err := pass(handles[d], daemon, r, caps, violate)
					if errors.Is(err, store.ErrUnavailable) {
						retries.Add(1) // a lock wait past the bound (SQLite's busy handler is not fair): pass again
						continue
					}
					if err != nil {
						violate("%s: pass: %v", daemon, err)
						return
					}
					done.Add(int64(n))
				}
			}(d, w)
		}
	}
	wg.Wait()
	t.Logf("%d passes, %d retried after ErrUnavailable", passes.Load(), retries.Load())
	for _, v := range violations {
		t.Error(v)
	}
	if done.Load() < entries {
		t.Fatalf("only %d of %d entries ran in %d passes", done.Load(), entries, maxPasses)
	}
	if claims, err := handles[0].ListClaims(bg()); err != nil || len(claims) != 0 {
		t.Fatalf("claims left: %+v %v", claims, err)
	}
}

// pass is one daemon's admission pass; it returns how many entries it completed.
func pass(st store.Store, daemon string, r *rand.Rand, caps map[string]int, violate func(string, ...any)) (int, error) {
	tx, err := st.Begin(bg())
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	claims, err := tx.Claims()
	if err != nil {
		return 0, err
	}
	held := map[string]int{}
	mine := map[int64]bool{}
	for _, c := range claims {
		held[c.Pool] += c.Slots
		if c.Daemon == daemon {
			mine[c.Entry] = true
		}
	}
	for p, n := range held {
		if n > caps[p] {
			violate("%s: pool %s holds %d of %d slots (committed)", daemon, p, n, caps[p])
		}
	}
	completed := 0
	for id := range mine {
		if r.IntN(2) == 0 {
			ok, err := tx.ReleaseHeld(id, daemon, 1, day)
			if err != nil {
				return 0, err
			}
			if ok {
				completed++
			}
		}
	}
	waiting, err := tx.Entries(vocab.EntryWaiting)
	if err != nil {
		return 0, err
	}
	inject := r.IntN(5) == 0
	for _, e := range waiting {
		fits := true
		for _, n := range e.Needs {
			if held[n.Pool]+n.Slots > caps[n.Pool] {
				fits = false
			}
		}
		if !fits {
			continue
		}
		if inject && len(e.Needs) > 1 {
			tx.FailClaimAfter(len(e.Needs) - 1) // fails before the debit's last pool
			if err := tx.Admit(&e, daemon, 1, day, day.Add(time.Hour)); err == nil {
				violate("an injected failure did not fail the admission")
			}
			return 0, nil // rolled back: nothing of this pass stays
		}
		if err := tx.Admit(&e, daemon, 1, day, day.Add(time.Hour)); err != nil {
			return 0, err
		}
		for _, n := range e.Needs {
			held[n.Pool] += n.Slots
		}
		if r.IntN(3) == 0 {
			break
		}
	}
	// What this transaction would commit: every pool within its capacity, every admitted
	// entry holding all of its needs.
	after, err := tx.Claims()
	if err != nil {
		return 0, err
	}
	sum := map[string]int{}
	per := map[int64]int{}
	for _, c := range after {
		sum[c.Pool] += c.Slots
		per[c.Entry]++
	}
	for p, n := range sum {
		if n > caps[p] {
			violate("%s: pool %s would hold %d of %d slots", daemon, p, n, caps[p])
		}
	}
	admitted, err := tx.Entries(vocab.EntryAdmitted)
	if err != nil {
		return 0, err
	}
	for _, e := range admitted {
		if per[e.ID] != len(e.Needs) {
			violate("entry %d holds %d of its %d pools", e.ID, per[e.ID], len(e.Needs))
		}
	}
	return completed, tx.Commit()
}
