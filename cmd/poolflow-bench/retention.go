package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/retention"
	"github.com/poolflow/poolflow/store"
	_ "github.com/poolflow/poolflow/store/sqlite" // registers the sqlite3 driver too
	"github.com/poolflow/poolflow/vocab"
)

// Issue 19's figures for retention (§12), on SQLite: the store's size after 100,000 runs were
// pruned to the newest 10,000, against a store that only ever had those 10,000 (the target is
// 1.5×); how long the pruning took in its batches and the longest batch (the writers' lock is
// held that long); and what a scheduler pass costs while the daemon's pruner works, against the
// same passes without it.

const (
	retentionRuns = 100_000
	retentionKeep = 10_000
	benchDAGs     = 10 // the runs are spread over them: each keeps its last run
	benchTasks    = 3  // per run: a task instance, an attempt and a done entry each
)

var retentionT0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// runEnd is when run i ended: one a minute.
func runEnd(i int) time.Time { return retentionT0.Add(time.Duration(i) * time.Minute) }

type retentionFigures struct {
	full, pruned, fresh  int64 // bytes on disk
	prune                time.Duration
	batches              int
	maxBatch             time.Duration
	passes               int
	base50, base99       time.Duration
	pruning50, pruning99 time.Duration
}

func (b *bench) measureRetention() (retentionFigures, error) {
	var f retentionFigures
	ctx := context.Background()
	dir := filepath.Join(b.dir, "retention")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return f, err
	}
	full := filepath.Join(dir, "full.db")
	if err := fillRuns(ctx, full, 0, retentionRuns); err != nil {
		return f, err
	}
	var err error
	if f.full, err = fileSize(full); err != nil {
		return f, err
	}

	// The same passes with and without the pruner at work, on the full store.
	st, err := store.Open(ctx, full, store.Options{})
	if err != nil {
		return f, err
	}
	defer st.Close()
	h, clock, err := benchHarness(ctx, st, dir)
	if err != nil {
		return f, err
	}
	defer h.Stop()
	const passes = 200
	base, err := timePasses(h, clock, "base", passes)
	if err != nil {
		return f, err
	}
	now := runEnd(retentionRuns)
	cut := runEnd(retentionRuns - retentionKeep)
	c := retention.Cleaner{Store: st, StateDir: dir}
	type step struct {
		d   time.Duration
		err error
	}
	steps := make(chan step, 1)
	began := time.Now()
	go func() {
		for {
			start := time.Now()
			res, more, err := c.Step(ctx, retention.Cutoffs{Runs: cut}, now)
			d := time.Since(start)
			if err != nil || !more {
				steps <- step{d, err}
				close(steps)
				return
			}
			_ = res
			steps <- step{d, nil}
			time.Sleep(max(d, 10*time.Millisecond)) // the pruner's pause: as long as the batch took
		}
	}()
	var during []time.Duration
	done := false
	for !done {
		select {
		case s, ok := <-steps:
			if !ok {
				done = true
				break
			}
			if s.err != nil {
				return f, s.err
			}
			f.batches++
			f.maxBatch = max(f.maxBatch, s.d)
		default:
			d, err := timePasses(h, clock, "pruning"+strconv.Itoa(len(during)), 1)
			if err != nil {
				return f, err
			}
			during = append(during, d...)
		}
	}
	f.prune = time.Since(began)
	f.passes = len(during)
	f.base50, f.base99 = quantile(base, .5), quantile(base, .99)
	f.pruning50, f.pruning99 = quantile(during, .5), quantile(during, .99)
	if err := h.Stop(); err != nil {
		return f, err
	}
	if err := st.Close(); err != nil {
		return f, err
	}
	if f.pruned, err = fileSize(full); err != nil {
		return f, err
	}

	fresh := filepath.Join(dir, "fresh.db")
	if err := fillRuns(ctx, fresh, retentionRuns-retentionKeep, retentionRuns); err != nil {
		return f, err
	}
	f.fresh, err = fileSize(fresh)
	return f, err
}

