package storetest

import (
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
)

// testDataVersion: a handle's own commits leave its DataVersion as it is; another handle's
// commit changes it, exactly inside the next transaction and soon outside any.
func testDataVersion(t *testing.T, h Harness) {
	target := h.Target(t)
	a, b := h.Open(t, target), h.Open(t, target)
	txVersion := func(st store.Store) int64 {
		t.Helper()
		var v int64
		must(t, st.WithTx(bg(), func(tx store.Tx) error {
			var err error
			v, err = tx.DataVersion()
			return err
		}))
		return v
	}
	v0 := txVersion(a)
	seed(t, a) // a's own commit
	if v := txVersion(a); v != v0 {
		t.Fatalf("own commit changed the version %d → %d", v0, v)
	}
	out0, err := a.DataVersion(bg())
	must(t, err)
	must(t, b.WithTx(bg(), func(tx store.Tx) error { return tx.UpsertDAG("other", "o.yaml", "", day) }))
	if v := txVersion(a); v == v0 {
		t.Fatal("another handle's commit left the version inside a transaction as it was")
	}
	waitVersion(t, a, out0)
	// A transaction that changed nothing is no outside change.
	v1 := txVersion(a)
	must(t, b.WithTx(bg(), func(tx store.Tx) error { _, err := tx.Claims(); return err }))
	if v := txVersion(a); v != v1 {
		t.Fatalf("a read-only transaction of another handle changed the version %d → %d", v1, v)
	}
}

// waitVersion waits until st's DataVersion differs from old (at once on SQLite, after the
// notification or the bounded poll on PostgreSQL).
func waitVersion(t testing.TB, st store.Store, old int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := st.DataVersion(bg())
		must(t, err)
		if v != old {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("DataVersion stayed %d after another handle's commit", v)
		}
		select {
		case <-st.Changed():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// testWakeUp: with a wake-up channel (PostgreSQL), another handle's commit wakes a waiting
// loop; the handle's own commits do not. The median delay is logged (the bound is 50 ms).
func testWakeUp(t *testing.T, h Harness) {
	target := h.Target(t)
	a, b := h.Open(t, target), h.Open(t, target)
	if a.Changed() == nil {
		t.Skipf("%s has no wake-up channel: the loop polls DataVersion", h.Driver)
	}
	drain := func() {
		for {
			select {
			case <-a.Changed():
			case <-time.After(100 * time.Millisecond):
				return
			}
		}
	}
	drain() // the listener's first connect signals once
	var delays []time.Duration
	for i := 0; i < 10; i++ {
		start := time.Now()
		must(t, b.WithTx(bg(), func(tx store.Tx) error { return tx.UpsertDAG("d", "d.yaml", "", start) }))
		select {
		case <-a.Changed():
			delays = append(delays, time.Since(start))
		case <-time.After(10 * time.Second):
			t.Fatal("another handle's commit did not wake the handle")
		}
	}
	sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
	t.Logf("wake-up after another handle's commit: median %v, max %v", delays[len(delays)/2], delays[len(delays)-1])
	drain()
	must(t, a.WithTx(bg(), func(tx store.Tx) error { return tx.UpsertDAG("own", "o.yaml", "", day) }))
	select {
	case <-a.Changed():
		t.Fatal("the handle's own commit woke it")
	case <-time.After(300 * time.Millisecond):
	}
}

// testLockTimeoutIsUnavailable: a write transaction that cannot get the writers' lock within
// the operation bound is ErrUnavailable (§4.9), and the holder's work is unaffected.
func testLockTimeoutIsUnavailable(t *testing.T, h Harness) {
	target := h.Target(t)
	holder := h.Open(t, target)
	o := h.Options
	o.OpTimeout = 300 * time.Millisecond
	waiter := h.Open(t, target, o)
	tx, err := holder.Begin(bg())
	must(t, err)
	must(t, tx.UpsertDAG("held", "h.yaml", "", day))
	start := time.Now()
	_, err = waiter.Begin(bg())
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("begin behind a held lock: %v, want ErrUnavailable", err)
	}
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Fatalf("gave up after %v, before the bound", waited)
	}
	must(t, tx.Commit())
	// The waiter recovers once the lock is free.
	must(t, waiter.WithTx(bg(), func(tx store.Tx) error { return tx.UpsertDAG("after", "a.yaml", "", day) }))
	if rows, err := waiter.ListDAGRows(bg()); err != nil || len(rows) != 2 {
		t.Fatalf("dags %+v %v", rows, err)
	}
}
