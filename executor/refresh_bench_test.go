package executor

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/poolflow/poolflow/owners"
	"github.com/poolflow/poolflow/store"
)

// BenchmarkCatchUp measures what another daemon's commit costs a daemon sharing a scheduled
// 3,000-task run (issue 13): load reads every open run again (what every outside commit cost
// before the change stamps); refresh reads what the commit wrote — here a pass of the run's
// owner that ends 8 attempts and admits 8 entries (16 task instances, 16 entries).
func BenchmarkCatchUp(b *testing.B) {
	const n = 3000
	gate := filepath.Join(b.TempDir(), "go")
	bu := setup(b, "max_running: 8\npools:\n  p: 1\n", map[string]string{
		"fan.yaml": "dag_id: fan\nmax_active_tasks: 100000\n" + oneFire() + gatedTasks(n, gate, ""),
	})
	owner := bu.daemon(b, func(c *Config) { c.DaemonID = "owner" })
	if err := owner.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer owner.Stop()
	ctx := context.Background()
	var entries []store.Entry
	deadline := time.Now().Add(60 * time.Second)
	for len(entries) < n-1 {
		if time.Now().After(deadline) {
			b.Fatalf("%d entries waiting", len(entries))
		}
		time.Sleep(50 * time.Millisecond)
		var err error
		if entries, err = bu.st.ListEntries(ctx, "waiting"); err != nil {
			b.Fatal(err)
		}
	}
	// The sharing daemon's loop, driven by hand on its own store handle.
	st, err := bu.st.Reopen(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	cfg := Config{Store: st, Settings: bu.cfg, DAGsDir: bu.dagsDir, StateDir: bu.stateDir, DaemonID: "sharer"}
	if err := cfg.fill(); err != nil {
		b.Fatal(err)
	}
	l, err := newLoop(&cfg)
	if err != nil {
		b.Fatal(err)
	}
	l.reg.ensure()
	l.takeDAGs(l.reg.generation())
	// inTx runs fn in a transaction of the sharer, timed without the wait for the writers' lock
	// (the owner daemon passes too) when timed is set.
	inTx := func(fn func(tx store.Tx) error, timed ...*testing.B) {
		tx, err := st.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer tx.Rollback()
		for _, tb := range timed {
			tb.StartTimer()
			defer tb.StopTimer()
		}
		if err := fn(tx); err != nil {
			b.Fatal(err)
		}
	}
	// load reads every open run again, as a pass that loads memory does; refresh reads what
	// other processes stamped since memory's sequence (l.read's two ways of catching up).
	load := func(tx store.Tx) error {
		rows, err := tx.Owners()
		if err != nil {
			return err
		}
		l.mem.View = owners.NewView(rows, l.cfg.DaemonID, time.Now(), l.host, l.localAlive)
		ps, err := tx.Pools()
		if err != nil {
			return err
		}
		claims, err := tx.Claims()
		if err != nil {
			return err
		}
		all, err := l.readAll(tx, ps, claims)
		if err != nil {
			return err
		}
		dv, _ := tx.DataVersion()
		l.mem.Load(all, dv, tx.Seq())
		return nil
	}
	refresh := func(tx store.Tx) error {
		ps, err := tx.Pools()
		if err != nil {
			return err
		}
		claims, err := tx.Claims()
		if err != nil {
			return err
		}
		ch, err := l.readChanges(tx, ps, claims)
		if err != nil {
			return err
		}
		if ch == nil {
			return fmt.Errorf("refresh fell back to load")
		}
		dv, _ := tx.DataVersion()
		l.mem.Refresh(ch, dv, tx.Seq())
		return nil
	}
	inTx(load)
	var shared int
	for _, r := range l.mem.Runs {
		if r.Shared {
			shared += len(r.TIs)
		}
	}
	if shared != n {
		b.Fatalf("%d task instances shared, want %d", shared, n)
	}
	// ownerPass writes what one pass of the owner writes: 16 task instances and 16 entries.
	next := 0
	ownerPass := func() {
		must := func(err error) {
			if err != nil {
				b.Fatal(err)
			}
		}
		must(bu.st.WithTx(ctx, func(tx store.Tx) error {
			for i := 0; i < 16; i++ {
				e := entries[next%len(entries)]
				next++
				if err := tx.SetForce(e.ID); err != nil {
					return err
				}
				if err := tx.UpdateTI(&store.TaskInstance{Run: e.Run, TaskID: e.TaskID, State: "scheduled",
					Reason: fmt.Sprint("pass ", next)}); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	b.Run(fmt.Sprintf("load/%d", n), func(b *testing.B) {
		b.StopTimer()
		for i := 0; i < b.N; i++ {
			ownerPass()
			inTx(load, b)
		}
	})
	b.Run(fmt.Sprintf("refresh/%d", n), func(b *testing.B) {
		inTx(load)
		b.StopTimer()
		for i := 0; i < b.N; i++ {
			ownerPass()
			inTx(refresh, b)
		}
	})
}
