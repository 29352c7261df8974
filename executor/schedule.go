package executor

import (
	"errors"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// schedule is a DAG's parsed schedule.
type schedule struct {
	cron   cron.Schedule // nil for @reboot or manual-only
	reboot bool
}

func (l *loop) scheduleOf(d *dag.DAG) *schedule {
	if s, ok := l.scheds[d]; ok {
		return s
	}
	cs, reboot, err := dag.ParseSchedule(d.Schedule)
	s := &schedule{cron: cs, reboot: reboot}
	if err != nil {
		s = &schedule{}
	}
	l.scheds[d] = s
	return s
}

// maxFiresSkipped bounds the walk to the newest missed fire of a DAG without catch-up.
const maxFiresSkipped = 1 << 20

// createRuns creates the runs that are due in this pass: the test run of `dags test`, @reboot
// runs once per daemon start, and cron fires. Two daemons cannot create the same fire: the
// store keeps scheduled runs unique per (dag, logical date).
func (l *loop) createRuns(tx store.Tx, p *passState) error {
	if t := l.cfg.Test; t != nil {
		if l.testPK != 0 {
			return nil
		}
		d := l.reg.get(t.DAGID)
		if d == nil {
			return errors.New("dag " + t.DAGID + " is not loaded")
		}
		run, err := l.newRun(tx, p, d, vocab.RunTest, time.Time{}, "", t.Conf, "", false)
		if err != nil {
			return err
		}
		l.testPK = run.PK
		return nil
	}
	dags, _ := l.reg.snapshot()
	for _, d := range dags {
		sched := l.scheduleOf(d)
		if l.dagStates[d.ID].Paused || (sched.cron == nil && !sched.reboot) {
			continue
		}
		if sched.reboot {
			if l.reboot {
				if err := l.fire(tx, p, d, vocab.RunSchedule, p.now); err != nil {
					return err
				}
			}
			continue
		}
		if err := l.cronFires(tx, p, d, sched.cron); err != nil {
			return err
		}
	}
	// The fires are consumed only when this pass commits (afterCommit); a pass that fails
	// drops them with the §4.9 warning instead (unavailable).
	p.rebooted = l.reboot
	return nil
}

// cronFires turns a DAG's due fires into runs. With catchup, missed fires since the checkpoint
// (or start_date) become runs one at a time, in order: the next is created only when the
// previous scheduled run has ended (§3.5). Without it, only the newest due fire runs. A DAG seen
// for the first time without catchup starts from now.
func (l *loop) cronFires(tx store.Tx, p *passState, d *dag.DAG, cs cron.Schedule) error {
	st := l.dagStates[d.ID]
	cp := st.Checkpoint
	if cp.IsZero() {
		cp = p.now
		if d.Catchup && !d.StartDate.IsZero() {
			cp = d.StartDate.Add(-time.Nanosecond)
		}
		if err := l.setCheckpoint(tx, d.ID, cp); err != nil {
			return err
		}
	}
	next := cs.Next(cp)
	if next.After(p.now) {
		return nil
	}
	if dropped, ok := l.dropped[d.ID]; ok {
		// Fires up to this one were dropped while the store was unavailable (§4.9).
		delete(l.dropped, d.ID)
		if !dropped.Before(next) {
			return l.setCheckpoint(tx, d.ID, dropped)
		}
	}
	if d.Catchup {
		if l.openScheduledRuns(d.ID) > 0 {
			return nil
		}
		runType := vocab.RunSchedule
		if !cs.Next(next).After(p.now) {
			runType = vocab.RunCatchup
		}
		return l.fire(tx, p, d, runType, next)
	}
	for i := 0; i < maxFiresSkipped; i++ {
		after := cs.Next(next)
		if after.After(p.now) {
			break
		}
		next = after
	}
	return l.fire(tx, p, d, vocab.RunSchedule, next)
}

// openScheduledRuns counts the open scheduled and catch-up runs of a DAG, every owner's (§9).
func (l *loop) openScheduledRuns(dagID string) int {
	n := 0
	for _, r := range l.runs {
		if r.DAGID == dagID && r.RunType.LeaderOwned() {
			n++
		}
	}
	for _, r := range l.others {
		if r.DAGID == dagID && r.RunType.LeaderOwned() {
			n++
		}
	}
	return n
}

// fire creates the run of one fire and advances the checkpoint; a fire another daemon already
// turned into a run only advances it.
func (l *loop) fire(tx store.Tx, p *passState, d *dag.DAG, runType vocab.RunType, at time.Time) error {
	run, err := l.newRun(tx, p, d, runType, at, "", nil, "", false)
	switch {
	case err == nil:
		if err := l.retireJobRetries(tx, p, d, run, "retry retired by a newer fire"); err != nil {
			return err
		}
	case !errors.Is(err, store.ErrConflict):
		return err
	}
	return l.setCheckpoint(tx, d.ID, at)
}

func (l *loop) setCheckpoint(tx store.Tx, dagID string, at time.Time) error {
	st := l.dagStates[dagID]
	st.DAGID, st.Checkpoint = dagID, at
	l.dagStates[dagID] = st
	return tx.SetCheckpoint(dagID, at)
}

// nextFire is the earliest cron fire after now the loop must wake for. A fire already due that
// the last pass did not create waits for a catch-up run to end (this daemon's or another's):
// that end wakes the loop, so it is not a reason to pass again at once.
func (l *loop) nextFire(now time.Time) time.Time {
	var out time.Time
	if l.cfg.Test != nil {
		return out
	}
	dags, _ := l.reg.snapshot()
	for _, d := range dags {
		s := l.scheduleOf(d)
		if s.cron == nil || l.dagStates[d.ID].Paused {
			continue
		}
		cp := l.dagStates[d.ID].Checkpoint
		if cp.IsZero() {
			continue
		}
		if n := s.cron.Next(cp); n.After(now) && (out.IsZero() || n.Before(out)) {
			out = n
		}
	}
	return out
}
