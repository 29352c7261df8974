// Package retention deletes the history poolflow keeps past its age (SPEC §12): ended runs
// with their task instances, attempts, entries and logs, the log files of older runs, audit
// events, and DAG versions nothing records any more.
//
// It deletes in batches, each a write transaction of its own holding the writers' lock for a
// few milliseconds, so that a daemon's passes never wait behind a long delete: the daemon's
// pruner (Pruner) runs them off the scheduler loop, pausing between batches, and `poolflow db
// clean` runs them one after the other. What a batch may delete is the store's business
// (store.Tx.PruneRuns): never an open run, a run with a live attempt, or the last run of a DAG.
//
// Logs live on the host of the daemon that ran the attempt (docs/design.md), so each host
// removes its own: the runs a batch deleted at once, after the commit; and a walk of the logs
// folder, now and then, removes the folders of runs that are gone (deleted by another host or
// by db clean) and of runs that ended before the logs' age.
package retention

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/executor/runner"
	"github.com/poolflow/poolflow/store"
)

// Batch sizes: a batch of runs deletes their task instances, attempts, entries, requirement
// rows and commands too (a few thousand rows for runs of a dozen tasks), measured at a few
// milliseconds (docs/design.md, Retention).
const (
	DefaultRunsPerBatch   = 100
	DefaultEventsPerBatch = 1000
	versionsPerBatch      = 100
)

// Cutoffs are what is deleted: runs that ended before Runs (their logs with them), the logs of
// runs that ended before Logs (their rows stay), events before Events; a zero cutoff deletes
// nothing of its kind. The logs of a run that is kept (the last of its DAG, say) stay unless
// Logs is set.
type Cutoffs struct {
	Runs, Logs, Events time.Time
}

// Any reports whether a cutoff is set.
func (c Cutoffs) Any() bool { return !c.Runs.IsZero() || !c.Logs.IsZero() || !c.Events.IsZero() }

// CutoffsAt are the cutoffs of retention r at now.
func CutoffsAt(r config.Retention, now time.Time) Cutoffs {
	var c Cutoffs
	at := func(age time.Duration) time.Time {
		if age <= 0 {
			return time.Time{}
		}
		return now.Add(-age)
	}
	c.Runs, c.Logs, c.Events = at(r.Runs), at(r.Logs), at(r.Events)
	return c
}

// Result counts what a clean deleted.
type Result struct {
	Runs, Events, Versions int
	Capacities             int // pool capacity changes
	LogDirs                int // run log folders removed on this host
	Batches                int // write transactions
}

func (r *Result) add(o Result) {
	r.Runs += o.Runs
	r.Events += o.Events
	r.Versions += o.Versions
	r.Capacities += o.Capacities
	r.LogDirs += o.LogDirs
	r.Batches += o.Batches
}

// Cleaner deletes what is past its age from one store, and the logs of this host.
type Cleaner struct {
	Store    store.Store
	StateDir string // logs are under StateDir/logs
	Logger   *slog.Logger
	// RunsPerBatch and EventsPerBatch bound one transaction; 0 takes the defaults.
	RunsPerBatch, EventsPerBatch int
}

func (c *Cleaner) runsPerBatch() int {
	if c.RunsPerBatch > 0 {
		return c.RunsPerBatch
	}
	return DefaultRunsPerBatch
}

func (c *Cleaner) eventsPerBatch() int {
	if c.EventsPerBatch > 0 {
		return c.EventsPerBatch
	}
	return DefaultEventsPerBatch
}

func (c *Cleaner) log() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}

// Step deletes one batch of what cut selects — runs first, then events, then versions once no
// run is left — at now, removes the log folders of the runs it deleted, and reports whether
// there is more to delete.
func (c *Cleaner) Step(ctx context.Context, cut Cutoffs, now time.Time) (Result, bool, error) {
	var res Result
	var pruned []store.PrunedRun
	more := false
	err := c.Store.WithTx(ctx, func(tx store.Tx) error {
		res = Result{Batches: 1}
		var err error
		if !cut.Runs.IsZero() {
			if pruned, err = tx.PruneRuns(cut.Runs, now, c.runsPerBatch()); err != nil {
				return err
			}
			res.Runs = len(pruned)
			if len(pruned) == c.runsPerBatch() {
				more = true
				return nil // the events and versions wait for the next batch
			}
		}
		if !cut.Events.IsZero() {
			if res.Events, err = tx.PruneEvents(cut.Events, c.eventsPerBatch()); err != nil {
				return err
			}
			if res.Events == c.eventsPerBatch() {
				more = true
				return nil
			}
		}
		if !cut.Runs.IsZero() {
			// The pools' history goes back as far as the runs that held them.
			if res.Capacities, err = tx.PrunePoolHistory(cut.Runs); err != nil {
				return err
			}
			// Versions are old when the runs that recorded them are: same cutoff.
			if res.Versions, err = tx.PruneVersions(cut.Runs, versionsPerBatch); err != nil {
				return err
			}
			more = res.Versions == versionsPerBatch
		}
		return nil
	})
	if err != nil {
		return Result{}, false, err
	}
	res.LogDirs = c.removeRunLogs(pruned)
	return res, more, nil
}