// fillRuns writes runs [from, to) as a daemon leaves them: ended, each with its task instances,
// attempts and done queue entries (with their requirement rows), a thousand per transaction.
func fillRuns(ctx context.Context, path string, from, to int) error {
	st, err := store.Open(ctx, path, store.Options{Synchronous: "off"})
	if err != nil {
		return err
	}
	defer st.Close()
	for lo := from; lo < to; lo += 1000 {
		err := st.WithTx(ctx, func(tx store.Tx) error {
			var tis []*store.TaskInstance
			var as []*store.Attempt
			var es []*store.Entry
			for i := lo; i < min(lo+1000, to); i++ {
				end := runEnd(i)
				start := end.Add(-40 * time.Second)
				dagID := fmt.Sprintf("dag_%02d", i%benchDAGs)
				r := &store.Run{DAGID: dagID, RunID: "scheduled__" + start.Format(time.RFC3339), RunType: vocab.RunSchedule,
					LogicalDate: start, State: vocab.RunSuccess, QueuedAt: start, StartDate: start, EndDate: end, Owner: "bench",
					Version: 1}
				if err := tx.InsertRun(r); err != nil {
					return err
				}
				for k := range benchTasks {
					task := "task_" + strconv.Itoa(k)
					tis = append(tis, &store.TaskInstance{Run: r.PK, TaskID: task, State: vocab.TaskSuccess, TryNumber: 1,
						StartDate: start, EndDate: end})
					as = append(as, &store.Attempt{Run: r.PK, TaskID: task, TryNumber: 1, State: vocab.TaskSuccess,
						StartDate: start, EndDate: end, Daemon: "bench", Version: 1})
					es = append(es, &store.Entry{Run: r.PK, TaskID: task, TryNumber: 1, Label: dagID + "." + task + " try 1",
						Priority: 1, Due: start, State: vocab.EntryDone, CreatedAt: start, Fingerprint: "0123456789abcdef0123456789abcdef",
						Needs: []store.Requirement{{Pool: "default", Slots: 1}, {Pool: "_global", Slots: 1, Implicit: true, Capacity: 32},
							{Pool: "_dag/" + dagID + "/" + r.RunID, Slots: 1, Implicit: true, Capacity: 16}}})
				}
			}
			if err := tx.PutTIs(tis); err != nil {
				return err
			}
			if err := tx.PutAttempts(as); err != nil {
				return err
			}
			return tx.InsertEntries(es)
		})
		if err != nil {
			return err
		}
	}
	if err := st.Close(); err != nil {
		return err
	}
	// Done entries carry their admission and end, as a pass writes them.
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, `UPDATE queue_entries SET admitted_at = created_at, ended_at = created_at + 40000000`)
	return err
}

// benchHarness steps a daemon with one one-task DAG over st by hand.
func benchHarness(ctx context.Context, st store.Store, dir string) (*executor.Harness, *executor.FakeClock, error) {
	dags := filepath.Join(dir, "dags")
	if err := os.MkdirAll(dags, 0o755); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(dags, "tick.yaml"), []byte("tasks:\n  - {id: t, bash: 'true'}\n"), 0o644); err != nil {
		return nil, nil, err
	}
	clock := executor.NewFakeClock(runEnd(retentionRuns))
	h, err := executor.NewHarness(ctx, executor.Config{Store: st, Settings: config.Default(), DAGsDir: dags,
		StateDir: filepath.Join(dir, "state"), DaemonID: "bench-retention", Clock: clock,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return h, clock, err
}

// timePasses runs n runs of tick, each a pass that creates and admits it and a pass that ends
// it, and returns each pass's wall time.
func timePasses(h *executor.Harness, clock *executor.FakeClock, prefix string, n int) ([]time.Duration, error) {
	var out []time.Duration
	for i := range n {
		clock.Advance(time.Second)
		ev, _ := h.Trigger(executor.TriggerRequest{DAGID: "tick", RunID: fmt.Sprintf("%s-%d", prefix, i)})
		start := time.Now()
		p, err := h.Pass(ev)
		out = append(out, time.Since(start))
		if err != nil {
			return nil, err
		}
		var ends []any
		for _, s := range p.Starts {
			ends = append(ends, h.End(s, true, ""))
		}
		start = time.Now()
		if _, err := h.Pass(ends...); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// fileSize is a SQLite database's size on disk, its WAL included.
func fileSize(path string) (int64, error) {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if os.IsNotExist(err) {
			continue
		} else if err != nil {
			return 0, err
		}
		n += fi.Size()
	}
	return n, nil
}

func printRetention(out io.Writer, f retentionFigures) {
	mib := func(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
	fmt.Fprintf(out, "\nretention (SQLite, runs of %d tasks): %d runs %s; pruned to the newest %d: %s; a store that only ever had %d: %s; ratio %.2f× (target ≤ 1.5×)\n",
		benchTasks, retentionRuns, mib(f.full), retentionKeep, mib(f.pruned), retentionKeep, mib(f.fresh),
		float64(f.pruned)/float64(f.fresh))
	fmt.Fprintf(out, "  pruning %d runs: %v in %d batches, the longest %v (the writers' lock held that long)\n",
		retentionRuns-retentionKeep, f.prune.Round(time.Millisecond), f.batches, us(f.maxBatch))
	fmt.Fprintf(out, "  a pass (create or end a one-task run): p50 %v p99 %v alone; p50 %v p99 %v while pruning (%d passes)\n",
		us(f.base50), us(f.base99), us(f.pruning50), us(f.pruning99), f.passes)
}
