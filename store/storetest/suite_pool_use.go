package storetest

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// testPoolUse: the aggregated timeline the store keeps (PoolUse) says what the claim history
// says. A spike of 2 s keeps its peak in a 30 min bucket, the mean is time-weighted, a release
// and an admission at one instant are a hand-over (no double count), the bucket now is in is
// measured to now; then a random history written out of order (a second daemon's clock, a
// requeue erasing an admission, a deleted run) gives, at every width, the buckets computed from
// the history itself, and the holders at random instants are those the history names.
func testPoolUse(t *testing.T, h Harness) {
	st := h.New(t)
	t0 := day.Truncate(24 * time.Hour).Add(24 * time.Hour)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	w := newHistoryWriter(t, st)
	w.hold(1, at(-time.Hour), time.Time{})                                                    // held throughout
	w.hold(2, at(10*time.Minute), at(20*time.Minute))                                         // 3 held for 10 min
	w.hold(1, at(61*time.Minute+7*time.Second), at(61*time.Minute+9*time.Second))             // a 2 s spike
	w.hold(5, at(-2*time.Hour), at(-time.Hour))                                               // before the window
	w.hold(5, at(5*time.Hour), time.Time{})                                                   // after it
	w.hold(1, at(50*time.Minute), at(60*time.Minute))                                         // released as a bucket begins
	w.hold(1, at(95*time.Minute), at(100*time.Minute))                                        // handed over at 100 min
	w.hold(1, at(100*time.Minute), at(105*time.Minute))                                       //
	use, err := st.PoolUse(bg(), "db", t0, at(2*time.Hour), 30*time.Minute, at(24*time.Hour)) // 30 min buckets
	must(t, err)
	type want struct {
		peak   int
		peakAt time.Duration
		mean   float64
	}
	for i, w := range []want{
		{3, 10 * time.Minute, 1 + 2.0/3}, // 3 for 10 of 30 min
		{2, 50 * time.Minute, 1 + 10.0/30},
		{2, 61*time.Minute + 7*time.Second, 1 + 2.0/1800}, // not 2 at 60 min: the release at 60 counts there
		{2, 95 * time.Minute, 1 + 10.0/30},
	} {
		b := use[i]
		if b.Peak != w.peak || !b.PeakAt.Equal(at(w.peakAt)) || math.Abs(b.Mean-w.mean) > 1e-9 ||
			!b.Start.Equal(at(time.Duration(i)*30*time.Minute)) {
			t.Errorf("bucket %d: %+v, want peak %d at +%v, mean %.4f", i, b, w.peak, w.peakAt, w.mean)
		}
	}
	// Measured to now: 110 min into the window, one more slot held for 10 of the 20 min since 90.
	use, err = st.PoolUse(bg(), "db", at(time.Hour), at(2*time.Hour), 30*time.Minute, at(110*time.Minute))
	must(t, err)
	if len(use) != 2 || use[1].Peak != 2 || math.Abs(use[1].Mean-1.5) > 1e-9 {
		t.Errorf("to now: %+v", use)
		for _, m := range []time.Duration{-30 * time.Minute, 0, 30 * time.Minute, 59 * time.Minute, 60 * time.Minute} {
			hs, _ := st.PoolHoldersAt(bg(), "db", at(m))
			t.Logf("holders at %v: %+v", m, hs)
		}
	}
	if _, err := st.PoolUse(bg(), "db", t0.Add(time.Second), at(time.Hour), 30*time.Minute, at(time.Hour)); err == nil {
		t.Error("a window off the 15 s grid: no error")
	}

	// A random history, written out of order.
	st = h.New(t)
	w = newHistoryWriter(t, st)
	rng := rand.New(rand.NewPCG(1, 2))
	span := 6 * time.Hour
	type hold struct {
		slots    int
		from, to time.Time
	}
	var holds []hold
	for range 300 {
		from := t0.Add(time.Duration(rng.Int64N(int64(span))))
		// Often on the second, so that admissions and ends meet at one instant.
		if rng.IntN(2) == 0 {
			from = from.Truncate(time.Second)
		}
		to := from.Add(time.Duration(rng.Int64N(int64(40 * time.Minute)))).Truncate(time.Second)
		if rng.IntN(20) == 0 {
			to = time.Time{} // still held
		}
		holds = append(holds, hold{1 + rng.IntN(3), from, to})
	}
	rng.Shuffle(len(holds), func(i, j int) { holds[i], holds[j] = holds[j], holds[i] })
	for _, h := range holds {
		w.hold(h.slots, h.from, h.to)
	}
	w.deleteRun(3)                  // a run deleted with its entries
	w.requeueLast(t0.Add(span / 2)) // an admission erased
	now := t0.Add(span + time.Hour)
	hist, err := st.PoolHistory(bg(), "db", t0.Add(-time.Hour), t0.Add(2*span))
	must(t, err)
	for _, width := range []time.Duration{15 * time.Second, 5 * time.Minute, 30 * time.Minute} {
		use, err := st.PoolUse(bg(), "db", t0, t0.Add(span), width, now)
		must(t, err)
		want := referenceUse(hist, t0, t0.Add(span), width, now)
		if len(use) != len(want) {
			t.Fatalf("width %s: %d buckets, want %d", width, len(use), len(want))
		}
		bad := 0
		for i := range want {
			g, x := use[i], want[i]
			if g.Peak != x.Peak || !g.PeakAt.Equal(x.PeakAt) || math.Abs(g.Mean-x.Mean) > 1e-6 || !g.Start.Equal(x.Start) {
				if bad++; bad < 5 {
					t.Errorf("width %s bucket %d: %+v, want %+v", width, i, g, x)
				}
			}
		}
	}
	for range 50 {
		p := t0.Add(time.Duration(rng.Int64N(int64(span))))
		if rng.IntN(3) == 0 {
			p = p.Truncate(time.Second) // on an admission or an end, often
		}
		hs, err := st.PoolHoldersAt(bg(), "db", p)
		must(t, err)
		got := map[int64]bool{}
		for _, h := range hs {
			got[h.Entry] = true
		}
		n := 0
		for _, h := range hist {
			if !h.AdmittedAt.After(p) && (h.EndedAt.IsZero() || h.EndedAt.After(p)) {
				n++
				if !got[h.Entry] {
					t.Errorf("holders at %s: entry %d (%s–%s) missing", p, h.Entry, h.AdmittedAt, h.EndedAt)
				}
			}
		}
		if n != len(hs) {
			t.Errorf("holders at %s: %d, want %d", p, len(hs), n)
		}
	}
}

