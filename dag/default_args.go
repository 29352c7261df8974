package dag

import (
	"maps"
	"slices"
)

// inherit fills the fields ts does not set from default_args (§2.1). Pool fields go as a
// group: a task that declares its requirements in one form takes none of the other form.
func (r *reader) inherit(ts, def *taskSpec) {
	ownReq := ts.set["pool_requirements"]
	ownLegacy := ts.set["pool"] || ts.set["pool_slots"]
	for _, f := range slices.Sorted(maps.Keys(def.set)) {
		switch {
		case ts.set[f]:
			continue
		case ts.t.Approval != nil && approvalSkips[f]:
			continue
		case f == "pool_requirements" && ownLegacy:
			continue
		case (f == "pool" || f == "pool_slots") && ownReq:
			continue
		}
		copyTaskField(ts, def, f)
		ts.set[f] = true
		r.src.copyField(def.idx, ts.idx, f)
	}
}

// copyTaskField copies one default_args field into a task.
func copyTaskField(dst, src *taskSpec, f string) {
	d, s := &dst.t, &src.t
	switch f {
	case "env":
		d.Env = maps.Clone(s.Env)
	case "workdir":
		d.Workdir = s.Workdir
	case "trigger_rule":
		d.TriggerRule = s.TriggerRule
	case "retries":
		d.Retries = s.Retries
	case "retry_delay":
		d.RetryDelay = s.RetryDelay
		d.explicit |= s.explicit & explicitRetryDelay
	case "retry_exponential_backoff":
		d.RetryExponentialBackoff = s.RetryExponentialBackoff
	case "max_retry_delay":
		d.MaxRetryDelay = s.MaxRetryDelay
	case "execution_timeout":
		d.ExecutionTimeout = s.ExecutionTimeout
	case "queue_timeout":
		d.QueueTimeout = s.QueueTimeout
	case "pool_requirements":
		d.PoolRequirements = maps.Clone(s.PoolRequirements)
	case "pool":
		dst.pool = src.pool
	case "pool_slots":
		dst.poolSlots = src.poolSlots
	case "priority_weight":
		d.PriorityWeight = s.PriorityWeight
		d.explicit |= s.explicit & explicitPriorityWeight
	case "weight_rule":
		d.WeightRule = s.WeightRule
	case "max_active_tis_per_dag":
		d.MaxActiveTIsPerDAG = s.MaxActiveTIsPerDAG
	case "max_active_tis_per_dagrun":
		d.MaxActiveTIsPerDAGRun = s.MaxActiveTIsPerDAGRun
	}
}
