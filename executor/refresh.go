package executor

import (
	"time"

	"github.com/poolflow/poolflow/store"
)

// refresh brings memory up to date with what other processes committed since the last pass,
// reading only the runs, task instances and entries stamped after l.seq (Tx.ChangesSince), plus
// the small tables (pools, DAG flags, pending commands; the claims when entries changed). With several daemons each
// pass of one is an outside commit to all the others; reading every open run again each time
// would cost them a 3,000-task run per pass. It reports false, having changed nothing that
// load does not rebuild, when the change is one only load handles: a pool's capacity changed
// (the DAGs are validated again), a run of this daemon was changed by another process, or a
// run's fate differs from the one memory holds it under.
func (l *loop) refresh(tx store.Tx, now time.Time) (bool, error) {
	ps, err := tx.Pools()
	if err != nil {
		return false, err
	}
	if poolSignature(ps) != l.poolSig {
		return false, nil
	}
	states, err := tx.DAGStates()
	if err != nil {
		return false, err
	}
	ch, err := tx.ChangesSince(l.seq)
	if err != nil {
		return false, err
	}
	// Decide before changing anything whether load must do it.
	for _, r := range ch.Runs {
		lr := l.runs[r.PK]
		open := r.State.Open()
		switch {
		case lr == nil:
			if f := l.fate(r); open && (f == fateMine || f == fateAway) {
				return false, nil // a run of this daemon's, or of a dead owner's, it does not hold: unusual
			}
		case !lr.shared && !lr.away:
			return false, nil // another process changed this daemon's run
		case open && l.fate(r) != lr.fate():
			return false, nil
		}
	}

	l.pools = poolsByName(ps)
	for id, st := range states {
		if l.dagStates[id].Paused != st.Paused {
			l.qvalid = false // the blocks of its entries change: the queue is built again
		}
	}
	if len(states) != len(l.dagStates) {
		l.qvalid = false
	}
	l.dagStates = states
	var ix claimIndex
	if len(ch.Entries) > 0 { // the holders and kept claims of the entries that changed
		claims, err := tx.Claims()
		if err != nil {
			return false, err
		}
		ix = indexClaims(claims)
	}

	var ended []*liveRun
	for _, r := range ch.Runs {
		open := r.State.Open()
		if lr := l.runs[r.PK]; lr != nil {
			if !open {
				ended = append(ended, lr)
				continue
			}
			lr.Run = r // a shared or away run: its owner's row
			continue
		}
		delete(l.others, r.PK)
		if !open {
			continue
		}
		if err := l.placeRun(tx, r); err != nil {
			return false, err
		}
	}
	for _, row := range ch.TaskInstances {
		lr := l.runs[row.Run]
		if lr == nil {
			continue
		}
		ti := lr.tis[row.TaskID]
		if ti == nil {
			ti = &liveTI{TaskInstance: row}
			if lr.dag != nil {
				ti.task = lr.dag.Task(row.TaskID)
			}
			lr.add(ti)
			continue
		}
		if ti.TaskInstance != row {
			ti.TaskInstance = row
			ti.noted()
		}
	}
	for _, e := range ch.Entries {
		l.queueDirty(e.ID)
		if _, inMemory := l.runs[e.Run]; inMemory && e.State.Terminal() {
			if old := l.entries[e.ID]; old != nil {
				l.dropEntry(e.ID)
				if old.ti != nil && old.ti.entry == old {
					old.ti.entry = nil
				}
			}
			continue
		}
		l.placeEntry(e, ix)
	}
	for _, lr := range ended {
		for _, ti := range lr.tis {
			if le := ti.entry; le != nil {
				l.dropEntry(le.ID)
				ti.entry = nil
			}
		}
		delete(l.runs, lr.PK)
		l.forgetRun(lr)
	}
	if err := l.readCommands(tx); err != nil {
		return false, err
	}
	l.seq = tx.Seq()
	return true, nil
}