// historyWriter writes holdings of pool db, each in its own transactions as a daemon would
// (the admission, then the release), three runs taking turns.
type historyWriter struct {
	t       *testing.T
	st      store.Store
	runs    []int64
	n       int
	last    *store.Entry
	lastRun int64
}

func newHistoryWriter(t *testing.T, st store.Store) *historyWriter {
	w := &historyWriter{t: t, st: st}
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		for i := range 3 {
			r := &store.Run{DAGID: "etl", RunID: "r" + itoa(i), RunType: vocab.RunManual, LogicalDate: day.Add(time.Duration(i) * time.Hour),
				State: vocab.RunSuccess, QueuedAt: day}
			if err := tx.InsertRun(r); err != nil {
				return err
			}
			w.runs = append(w.runs, r.PK)
		}
		return nil
	}))
	return w
}

func (w *historyWriter) hold(slots int, from, to time.Time) {
	w.n++
	run := w.runs[w.n%len(w.runs)]
	if to.IsZero() {
		run = w.runs[0]
	}
	e := &store.Entry{Run: run, TaskID: "t" + itoa(w.n), TryNumber: 1, Label: "etl.t", Priority: 1, Due: from,
		State: vocab.EntryWaiting, CreatedAt: from, Needs: []store.Requirement{{Pool: "db", Slots: slots},
			{Pool: "_global", Slots: 1, Implicit: true, Capacity: 32}}}
	must(w.t, w.st.WithTx(bg(), func(tx store.Tx) error {
		if err := tx.InsertEntry(e); err != nil {
			return err
		}
		return tx.Admit(e, "d1", 1, from, from.Add(time.Hour))
	}))
	if !to.IsZero() {
		must(w.t, w.st.WithTx(bg(), func(tx store.Tx) error {
			_, err := tx.ReleaseHeld(e.ID, "d1", 1, to)
			return err
		}))
	}
	w.last, w.lastRun = e, run
}

