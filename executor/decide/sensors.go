package decide

import (
	"fmt"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// A reschedule sensor (§5.1) is admitted once per poke. Between pokes it is up_for_reschedule:
// its entry waits again with the same queue ID, try number and due time, not before its next
// poke, and keeps only its claims in pools with include_deferred: true. Its timeout counts from
// its first poke, also while it waits for admission.

// keptPools are the pools whose claims a reschedule sensor keeps between pokes.
func (ps *pass) keptPools(needs []store.Requirement) []string {
	var out []string
	for _, n := range needs {
		if sp, ok := ps.st.Pools[n.Pool]; ok && !n.Implicit && sp.IncludeDeferred {
			out = append(out, n.Pool)
		}
	}
	return out
}

// rescheduleEntry handles a poke whose check is not met yet.
func (ps *pass) rescheduleEntry(le *state.Entry, ev *attempt.Ended) {
	ti := le.TI
	s := ti.Task.Sensor
	first := ti.StartDate
	if first.IsZero() {
		first = ev.Start
	}
	if !ev.End.Before(first.Add(s.Timeout)) {
		ps.sensorTimedOut(le, ev.End)
		return
	}
	pokes := le.Pokes + 1
	next := ev.End.Add(pokeInterval(s, pokes))
	if limit := first.Add(s.Timeout); next.After(limit) {
		next = limit
	}
	keep := ps.keptPools(le.Needs)
	ps.p.add(Reschedule{le.ID, keep, next})
	ps.st.Release(le.ID, keep...)
	le.State, le.NotBefore, le.Pokes = vocab.EntryWaiting, next, pokes
	le.Holder = ""
	le.Kept = le.Kept[:0]
	for _, n := range le.Needs {
		for _, k := range keep {
			if n.Pool == k {
				le.Kept = append(le.Kept, n)
			}
		}
	}
	ps.st.QueueDirty(le.ID)
	ti.State, ti.NextAt, ti.TryNumber = vocab.TaskUpForReschedule, next, le.TryNumber
	ti.StartDate, ti.EndDate = first, ev.End
	ps.st.Touch(ti)
}

// pokeInterval is the wait before poke n+1: poke_interval, doubled per poke with
// exponential_backoff, capped by max_wait.
func pokeInterval(s *dag.Sensor, pokes int) time.Duration {
	d := s.PokeInterval
	if s.ExponentialBackoff {
		for i := 1; i < pokes && d < 24*time.Hour; i++ {
			d *= 2
		}
	}
	if s.MaxWait > 0 && d > s.MaxWait {
		d = s.MaxWait
	}
	return d
}

// sensorTimedOut fails a sensor with no retry (or skips it with soft_fail) and releases every
// claim it holds, kept ones included.
func (ps *pass) sensorTimedOut(le *state.Entry, at time.Time) {
	ti, run := le.TI, le.Run
	s := ti.Task.Sensor
	reason := fmt.Sprintf("sensor timeout %s passed", s.Timeout)
	ps.p.add(EndEntry{le.ID, vocab.EntryDone, vocab.ReasonTimeout, reason})
	ps.st.Release(le.ID)
	ps.st.DropEntry(le)
	ti.EndDate = at
	if s.SoftFail {
		ti.State, ti.ReasonCode, ti.Reason, ti.NextAt = vocab.TaskSkipped, vocab.ReasonTimeout, reason, time.Time{}
		ps.addAttempt(&store.Attempt{Run: run.PK, TaskID: ti.TaskID, TryNumber: le.TryNumber,
			State: vocab.TaskSkipped, StartDate: ti.StartDate, EndDate: at, ReasonCode: vocab.ReasonTimeout, Reason: reason,
			Daemon: ps.cfg.DaemonID})
		ps.st.Touch(ti)
		return
	}
	ps.failAttempt(run, ti, le.TryNumber, vocab.ReasonTimeout, reason, at, true)
}

// sensorDue wakes reschedule sensors whose next poke came and times out those whose timeout
// passed while they waited.
func (ps *pass) sensorDue(ti *state.TI) {
	le := ti.Entry
	if le == nil || !state.IsReschedule(ti.Task) || ti.StartDate.IsZero() {
		return
	}
	if !ps.now.Before(ti.StartDate.Add(ti.Task.Sensor.Timeout)) && le.State == vocab.EntryWaiting {
		ps.sensorTimedOut(le, ps.now)
		return
	}
	if ti.State == vocab.TaskUpForReschedule && !ps.now.Before(ti.NextAt) {
		ti.State, ti.NextAt = vocab.TaskScheduled, time.Time{}
		ps.st.Touch(ti)
	}
}

// sensorWake is when a waiting reschedule sensor next needs the loop.
func sensorWake(ti *state.TI) time.Time {
	if ti.Entry == nil || !state.IsReschedule(ti.Task) || ti.StartDate.IsZero() {
		return time.Time{}
	}
	limit := ti.StartDate.Add(ti.Task.Sensor.Timeout)
	if ti.State == vocab.TaskUpForReschedule && ti.NextAt.Before(limit) {
		return ti.NextAt
	}
	return limit
}
