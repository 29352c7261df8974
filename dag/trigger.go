package dag

import (
	"github.com/poolflow/poolflow/vocab"
)

// Valid reports whether r is one of the twelve trigger rules of §3.2.
func (r TriggerRule) Valid() bool {
	switch r {
	case AllSuccess, AllFailed, AllDone, AllDoneMinOneSuccess, AllSkipped, OneSuccess, OneFailed,
		OneDone, NoneFailed, NoneFailedMinOneSuccess, NoneSkipped, Always:
		return true
	}
	return false
}

// UpstreamCounts tallies the upstream states the way Airflow's trigger_rule_dep does. A mapped
// upstream task adds its instances n at a time (Add), so a rule over 10,000 instances costs
// what one over a few states does.
type UpstreamCounts struct {
	total, done, success, skipped, failed, upstreamFailed int
}

// Add counts n upstream task instances in state s.
func (c *UpstreamCounts) Add(s vocab.TaskState, n int) {
	c.total += n
	if s.Terminal() {
		c.done += n
	}
	switch s {
	case vocab.TaskSuccess:
		c.success += n
	case vocab.TaskSkipped:
		c.skipped += n
	case vocab.TaskFailed:
		c.failed += n
	case vocab.TaskUpstreamFailed:
		c.upstreamFailed += n
	}
}

func countUpstream(upstream []vocab.TaskState) UpstreamCounts {
	var c UpstreamCounts
	for _, s := range upstream {
		c.Add(s, 1)
	}
	return c
}

// Trigger decides what happens to a task waiting on its upstream tasks (§3.2), as Airflow's
// trigger_rule_dep does with flag_upstream_failed: scheduled when the task may run, skipped or
// upstream_failed when its outcome is decided without running, and none while it must keep
// waiting. A task with no upstream, or with rule always, is scheduled. The one_* rules fire as
// soon as their condition holds, without waiting for the other upstream tasks; an unknown rule
// keeps the task waiting (Validate refuses it).
func Trigger(rule TriggerRule, upstream []vocab.TaskState) vocab.TaskState {
	return TriggerCounted(rule, countUpstream(upstream))
}

// TriggerCounted is Trigger over the upstream states already counted.
func TriggerCounted(rule TriggerRule, c UpstreamCounts) vocab.TaskState {
	if c.total == 0 || rule == Always {
		return vocab.TaskScheduled
	}
	allDone := c.done >= c.total
	anyFailed := c.failed > 0 || c.upstreamFailed > 0

	// First the outcomes decided without running (Airflow sets these states even while
	// other upstream tasks still run), then whether the rule is met.
	switch rule {
	case AllSuccess:
		switch {
		case anyFailed:
			return vocab.TaskUpstreamFailed
		case c.skipped > 0:
			return vocab.TaskSkipped
		}
		return when(c.success == c.total)
	case AllFailed:
		if c.success > 0 || c.skipped > 0 {
			return vocab.TaskSkipped
		}
		return when(c.failed+c.upstreamFailed == c.total)
	case AllDone:
		return when(allDone)
	case AllDoneMinOneSuccess:
		// Airflow does not count skipped upstream tasks as done for this rule: one skip
		// skips the task at once.
		switch {
		case c.skipped > 0:
			return vocab.TaskSkipped
		case allDone && c.success == 0:
			return vocab.TaskUpstreamFailed
		}
		return when(allDone)
	case AllSkipped:
		if c.success > 0 || anyFailed {
			return vocab.TaskSkipped
		}
		return when(c.skipped == c.total)
	case OneSuccess:
		switch {
		case allDone && c.skipped == c.done:
			return vocab.TaskSkipped
		case allDone && c.success == 0:
			return vocab.TaskUpstreamFailed
		}
		return when(c.success > 0)
	case OneFailed:
		if allDone && !anyFailed {
			return vocab.TaskSkipped
		}
		return when(anyFailed)
	case OneDone:
		if allDone && c.failed == 0 && c.success == 0 {
			return vocab.TaskSkipped
		}
		return when(c.success+c.failed > 0)
	case NoneFailed:
		if anyFailed {
			return vocab.TaskUpstreamFailed
		}
		return when(c.success+c.skipped == c.total)
	case NoneFailedMinOneSuccess:
		switch {
		case anyFailed:
			return vocab.TaskUpstreamFailed
		case c.skipped == c.total:
			return vocab.TaskSkipped
		}
		return when(c.success+c.skipped == c.total)
	case NoneSkipped:
		if c.skipped > 0 {
			return vocab.TaskSkipped
		}
		return when(allDone)
	}
	return vocab.TaskNone
}

func when(met bool) vocab.TaskState {
	if met {
		return vocab.TaskScheduled
	}
	return vocab.TaskNone
}

// RunEndState tells whether a DAG run has ended, and how (§3.1): it has ended when every task is
// in a terminal state (a task missing from states has not started), and then it failed if any
// leaf task (one nothing depends on) is failed or upstream_failed, else it succeeded. A run
// that has not ended is running.
func RunEndState(d *DAG, states map[string]vocab.TaskState) (ended bool, state vocab.RunState) {
	for _, t := range d.Tasks {
		if !states[t.ID].Terminal() {
			return false, vocab.RunRunning
		}
	}
	hasDownstream := make(map[string]bool, len(d.Tasks))
	for _, t := range d.Tasks {
		for _, up := range t.DependsOn {
			hasDownstream[up] = true
		}
	}
	for _, t := range d.Tasks {
		if hasDownstream[t.ID] {
			continue
		}
		if s := states[t.ID]; s == vocab.TaskFailed || s == vocab.TaskUpstreamFailed {
			return true, vocab.RunFailed
		}
	}
	return true, vocab.RunSuccess
}
