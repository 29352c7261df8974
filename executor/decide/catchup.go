package decide

import (
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/owners"
	"github.com/poolflow/poolflow/store"
)

// takeovers plans the handling of dead owners' ends (§9): for a dead owner on this host whose
// processes are not confirmed gone, their kill (a Reap, after the commit); for one whose
// processes are gone (or elsewhere), the Takeover op. It reports whether it planned a takeover:
// the pass then does only that.
func (ps *pass) takeovers() bool {
	v := ps.in.View
	took := false
	for _, t := range owners.PlanTakeovers(v, ps.cfg.DaemonID, ps.serve(), ps.cfg.Host, ps.in.Reaped) {
		switch {
		case t.Reap:
			ps.planReap(t.Owner)
		case ps.in.TookOver[t.Owner.ID] < t.Owner.Epoch:
			ps.p.add(Takeover{t})
			took = true
		}
	}
	return took
}

// TakeoverDue reports whether a pass that reads v has a dead owner's end to handle (not only
// its processes to kill), given the ends this daemon handled already (tookOver: per owner,
// the epoch). A dags test process handles a dead daemon's end only in part (it releases its
// claims) and never marks it handled: it does so once.
func (d *Decider) TakeoverDue(v *owners.View, reaped, tookOver map[string]int64) bool {
	for _, t := range owners.PlanTakeovers(v, d.cfg.DaemonID, d.serve(), d.cfg.Host, reaped) {
		if !t.Reap && tookOver[t.Owner.ID] < t.Owner.Epoch {
			return true
		}
	}
	return false
}

// planReap schedules the kill of a dead owner's processes on this host, once per epoch: the
// process groups on its claims, and every process carrying its tags.
func (ps *pass) planReap(o store.Owner) {
	if ps.in.Reaping[o.ID] >= o.Epoch {
		return
	}
	job := Reap{Owner: o.ID, Epoch: o.Epoch}
	seen := map[int]bool{}
	n := 0
	for _, c := range ps.in.Claims {
		if c.Daemon != o.ID || c.Epoch > o.Epoch {
			continue
		}
		n++
		if c.PGID > 0 && !seen[c.PGID] {
			seen[c.PGID] = true
			job.PGIDs = append(job.PGIDs, c.PGID)
		}
	}
	ps.p.info("owner is gone; confirming its processes are gone before releasing its claims", "owner", o.ID,
		"pid", o.PID, "last_heartbeat", o.Heartbeat, "claims", n)
	ps.p.Reaps = append(ps.p.Reaps, job)
}

// catchUp makes memory current: a load from the rows read (the first pass, after a failed one,
// when DAGs or owners changed), or a refresh from the rows other processes stamped; then the
// claims of this pass, and what the load found: runs taken, stop requests.
func (ps *pass) catchUp() {
	in, st := ps.in, ps.st
	if in.View != nil {
		st.View = in.View
	}
	if in.NextRunPK > 0 {
		st.NextRunPK, st.NextEntryID = in.NextRunPK, in.NextEntryID
	}
	var found struct{ stops []*state.Entry }
	switch {
	case in.Load != nil:
		if in.SyncDAGs {
			ps.p.add(SyncDAGs{ps.dags.List, ps.dags.Errors, ps.numberVersions()})
		}
		ps.p.add(RetireOrphans{})
		f := st.Load(in.Load, in.DV, in.Seq)
		st.PoolSig = state.PoolSignature(in.Load.Pools)
		found.stops = f.Stops
		if in.TestRunEnded != nil {
			// The test run ended elsewhere: a daemon failed it while this process could not renew.
			ps.testRun, ps.testDone = *in.TestRunEnded, true
		}
	case in.Refresh != nil:
		f := st.Refresh(in.Refresh, in.DV, in.Seq)
		found.stops = f.Stops
	}
	st.SetClaims(in.Claims)
	for _, le := range found.stops {
		ps.noteStop(le)
	}
}
