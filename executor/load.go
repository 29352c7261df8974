package executor

import (
	"fmt"
	"strings"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
)

// load rebuilds the loop's memory from the store: pools, DAG flags, the open runs this daemon
// owns (taking unowned ones), a serve daemon also the bound runs of dead owners whose end is
// handled (§9: their entries wait node_unavailable, their commands are applied here), their task
// instances and queue entries, other owners' open runs (for counting) and waiting entries, and
// the commands it applies. It runs on the first pass, after a failed pass, whenever another
// process committed and whenever the owners' liveness changed. Waiting entries of runs that
// ended are retired first (§4.6).
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
	l.pools = map[string]store.Pool{}
	var sig strings.Builder
	for _, p := range ps {
		l.pools[p.Name] = p
		fmt.Fprintf(&sig, "%s:%d;", p.Name, p.Slots)
	}
	if sig.String() != l.poolSig {
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
		l.poolSig = sig.String()
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
	l.foreign = l.foreign[:0]
	l.others = l.others[:0]
	for _, r := range runs {
		if l.cfg.Test != nil {
			if r.PK == l.testPK {
				err = l.addRun(tx, r, false)
			} else {
				l.others = append(l.others, r)
			}
			if err != nil {
				return err
			}
			continue
		}
		switch runFateOf(r, l.cfg.DaemonID, true, l.view) {
		case fateTake:
			r.Owner = l.cfg.DaemonID
			if err := tx.UpdateRun(&r); err != nil {
				return err
			}
			err = l.addRun(tx, r, false)
		case fateMine:
			err = l.addRun(tx, r, false)
		case fateAway:
			if l.view.handled(r.Owner) {
				err = l.addRun(tx, r, true)
			} else {
				l.others = append(l.others, r) // its end is being handled: its claims are still held
			}
		default:
			l.others = append(l.others, r)
		}
		if err != nil {
			return err
		}
	}
	es, err := tx.Entries("waiting", "admitted")
	if err != nil {
		return err
	}
	claims, err := tx.Claims()
	if err != nil {
		return err
	}
	held := map[int64][]store.Requirement{}
	for _, c := range claims {
		held[c.Entry] = append(held[c.Entry], store.Requirement{Pool: c.Pool, Slots: c.Slots})
	}
	for i := range es {
		e := es[i]
		lr, inMemory := l.runs[e.Run]
		if !inMemory {
			if e.State == string(store.EntryWaiting) {
				l.foreign = append(l.foreign, &liveEntry{Entry: e, kept: held[e.ID], away: !l.view.isAlive(e.Owner)})
			}
			continue
		}
		le := &liveEntry{Entry: e, run: lr, ti: lr.tis[e.TaskID], away: lr.away}
		if e.State == string(store.EntryWaiting) {
			le.kept = held[e.ID] // a reschedule sensor's include_deferred claims
		}
		if !e.NotBefore.IsZero() {
			le.pokes = 1
		}
		if le.ti != nil {
			le.ti.entry = le
		}
		l.entries[e.ID] = le
	}
	cmds, err := tx.PendingCommands(commandOwners(l.view, l.cfg.DaemonID, l.serve()))
	if err != nil {
		return err
	}
	for _, c := range cmds {
		l.pending = append(l.pending, &evCommand{cmd: c, fromStore: true})
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
	return nil
}

// addRun puts an open run in memory with its task instances; away marks a dead owner's bound
// run, which this daemon neither advances nor admits.
func (l *loop) addRun(tx store.Tx, r store.Run, away bool) error {
	d := l.reg.get(r.DAGID)
	lr := newLiveRun(r, d) // with d nil, its DAG is gone: retireRemoved ends it
	lr.away = away
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
