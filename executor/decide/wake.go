package decide

import (
	"fmt"
	"sort"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/attempt"
)

// NextWake is the earliest moment memory needs a pass on its own, at or after now: a retry, a
// queue deadline, a starvation threshold, an approval or sensor timeout, a sensor's next poke,
// a cron fire, another owner's lease end, the end of this daemon's claims' leases; zero for
// none. Its cost follows the runs' clock-bound tasks and the cron schedules, not the waiting
// entries: the queue's times come from its indexes.
func (d *Decider) NextWake(now time.Time) time.Time {
	var wake time.Time
	at := func(t time.Time) {
		if !t.IsZero() && (wake.IsZero() || t.Before(wake)) {
			wake = t
		}
	}
	at(d.MinLease)
	if v := d.St.View; v != nil {
		at(v.NextExpiry) // another owner's lease ends: its work may need handling
	}
	since := d.passedAt
	if since.IsZero() {
		since = now
	}
	at(d.nextFire(since)) // a fire that came due during the last pass is due now
	for _, run := range d.St.Runs {
		for ti := range run.Timers {
			at(clockWake(ti))
		}
	}
	at(d.St.NextWake(now))
	d.notifyWake(at)
	return wake
}

// Committed tells the decider that the pass of p committed, with what the store reported
// (drained: the pools whose drain ended): the @reboot fires are consumed, the admitted attempts
// run here, a test run that ended has its result, drained pools take their new capacity.
func (d *Decider) Committed(p *Plan, drained []string) {
	d.passedAt = p.Now
	if p.Rebooted {
		d.Reboot = false // consumed only with the commit that created the runs
	}
	for id, at := range p.NodeFires {
		d.nodeFires[id] = at
	}
	if p.TestPK != 0 {
		d.St.TestPK = p.TestPK
	}
	if p.CommandsRead || p.CommandsWait {
		d.CommandsWait = p.CommandsWait
	}
	for _, s := range p.Starts {
		d.St.Running[s.Entry] = true
	}
	for _, r := range p.Ended {
		if r.PK == d.St.TestPK && d.St.TestPK != 0 {
			d.testRun, d.testDone = r.Run, true
		}
	}
	for _, name := range drained {
		if sp, ok := d.St.Pools[name]; ok {
			sp.Slots, sp.TargetSlots = sp.TargetSlots, -2
			d.St.Pools[name] = sp
		}
	}
}

// Unavailable applies §4.9 when a pass could not read or write pool state: a scheduled fire
// that came due is dropped with the warning "Job <name> could not enter pool <pool>: <reason>"
// (the scheduler goes on), and each pool whose retry settlement could not be written says so;
// the completions among events stay pending and the next pass that reaches the pool applies
// them. It returns the warnings.
func (d *Decider) Unavailable(now time.Time, events []any) []string {
	var out []string
	reason := "pool state is unavailable"
	if d.cfg.Test == nil {
		for _, g := range d.dags.List {
			sched := d.scheduleOf(g)
			cp := d.checkpoint(g)
			if sched.cron == nil || d.St.DAGStates[g.ID].Paused || cp.IsZero() {
				continue
			}
			fire := sched.cron.Next(cp)
			if fire.After(now) || !d.dropped[g.ID].Before(fire) {
				continue
			}
			out = append(out, fmt.Sprintf("Job %s could not enter pool %s: %s", g.ID, dagPool(g), reason))
			d.dropped[g.ID] = fire
		}
		if d.Reboot {
			for _, g := range d.dags.List {
				if d.scheduleOf(g).reboot {
					out = append(out, fmt.Sprintf("Job %s could not enter pool %s: %s", g.ID, dagPool(g), reason))
				}
			}
			d.Reboot = false
		}
	}
	deferred := map[string]bool{}
	for _, ev := range events {
		f, ok := ev.(*attempt.Ended)
		if !ok || f.OK {
			continue
		}
		if le := d.St.Entries[f.Entry]; le != nil {
			for _, n := range le.Needs {
				if !n.Implicit {
					deferred[n.Pool] = true
				}
			}
		}
	}
	names := make([]string, 0, len(deferred))
	for p := range deferred {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		out = append(out, fmt.Sprintf("pool %s: retry settlement deferred", p))
	}
	return out
}

// dagPool names the pool a DAG's first task enters: its declared pool, else default.
func dagPool(g *dag.DAG) string {
	if len(g.Tasks) == 0 {
		return "default"
	}
	names := make([]string, 0, len(g.Tasks[0].PoolRequirements))
	for p := range g.Tasks[0].PoolRequirements {
		names = append(names, p)
	}
	if len(names) == 0 {
		return "default"
	}
	sort.Strings(names)
	return names[0]
}