// requeueLast admits a new entry at at and puts it back in the queue: it never held.
func (w *historyWriter) requeueLast(at time.Time) {
	w.hold(2, at, time.Time{})
	must(w.t, w.st.WithTx(bg(), func(tx store.Tx) error { return tx.RequeueEntry(w.last.ID) }))
}

// deleteRun deletes the i-th run (1-based; the last never holds open slots) with its entries.
func (w *historyWriter) deleteRun(i int) {
	must(w.t, w.st.WithTx(bg(), func(tx store.Tx) error { return tx.DeleteRun(w.runs[i-1]) }))
}

// referenceUse computes PoolUse's buckets from the holdings themselves: the slots held as a
// step function, each bucket's highest step (first reached) and its time-weighted mean.
func referenceUse(hs []store.Holding, from, to time.Time, width time.Duration, now time.Time) []store.UseBucket {
	changes := map[time.Time]int{}
	base := 0
	for _, h := range hs {
		if !h.AdmittedAt.After(from) {
			if h.EndedAt.IsZero() || h.EndedAt.After(from) {
				base += h.Slots
			}
		} else {
			changes[h.AdmittedAt] += h.Slots
		}
		if !h.EndedAt.IsZero() && h.EndedAt.After(from) {
			changes[h.EndedAt] -= h.Slots
		}
	}
	var ats []time.Time
	for a := range changes {
		ats = append(ats, a)
	}
	sort.Slice(ats, func(i, j int) bool { return ats[i].Before(ats[j]) })
	level := base
	var out []store.UseBucket
	for start := from; start.Before(to); start = start.Add(width) {
		end := start.Add(width)
		// The level at the start instant is after what changed at it.
		for len(ats) > 0 && ats[0].Equal(start) {
			level += changes[ats[0]]
			ats = ats[1:]
		}
		b := store.UseBucket{Start: start, Peak: level, PeakAt: start}
		stop := end
		if now.Before(end) {
			stop = now
		}
		area, prev := 0.0, start
		for len(ats) > 0 && ats[0].Before(end) {
			a := ats[0]
			ats = ats[1:]
			if a.Before(stop) {
				area += float64(level) * a.Sub(prev).Seconds()
				prev = a
			}
			level += changes[a]
			if level > b.Peak {
				b.Peak, b.PeakAt = level, a
			}
		}
		if stop.After(start) {
			area += float64(level) * stop.Sub(prev).Seconds()
			b.Mean = area / stop.Sub(start).Seconds()
		}
		out = append(out, b)
	}
	return out
}

