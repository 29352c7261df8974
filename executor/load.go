package executor

import (
	"fmt"
	"strings"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// load rebuilds the loop's memory from the store: pools, DAG flags, the open runs this daemon
// owns (taking unowned ones), a serve daemon also the bound runs of dead owners whose end is
// handled (§9: their entries wait node_unavailable, their commands are applied here) and the
// leader-owned runs of other live daemons (shared.go: their entries are admitted here too),
// their task instances and queue entries, other owners' open runs (for counting) and waiting
// entries, and the commands it applies. It runs on the first pass, after a failed pass and
// whenever the owners' liveness changed; other outside commits are read by refresh, from the
// change stamps. Waiting entries of runs that ended are retired first (§4.6).
func (l *loop) load(tx store.Tx, now time.Time) error {
	if l.regChanged || !l.loaded {
		if err := l.syncDAGs(tx, now); err != nil {
			return err
		}
		l.regChanged = false
	}
	ps, err := tx.Pools()
	if err != nil {
		return err
	}
	l.pools = poolsByName(ps)
	if sig := poolSignature(ps); sig != l.poolSig {
		// DAGs are validated against the pools (§2.3): a forced shrink can make one invalid.
		if l.poolSig != "" {
			// Decoding is cached (dag.Loader): only validation runs again here.
			l.reg.reload(true)
			l.regGen = l.reg.generation()
			l.scheds = map[*dag.DAG]*schedule{}
			l.dagsReloaded = true
			if err := l.syncDAGs(tx, now); err != nil {
				return err
			}
		}
		l.poolSig = sig
	}
	if l.dagStates, err = tx.DAGStates(); err != nil {
		return err
	}
	if n, err := tx.RetireOrphans(now); err != nil {
		return err
	} else if n > 0 {
		l.log.Info("retired waiting entries of runs that have ended", "entries", n)
	}
	runs, err := tx.OpenRuns()
	if err != nil {
		return err
	}
	l.runs = map[int64]*liveRun{}
	l.entries = map[int64]*liveEntry{}
	l.qvalid = false // the admission queue is built again from what is read here
	l.foreign = map[int64]*liveEntry{}
	l.others = map[int64]store.Run{}
	for _, r := range runs {
		if err := l.placeRun(tx, r); err != nil {
			return err
		}
	}
	es, err := tx.Entries(vocab.EntryWaiting, vocab.EntryAdmitted)
	if err != nil {
		return err
	}
	claims, err := tx.Claims()
	if err != nil {
		return err
	}
	ix := indexClaims(claims)
	for i := range es {
		l.placeEntry(es[i], ix)
	}
	if err := l.readCommands(tx); err != nil {
		return err
	}
	if l.cfg.Test != nil && l.testPK != 0 && l.runs[l.testPK] == nil {
		// The test run ended elsewhere: a daemon failed it while this process could not renew.
		r, err := tx.RunByPK(l.testPK)
		if err != nil {
			return err
		}
		l.testMu.Lock()
		l.testRun, l.testDone = r, true
		l.testMu.Unlock()
	}
	l.loaded = true
	l.seq = tx.Seq()
	return nil
}

// placeRun puts an open run where its fate says: in memory with its task instances (this
// daemon's, taking an unowned one; a dead owner's bound run whose end is handled; another live
// daemon's shared run), or among the other owners' runs, kept for counting.
func (l *loop) placeRun(tx store.Tx, r store.Run) error {
	switch f := l.fate(r); f {
	case fateTake:
		r.Owner = l.cfg.DaemonID
		if err := tx.UpdateRun(&r); err != nil {
			return err
		}
		return l.addRun(tx, r, fateMine)
	case fateMine, fateAway, fateShared:
		return l.addRun(tx, r, f)
	}
	l.others[r.PK] = r
	return nil
}

// placeEntry puts a waiting or admitted entry in memory: with its run when the run is in memory
// (keeping the pokes and the failure memory has for it, acting on a stop request it carries),
// else among the other owners' waiting entries.
func (l *loop) placeEntry(e store.Entry, ix claimIndex) {
	lr, inMemory := l.runs[e.Run]
	if !inMemory {
		if e.State == vocab.EntryWaiting {
			l.foreign[e.ID] = &liveEntry{Entry: e, kept: ix.kept[e.ID], away: !l.view.isAlive(e.Owner)}
		} else {
			delete(l.foreign, e.ID)
		}
		return
	}
	le := l.memEntry(e, lr, ix)
	if old := l.entries[e.ID]; old != nil {
		le.pokes, le.failWith = old.pokes, old.failWith
	}
	if le.ti != nil {
		le.ti.entry = le
	}
	l.entries[e.ID] = le
	l.noteStop(le)
}

// readCommands queues the operator commands stored for the runs this daemon applies them to.
func (l *loop) readCommands(tx store.Tx) error {
	cmds, err := tx.PendingCommands(commandOwners(l.view, l.cfg.DaemonID, l.serve()))
	if err != nil {
		return err
	}
	for _, c := range cmds {
		l.pending = append(l.pending, &evCommand{cmd: c, fromStore: true})
	}
	return nil
}

// poolsByName indexes the pools read in a pass.
func poolsByName(ps []store.Pool) map[string]store.Pool {
	out := make(map[string]store.Pool, len(ps))
	for _, p := range ps {
		out[p.Name] = p
	}
	return out
}

// poolSignature is the pools' capacities the DAGs are validated under.
func poolSignature(ps []store.Pool) string {
	var sig strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&sig, "%s:%d;", p.Name, p.Slots)
	}
	return sig.String()
}

// addRun puts an open run in memory with its task instances, under fate: fateAway marks a dead
// owner's bound run, which this daemon neither advances nor admits; fateShared another live
// daemon's leader-owned run, which it admits but does not advance.
func (l *loop) addRun(tx store.Tx, r store.Run, f runFate) error {
	d := l.reg.get(r.DAGID)
	lr := newLiveRun(r, d) // with d nil, its DAG is gone: retireRemoved ends it
	lr.away, lr.shared = f == fateAway, f == fateShared
	tis, err := tx.TaskInstances(r.PK)
	if err != nil {
		return err
	}
	for _, ti := range tis {
		lti := &liveTI{TaskInstance: ti}
		if d != nil {
			lti.task = d.Task(ti.TaskID)
		}
		lr.add(lti) // every task is on the frontier once: a loaded run is walked whole
	}
	l.runs[r.PK] = lr
	return nil
}

// syncDAGs records the loaded DAGs and the current import errors in the store.
func (l *loop) syncDAGs(tx store.Tx, now time.Time) error {
	dags, _ := l.reg.snapshot()
	for _, d := range dags {
		if err := tx.UpsertDAG(d.ID, d.File, d.Schedule, now); err != nil {
			return err
		}
	}
	return tx.SetImportErrors(l.reg.importErrors(), now)
}