// removeRunLogs removes the log folders of deleted runs on this host and counts those it found.
func (c *Cleaner) removeRunLogs(runs []store.PrunedRun) int {
	n := 0
	for _, r := range runs {
		dir := runner.RunLogDir(c.StateDir, r.DAGID, r.RunID)
		if _, err := os.Lstat(dir); err != nil {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			c.log().Warn("retention: the logs of a deleted run could not be removed", "dag_id", r.DAGID, "run_id", r.RunID, "err", err)
			continue
		}
		n++
		removeIfEmpty(filepath.Dir(dir))
	}
	return n
}

// removeIfEmpty removes a DAG's logs folder once its last run's folder is gone (an error
// means it is not empty, or not there).
func removeIfEmpty(dir string) { _ = os.Remove(dir) }

// Clean deletes everything cut selects, batch after batch, then walks the logs folder (Walk):
// what `poolflow db clean` does, with pause between batches (0: none).
func (c *Cleaner) Clean(ctx context.Context, cut Cutoffs, now time.Time, pause time.Duration) (Result, error) {
	var total Result
	for {
		res, more, err := c.Step(ctx, cut, now)
		total.add(res)
		if err != nil {
			return total, err
		}
		if !more {
			break
		}
		if err := sleep(ctx, pause); err != nil {
			return total, err
		}
	}
	n, err := c.Walk(ctx, cut.Logs)
	total.LogDirs += n
	return total, err
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Walk walks this host's logs folder (<state>/logs/<dag>/<run>) and removes the folders of
// runs that are no longer in the store, and, with logsBefore set, of runs that ended before it
// (their rows stay: the log is what retention.logs ages out). It leaves alone a DAG folder
// whose name is not a stored DAG's, an open run's folder, and anything that is not a folder.
// It counts the run folders it removed.
func (c *Cleaner) Walk(ctx context.Context, logsBefore time.Time) (int, error) {
	root := filepath.Join(c.StateDir, "logs")
	dagDirs, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	rows, err := c.Store.ListDAGRows(ctx)
	if err != nil {
		return 0, err
	}
	byDir := make(map[string]string, len(rows)) // folder name → DAG id (runner.RunLogDir's naming)
	for _, r := range rows {
		byDir[runner.LogName(r.DAGID)] = r.DAGID
	}
	removed := 0
	for _, dd := range dagDirs {
		dagID, known := byDir[dd.Name()]
		if !dd.IsDir() || !known {
			continue
		}
		runDirs, err := os.ReadDir(filepath.Join(root, dd.Name()))
		if err != nil {
			c.log().Warn("retention: a DAG's logs folder could not be read", "dir", filepath.Join(root, dd.Name()), "err", err)
			continue
		}
		var names []string
		for _, rd := range runDirs {
			if rd.IsDir() {
				names = append(names, rd.Name())
			}
		}
		ends, err := c.Store.RunEnds(ctx, dagID, names)
		if err != nil {
			return removed, err
		}
		for _, name := range names {
			end, exists := ends[name]
			if exists && (end.IsZero() || logsBefore.IsZero() || !end.Before(logsBefore)) {
				continue // kept: open, or its logs are not old
			}
			dir := filepath.Join(root, dd.Name(), name)
			if err := os.RemoveAll(dir); err != nil {
				c.log().Warn("retention: a run's logs could not be removed", "dir", dir, "err", err)
				continue
			}
			removed++
		}
		removeIfEmpty(filepath.Join(root, dd.Name()))
		if err := ctx.Err(); err != nil {
			return removed, err
		}
	}
	return removed, nil
}
