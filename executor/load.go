package executor

import (
	"context"
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
	"time"
)

// loadOptions gives DAG validation the pools that exist now: configured and stored (§2.3).
func (l *loop) loadOptions() dag.LoadOptions {
	caps := map[string]int{}
	for _, p := range l.cfg.Settings.Pools {
		caps[p.Name] = p.Slots
	}
	if ps, err := l.storedPools(); err == nil {
		for _, p := range ps {
			if _, ok := caps[p.Name]; !ok {
				caps[p.Name] = p.Slots
			}
		}
	}
	return dag.LoadOptions{Pools: func(name string) (int, bool) {
		c, ok := caps[name]
		return c, ok
	}}
}

func (l *loop) storedPools() ([]store.Pool, error) {
	return l.st.ListPools(context.Background())
}

// load rebuilds the loop's memory from the store: pools, DAG flags, the open runs this daemon
// owns (taking unowned ones), their task instances and queue entries, other daemons' waiting
// entries, and the commands addressed to it. It runs on the first pass, after a failed pass, and
// whenever another process committed.
func (l *loop) load(tx *store.Tx, now time.Time) error {
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
	for _, p := range ps {
		l.pools[p.Name] = p
	}
	if l.dagStates, err = tx.DAGStates(); err != nil {
		return err
	}
	runs, err := tx.OpenRuns(l.cfg.DaemonID)
	if err != nil {
		return err
	}
	l.runs = map[int64]*liveRun{}
	l.entries = map[int64]*liveEntry{}
	l.foreign = l.foreign[:0]
	for _, r := range runs {
		if l.cfg.Test != nil && r.PK != l.testPK {
			continue
		}
		if r.Owner == "" {
			r.Owner = l.cfg.DaemonID
			if err := tx.UpdateRun(&r); err != nil {
				return err
			}
		}
		d := l.reg.get(r.DAGID)
		lr := newLiveRun(r, d) // with d nil, its DAG is gone: endRuns retires it
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
		lr, mine := l.runs[e.Run]
		if !mine {
			if e.State == "waiting" {
				l.foreign = append(l.foreign, &liveEntry{Entry: e, kept: held[e.ID]})
			}
			continue
		}
		le := &liveEntry{Entry: e, run: lr, ti: lr.tis[e.TaskID]}
		if e.State == "waiting" {
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
	cmds, err := tx.PendingCommands(l.cfg.DaemonID)
	if err != nil {
		return err
	}
	for _, c := range cmds {
		l.pending = append(l.pending, &evCommand{cmd: c, fromStore: true})
	}
	l.loaded = true
	return nil
}

// syncDAGs records the loaded DAGs and the current import errors in the store.
func (l *loop) syncDAGs(tx *store.Tx, now time.Time) error {
	dags, _ := l.reg.snapshot()
	for _, d := range dags {
		if err := tx.UpsertDAG(d.ID, d.File, d.Schedule, now); err != nil {
			return err
		}
	}
	return tx.SetImportErrors(l.reg.importErrors(), now)
}
