package decide

import (
	"time"

	"github.com/robfig/cron/v3"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/vocab"
)

// schedule is a DAG's parsed schedule.
type schedule struct {
	cron   cron.Schedule // nil for @reboot or manual-only
	reboot bool
}

func (d *Decider) scheduleOf(g *dag.DAG) *schedule {
	if s, ok := d.scheds[g]; ok {
		return s
	}
	cs, reboot, err := dag.ParseSchedule(g.Schedule)
	s := &schedule{cron: cs, reboot: reboot}
	if err != nil {
		s = &schedule{}
	}
	d.scheds[g] = s
	return s
}

// maxFiresSkipped bounds the walk to the newest missed fire of a DAG without catch-up.
const maxFiresSkipped = 1 << 20

// createRuns creates the runs that are due in this pass: the test run of `dags test`, @reboot
// runs once per daemon start, and cron fires. Two daemons cannot create the same fire: the
// store keeps scheduled runs unique per (dag, logical date), and a pass reads the checkpoint
// another daemon advanced with its fire.
func (ps *pass) createRuns() {
	if t := ps.cfg.Test; t != nil {
		if ps.st.TestPK != 0 {
			return
		}
		g := ps.DAG(t.DAGID)
		if g == nil {
			return // the daemon refuses to start without it
		}
		r, err := ps.runRecord(g, vocab.RunTest, time.Time{}, "", t.Conf, "", false)
		if err != nil {
			return
		}
		// Memory takes the run as the test run only once its insert committed (Committed): a
		// failed pass's run does not exist, and the next pass creates it again.
		ps.p.TestPK = ps.newRun(g, r).PK
		return
	}
	for _, g := range ps.dags.List {
		sched := ps.scheduleOf(g)
		if ps.st.DAGStates[g.ID].Paused || (sched.cron == nil && !sched.reboot) {
			continue
		}
		if sched.reboot {
			if ps.Reboot {
				ps.fire(g, firedType(g, vocab.RunSchedule), ps.now)
			}
			continue
		}
		ps.cronFires(g, sched.cron)
	}
	// The fires are consumed only when this pass commits (Committed); a pass that fails drops
	// them with the §4.9 warning instead (Unavailable).
	ps.p.Rebooted = ps.Reboot
}

// cronFires turns a DAG's due fires into runs. With catchup, missed fires since the checkpoint
// (or start_date) become runs one at a time, in order: the next is created only when the
// previous scheduled run has ended (§3.5). Without it, only the newest due fire runs. A DAG seen
// for the first time without catchup starts from now; so does an every_node DAG on each
// daemon's start (its checkpoint is the daemon's own, in memory).
func (ps *pass) cronFires(g *dag.DAG, cs cron.Schedule) {
	cp := ps.checkpoint(g)
	if cp.IsZero() {
		cp = ps.now
		if g.Catchup && !g.StartDate.IsZero() {
			cp = g.StartDate.Add(-time.Nanosecond)
		}
		ps.setCheckpoint(g, cp)
	}
	next := cs.Next(cp)
	if next.After(ps.now) {
		return
	}
	if dropped, ok := ps.dropped[g.ID]; ok {
		// Fires up to this one were dropped while the store was unavailable (§4.9).
		delete(ps.dropped, g.ID)
		if !dropped.Before(next) {
			ps.setCheckpoint(g, dropped)
			return
		}
	}
	if g.Catchup {
		if ps.openScheduledRuns(g.ID) > 0 {
			return
		}
		runType := vocab.RunSchedule
		if !cs.Next(next).After(ps.now) {
			runType = vocab.RunCatchup
		}
		ps.fire(g, runType, next)
		return
	}
	for i := 0; i < maxFiresSkipped; i++ {
		after := cs.Next(next)
		if after.After(ps.now) {
			break
		}
		next = after
	}
	ps.fire(g, firedType(g, vocab.RunSchedule), next)
}

// firedType is the run type of a DAG's fire: an every_node DAG's fires are node runs, bound to
// the daemon that fired them (§9).
func firedType(g *dag.DAG, t vocab.RunType) vocab.RunType {
	if g.EveryNode {
		return vocab.RunNode
	}
	return t
}

// openScheduledRuns counts the open scheduled and catch-up runs of a DAG, every owner's (§9).
func (ps *pass) openScheduledRuns(dagID string) int {
	n := 0
	for _, r := range ps.st.Runs {
		if r.DAGID == dagID && r.RunType.Scheduled() {
			n++
		}
	}
	for _, r := range ps.st.Others {
		if r.DAGID == dagID && r.RunType.Scheduled() {
			n++
		}
	}
	return n
}

// fire creates the run of one fire and advances the checkpoint.
func (ps *pass) fire(g *dag.DAG, runType vocab.RunType, at time.Time) {
	r, err := ps.runRecord(g, runType, at, "", nil, "", false)
	if err == nil {
		run := ps.newRun(g, r)
		ps.retireJobRetries(g, run, "retry retired by a newer fire")
	}
	ps.setCheckpoint(g, at)
}

// checkpoint is the last fire of a DAG this pass knows of: the store's, shared by the daemons,
// or for an every_node DAG this daemon's own, as of this pass.
func (ps *pass) checkpoint(g *dag.DAG) time.Time {
	if g.EveryNode {
		if at, ok := ps.p.NodeFires[g.ID]; ok {
			return at
		}
	}
	return ps.Decider.checkpoint(g)
}

// checkpoint is the last fire of a DAG as of the last committed pass.
func (d *Decider) checkpoint(g *dag.DAG) time.Time {
	if g.EveryNode {
		return d.nodeFires[g.ID]
	}
	return d.St.DAGStates[g.ID].Checkpoint
}

// setCheckpoint advances a DAG's checkpoint: in the store, or for an every_node DAG in this
// daemon's memory once the pass commits (Committed), so that a failed pass fires again.
func (ps *pass) setCheckpoint(g *dag.DAG, at time.Time) {
	if g.EveryNode {
		if ps.p.NodeFires == nil {
			ps.p.NodeFires = map[string]time.Time{}
		}
		ps.p.NodeFires[g.ID] = at
		return
	}
	st := ps.st.DAGStates[g.ID]
	st.DAGID, st.Checkpoint = g.ID, at
	ps.st.DAGStates[g.ID] = st
	ps.p.add(SetCheckpoint{g.ID, at})
}

// nextFire is the earliest cron fire after since, the clock of the last committed pass, that
// the loop must wake for. A fire due by then that the pass did not create waits for a catch-up
// run to end (this daemon's or another's): that end wakes the loop, so it is not a reason to pass
// again at once. A fire that came due after the pass read the clock (while it ran) was never
// looked at: it is returned, and the loop passes at once. Measured from the time of the wake-up
// instead, such a fire was taken for a declined one and nothing woke the loop for it until some
// other reason did (a lease renewal, up to 10 s later); a pass that runs at any moment, as the
// one that applies a change of the DAG folder does, crossed a fire now and then.
func (d *Decider) nextFire(since time.Time) time.Time {
	var out time.Time
	if d.cfg.Test != nil {
		return out
	}
	for _, g := range d.dags.List {
		s := d.scheduleOf(g)
		if s.cron == nil || d.St.DAGStates[g.ID].Paused {
			continue
		}
		cp := d.checkpoint(g)
		if cp.IsZero() {
			continue
		}
		if n := s.cron.Next(cp); n.After(since) && (out.IsZero() || n.Before(out)) {
			out = n
		}
	}
	return out
}
