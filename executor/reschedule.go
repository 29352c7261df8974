package executor

import (
	"fmt"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// A reschedule sensor (§5.1) is admitted once per poke. Between pokes it is up_for_reschedule:
// its entry waits again with the same queue ID, try number and due time, not before its next
// poke, and keeps only its claims in pools with include_deferred: true. Its timeout counts from
// its first poke, also while it waits for admission.

func isReschedule(t *dag.Task) bool {
	return t != nil && t.Kind == dag.KindSensor && t.Sensor != nil && t.Sensor.Mode == dag.ModeReschedule
}

// keptPools are the pools whose claims a reschedule sensor keeps between pokes.
func (l *loop) keptPools(needs []store.Requirement) []string {
	var out []string
	for _, n := range needs {
		if sp, ok := l.pools[n.Pool]; ok && !n.Implicit && sp.IncludeDeferred {
			out = append(out, n.Pool)
		}
	}
	return out
}

// rescheduleEntry handles a poke whose check is not met yet.
func (l *loop) rescheduleEntry(tx store.Tx, p *passState, le *liveEntry, ev *evFinished) error {
	ti := le.ti
	s := ti.task.Sensor
	first := ti.StartDate
	if first.IsZero() {
		first = ev.start
	}
	if !ev.end.Before(first.Add(s.Timeout)) {
		return l.sensorTimedOut(tx, p, le, ev.end)
	}
	pokes := le.pokes + 1
	next := ev.end.Add(pokeInterval(s, pokes))
	if limit := first.Add(s.Timeout); next.After(limit) {
		next = limit
	}
	keep := l.keptPools(le.Needs)
	if err := tx.Reschedule(le.ID, keep, next); err != nil {
		return err
	}
	le.State, le.NotBefore, le.pokes = vocab.EntryWaiting, next, pokes
	le.kept = le.kept[:0]
	for _, n := range le.Needs {
		for _, k := range keep {
			if n.Pool == k {
				le.kept = append(le.kept, n)
			}
		}
	}
	l.queueDirty(le.ID)
	ti.State, ti.NextAt, ti.TryNumber = vocab.TaskUpForReschedule, next, le.TryNumber
	ti.StartDate, ti.EndDate = first, ev.end
	l.touch(p, ti)
	return nil
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
func (l *loop) sensorTimedOut(tx store.Tx, p *passState, le *liveEntry, at time.Time) error {
	ti, run := le.ti, le.run
	s := ti.task.Sensor
	reason := fmt.Sprintf("sensor timeout %s passed", s.Timeout)
	if err := tx.EndEntry(le.ID, vocab.EntryDone, vocab.ReasonTimeout, reason, p.now); err != nil {
		return err
	}
	l.dropEntry(le.ID)
	ti.entry = nil
	ti.EndDate = at
	if s.SoftFail {
		ti.State, ti.ReasonCode, ti.Reason, ti.NextAt = vocab.TaskSkipped, vocab.ReasonTimeout, reason, time.Time{}
		if err := tx.InsertAttempt(&store.Attempt{Run: run.PK, TaskID: ti.TaskID, TryNumber: le.TryNumber,
			State: vocab.TaskSkipped, StartDate: ti.StartDate, EndDate: at, ReasonCode: vocab.ReasonTimeout, Reason: reason,
			Daemon: l.cfg.DaemonID}); err != nil {
			return err
		}
		l.touch(p, ti)
		return nil
	}
	return l.failAttempt(tx, p, run, ti, le.TryNumber, vocab.ReasonTimeout, reason, at, true)
}

// sensorDue wakes reschedule sensors whose next poke came and times out those whose timeout
// passed while they waited.
func (l *loop) sensorDue(tx store.Tx, p *passState, run *liveRun, ti *liveTI) error {
	le := ti.entry
	if le == nil || !isReschedule(ti.task) || ti.StartDate.IsZero() {
		return nil
	}
	if !p.now.Before(ti.StartDate.Add(ti.task.Sensor.Timeout)) && le.State == vocab.EntryWaiting {
		return l.sensorTimedOut(tx, p, le, p.now)
	}
	if ti.State == vocab.TaskUpForReschedule && !p.now.Before(ti.NextAt) {
		ti.State, ti.NextAt = vocab.TaskScheduled, time.Time{}
		l.touch(p, ti)
		return nil
	}
	return nil
}

// sensorWake is when a waiting reschedule sensor next needs the loop.
func sensorWake(ti *liveTI) time.Time {
	if ti.entry == nil || !isReschedule(ti.task) || ti.StartDate.IsZero() {
		return time.Time{}
	}
	limit := ti.StartDate.Add(ti.task.Sensor.Timeout)
	if ti.State == vocab.TaskUpForReschedule && ti.NextAt.Before(limit) {
		return ti.NextAt
	}
	return limit
}

// admission view of a re-poking sensor: only the pools it still needs, with its kept claims.
func (le *liveEntry) remaining() (needs, kept []store.Requirement) {
	if len(le.kept) == 0 {
		return le.Needs, nil
	}
	for _, n := range le.Needs {
		held := false
		for _, k := range le.kept {
			held = held || k.Pool == n.Pool
		}
		if !held {
			needs = append(needs, n)
		}
	}
	return needs, le.kept
}

func requirementsToNeeds(rs []store.Requirement) []pools.Need {
	out := make([]pools.Need, len(rs))
	for i, r := range rs {
		out[i] = pools.Need{Pool: r.Pool, Slots: r.Slots}
	}
	return out
}
