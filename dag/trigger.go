package dag

// Valid reports whether r is one of the twelve trigger rules of §3.2.
func (r TriggerRule) Valid() bool {
	switch r {
	case AllSuccess, AllFailed, AllDone, AllDoneMinOneSuccess, AllSkipped, OneSuccess, OneFailed,
		OneDone, NoneFailed, NoneFailedMinOneSuccess, NoneSkipped, Always:
		return true
	}
	return false
}

// upstreamCounts tallies the upstream states the way Airflow's trigger_rule_dep does.
type upstreamCounts struct {
	total, done, success, skipped, failed, upstreamFailed int
}

func countUpstream(upstream []State) upstreamCounts {
	c := upstreamCounts{total: len(upstream)}
	for _, s := range upstream {
		if s.Terminal() {
			c.done++
		}
		switch s {
		case StateSuccess:
			c.success++
		case StateSkipped:
			c.skipped++
		case StateFailed:
			c.failed++
		case StateUpstreamFailed:
			c.upstreamFailed++
		}
	}
	return c
}

// Trigger decides what happens to a task waiting on its upstream tasks (§3.2), as Airflow's
// trigger_rule_dep does with flag_upstream_failed: StateScheduled when the task may run,
// StateSkipped or StateUpstreamFailed when its outcome is decided without running, and
// StateNone while it must keep waiting. A task with no upstream, or with rule always, is
// StateScheduled. The one_* rules fire as soon as their condition holds, without waiting for the
// other upstream tasks; an unknown rule keeps the task waiting (Validate refuses it).
func Trigger(rule TriggerRule, upstream []State) State {
	if len(upstream) == 0 || rule == Always {
		return StateScheduled
	}
	c := countUpstream(upstream)
	allDone := c.done >= c.total
	anyFailed := c.failed > 0 || c.upstreamFailed > 0

	// First the outcomes decided without running (Airflow sets these states even while
	// other upstream tasks still run), then whether the rule is met.
	switch rule {
	case AllSuccess:
		switch {
		case anyFailed:
			return StateUpstreamFailed
		case c.skipped > 0:
			return StateSkipped
		}
		return when(c.success == c.total)
	case AllFailed:
		if c.success > 0 || c.skipped > 0 {
			return StateSkipped
		}
		return when(c.failed+c.upstreamFailed == c.total)
	case AllDone:
		return when(allDone)
	case AllDoneMinOneSuccess:
		// Airflow does not count skipped upstream tasks as done for this rule: one skip
		// skips the task at once.
		switch {
		case c.skipped > 0:
			return StateSkipped
		case allDone && c.success == 0:
			return StateUpstreamFailed
		}
		return when(allDone)
	case AllSkipped:
		if c.success > 0 || anyFailed {
			return StateSkipped
		}
		return when(c.skipped == c.total)
	case OneSuccess:
		switch {
		case allDone && c.skipped == c.done:
			return StateSkipped
		case allDone && c.success == 0:
			return StateUpstreamFailed
		}
		return when(c.success > 0)
	case OneFailed:
		if allDone && !anyFailed {
			return StateSkipped
		}
		return when(anyFailed)
	case OneDone:
		if allDone && c.failed == 0 && c.success == 0 {
			return StateSkipped
		}
		return when(c.success+c.failed > 0)
	case NoneFailed:
		if anyFailed {
			return StateUpstreamFailed
		}
		return when(c.success+c.skipped == c.total)
	case NoneFailedMinOneSuccess:
		switch {
		case anyFailed:
			return StateUpstreamFailed
		case c.skipped == c.total:
			return StateSkipped
		}
		return when(c.success+c.skipped == c.total)
	case NoneSkipped:
		if c.skipped > 0 {
			return StateSkipped
		}
		return when(allDone)
	}
	return StateNone
}

func when(met bool) State {
	if met {
		return StateScheduled
	}
	return StateNone
}

// RunEndState tells whether a DAG run has ended, and how (§3.1): it has ended when every task is
// in a terminal state (a task missing from states has not started), and then it failed if any
// leaf task (one nothing depends on) is failed or upstream_failed, else it succeeded. A run
// that has not ended is RunRunning.
func RunEndState(d *DAG, states map[string]State) (ended bool, state RunState) {
	for _, t := range d.Tasks {
		if !states[t.ID].Terminal() {
			return false, RunRunning
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
		if s := states[t.ID]; s == StateFailed || s == StateUpstreamFailed {
			return true, RunFailed
		}
	}
	return true, RunSuccess
}