// testPoolCapacity: every change of a pool's capacity is kept with its time (created, resized,
// its drain finished, deleted; a rewrite with the same slots is no change), a window reads
// the change it starts with and those within it, and retention keeps each pool's last change
// at or before its cutoff.
func testPoolCapacity(t *testing.T, h Harness) {
	st := h.New(t)
	t0 := day.Truncate(time.Hour)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	put := func(m, slots, target int) {
		must(t, st.WithTx(bg(), func(tx store.Tx) error {
			return tx.PutPool(&store.Pool{Name: "db", Slots: slots, TargetSlots: target, Ordering: vocab.Backfill,
				OnResize: vocab.ResizeImmediate, Source: "store"}, at(m))
		}))
	}
	put(0, 2, store.NoTarget)  // created
	put(10, 2, store.NoTarget) // the same capacity (a reload): no change
	put(20, 8, store.NoTarget) // resized
	put(30, 8, 4)              // draining toward 4: admission still uses 8
	must(t, st.WithTx(bg(), func(tx store.Tx) error {
		done, err := tx.FinishDrain("db", at(40))
		if err == nil && !done {
			t.Error("the drain did not finish")
		}
		return err
	}))
	must(t, st.WithTx(bg(), func(tx store.Tx) error { return tx.DeletePool("db", at(50)) }))
	put(60, -1, store.NoTarget) // again, unlimited
	type step struct {
		m      int
		slots  int
		exists bool
	}
	all := []step{{0, 2, true}, {20, 8, true}, {40, 4, true}, {50, 0, false}, {60, -1, true}}
	for _, c := range []struct {
		name     string
		from, to int
		want     []step
	}{
		{"all", -10, 100, all},
		{"from a change on", 20, 100, all[1:]},
		{"the one before, then those within", 25, 45, all[1:3]},
		{"after the deletion", 55, 58, all[3:4]},
		{"before the pool", -30, -20, nil},
	} {
		got, err := st.PoolCapacity(bg(), "db", at(c.from), at(c.to))
		must(t, err)
		ok := len(got) == len(c.want)
		for i := 0; ok && i < len(got); i++ {
			w := c.want[i]
			ok = got[i].At.Equal(at(w.m)) && got[i].Exists == w.exists && (!w.exists || got[i].Slots == w.slots)
		}
		if !ok {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	var n int
	must(t, st.WithTx(bg(), func(tx store.Tx) (err error) { n, err = tx.PrunePoolHistory(at(45)); return err }))
	got, err := st.PoolCapacity(bg(), "db", at(-10), at(100))
	must(t, err)
	if n != 2 || len(got) != 3 || !got[0].At.Equal(at(40)) || got[0].Slots != 4 {
		t.Errorf("pruned at minute 45: %d deleted, left %+v; want the change of minute 40 on", n, got)
	}
}

// testPoolUseBacklog: a store recomputes the slices its commits marked at most once a second
// (sqlstore's useBacklog), so it must not lose them: its own timeline read recomputes them
// first, and a clean close recomputes them, so the next handle's read is exact too.
func testPoolUseBacklog(t *testing.T, h Harness) {
	target := h.Target(t)
	st := h.Open(t, target)
	t0 := day.Truncate(24 * time.Hour).Add(24 * time.Hour)
	w := newHistoryWriter(t, st)
	// Many commits in a row, faster than the recompute: each in its own transaction.
	for i := range 20 {
		w.hold(1, t0.Add(time.Duration(i)*time.Minute), t0.Add(time.Duration(i)*time.Minute+30*time.Second))
	}
	w.hold(2, t0.Add(25*time.Minute), time.Time{})
	check := func(who string, st store.Store) {
		t.Helper()
		use, err := st.PoolUse(bg(), "db", t0, t0.Add(30*time.Minute), 30*time.Minute, t0.Add(time.Hour))
		must(t, err)
		// 1 slot for 30 s of each of 20 minutes (10 slot-minutes), 2 slots for the last 5.
		if len(use) != 1 || use[0].Peak != 2 || math.Abs(use[0].Mean-20.0/30) > 1e-9 {
			t.Errorf("%s: %+v, want peak 2 and mean %.4f", who, use, 20.0/30)
		}
	}
	check("the writing handle", st)
	w.hold(1, t0.Add(27*time.Minute), t0.Add(28*time.Minute)) // marked after the read
	must(t, st.Close())
	next := h.Open(t, target)
	use, err := next.PoolUse(bg(), "db", t0, t0.Add(30*time.Minute), 30*time.Minute, t0.Add(time.Hour))
	must(t, err)
	if len(use) != 1 || use[0].Peak != 3 || math.Abs(use[0].Mean-21.0/30) > 1e-9 {
		t.Errorf("a new handle after a clean close: %+v, want peak 3 (at 27 min) and mean %.4f", use, 21.0/30)
	}
}
