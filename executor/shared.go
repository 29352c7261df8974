package executor

import (
	"sort"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Work across daemons (§9). A leader-owned run (scheduled, catch-up) of a live serve daemon is
// *shared*: every other live serve daemon keeps it in memory with its task instances and
// entries, and admits its ready entries when it has room, exactly as it admits its own — in the
// same walk, in the same order, in the pass's one transaction under the writers' lock, which
// re-reads the claims and moves each entry only from waiting. The admitting daemon debits the
// claims under its own id and epoch (so its own _global, max_running, counts them, while named
// pools and the _dag/_task limits are shared by all), runs the attempt, and records its end:
// the attempt row, the entry done, the claims released only once its processes are gone, and
// the task instance's new state under the retry policy.
//
// The run's owner alone advances it: it creates entries as tasks become ready, brings retries
// back when due, expires and rejects entries, applies DAG changes and the concurrency policy,
// and ends the run. It learns what the others did from the change stamps (refresh.go), as any
// daemon learns any outside commit. What stays with the owner: sensors (their kept claims and
// pokes belong to one daemon), jobs (a success retires older fires' retries), entries queued
// under a task definition that differs from this daemon's, and every run that is not
// leader-owned (manual runs, dags test runs; §9: bound work stays with its owner).
//
// Stopping an attempt another daemon runs (tasks fail, replace) is a stop request on its entry
// (Tx.RequestStop): its runner kills it and fails the task with no retry when it ends; if the
// runner dies first, the takeover puts the entry back with the request still on it, and the
// owner fails the task.

// fate is what this loop does with an open run: runFateOf, narrowed by what this daemon can run
// (a dags test process holds only its own run; a shared run needs its DAG loaded here, and is
// not a job).
func (l *loop) fate(r store.Run) runFate {
	if l.cfg.Test != nil {
		if r.PK == l.testPK && l.testPK != 0 {
			return fateMine
		}
		return fateForeign
	}
	f := runFateOf(r, l.cfg.DaemonID, true, l.view)
	switch {
	case f == fateAway && !l.view.handled(r.Owner):
		return fateForeign // its end is being handled: its claims are still held
	case f == fateShared:
		if d := l.reg.get(r.DAGID); d == nil || d.IsJob {
			return fateForeign
		}
	}
	return f
}

// fate is the fate memory holds a run under.
func (lr *liveRun) fate() runFate {
	switch {
	case lr.shared:
		return fateShared
	case lr.away:
		return fateAway
	}
	return fateMine
}

// claimIndex is the claims of one read, by entry: the daemon holding them and the pools (a
// waiting reschedule sensor's kept claims).
type claimIndex struct {
	holder map[int64]string
	kept   map[int64][]store.Requirement
}

func indexClaims(claims []store.Claim) claimIndex {
	ix := claimIndex{holder: map[int64]string{}, kept: map[int64][]store.Requirement{}}
	for _, c := range claims {
		ix.holder[c.Entry] = c.Daemon
		ix.kept[c.Entry] = append(ix.kept[c.Entry], store.Requirement{Pool: c.Pool, Slots: c.Slots})
	}
	return ix
}

// memEntry makes a live entry of one of memory's runs from its stored row.
func (l *loop) memEntry(e store.Entry, lr *liveRun, ix claimIndex) *liveEntry {
	le := &liveEntry{Entry: e, run: lr, ti: lr.tis[e.TaskID], away: lr.away}
	switch e.State {
	case vocab.EntryWaiting:
		le.kept = ix.kept[e.ID] // a reschedule sensor's include_deferred claims
	case vocab.EntryAdmitted:
		le.holder = ix.holder[e.ID]
	}
	if !e.NotBefore.IsZero() {
		le.pokes = 1
	}
	if lr.shared {
		le.Needs = l.localNeeds(e.Needs)
		t := (*dag.Task)(nil)
		if le.ti != nil {
			t = le.ti.task
		}
		le.notHere = t == nil || t.Kind == dag.KindSensor || len(le.kept) > 0 || e.Fingerprint != le.ti.fingerprint()
	}
	return le
}

// localNeeds are a shared entry's needs as this daemon debits them: its owner's _global limit
// replaced by this daemon's own (max_running limits each daemon, §9).
func (l *loop) localNeeds(needs []store.Requirement) []store.Requirement {
	out := make([]store.Requirement, 0, len(needs)+1)
	for _, n := range needs {
		if n.Pool != pools.GlobalPool {
			out = append(out, n)
		}
	}
	if m := l.cfg.Settings.MaxRunning; m > 0 {
		out = append(out, store.Requirement{Pool: pools.GlobalPool, Slots: 1, Implicit: true, Capacity: m})
		sort.Slice(out, func(i, j int) bool { return out[i].Pool < out[j].Pool })
	}
	return out
}

// evStop is an entry of this daemon's run that carries a stop request but waits again: the
// daemon that ran it died before it could stop it. The pass fails the task with no retry.
type evStop struct{ entry int64 }

// noteStop acts on a stop request seen in memory: an attempt this daemon runs is killed and
// will fail with the request's reason; a waiting entry of its own run is failed in this pass.
func (l *loop) noteStop(le *liveEntry) {
	if le.ReasonCode != vocab.ReasonStopRequested {
		return
	}
	reason := orDefault(le.Reason, "stopped")
	switch le.State {
	case vocab.EntryAdmitted:
		if le.failWith == "" {
			le.failWith = reason
		}
		if a := l.running[le.ID]; a != nil {
			a.kill(reason)
		}
	case vocab.EntryWaiting:
		if !le.run.shared && !le.run.away {
			l.pending = append(l.pending, &evStop{entry: le.ID})
		}
	}
}

// applyStop fails the task of a waiting entry that carries a stop request (evStop).
func (l *loop) applyStop(tx store.Tx, p *passState, ev *evStop) error {
	le := l.entries[ev.entry]
	if le == nil || le.State != vocab.EntryWaiting || le.ReasonCode != vocab.ReasonStopRequested ||
		le.run.shared || le.run.away || le.ti == nil {
		return nil
	}
	return l.markFailed(tx, p, le.run, le.ti, orDefault(le.Reason, "stopped"))
}
