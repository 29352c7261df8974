package dag

import (
	"maps"

	"github.com/goccy/go-yaml/ast"
)

// taskSpec is a task mapping (or default_args, or the top level of a job) as read, before
// default_args are merged in and the pool fields are turned into requirements.
type taskSpec struct {
	t   Task
	idx int // sourceMap task index
	// set holds the fields the mapping gives a non-null value, even one that failed to decode,
	// so that default_args never fill in a field the author did write.
	set       map[string]bool
	pool      string
	poolSlots int
}

// Field sets of the three kinds of task mappings.
var (
	taskFields = fieldSet(
		"id", "depends_on", "command", "bash", "sensor", "approval", "env", "workdir",
		"trigger_rule", "retries", "retry_delay", "retry_exponential_backoff", "max_retry_delay",
		"execution_timeout", "queue_timeout", "pool_requirements", "pool", "pool_slots",
		"priority_weight", "weight_rule", "max_active_tis_per_dag", "max_active_tis_per_dagrun",
	)
	// defaultArgFields are the task fields default_args may give: not the identity, the
	// dependencies or what the task runs.
	defaultArgFields = without(taskFields, "id", "depends_on", "command", "bash", "sensor", "approval")
	// jobFields are the task fields at the top level of a job (§2.1).
	jobFields = with(without(taskFields, "id", "depends_on", "sensor", "approval"), "queue_priority")
	// approvalSkips are the default_args an approval gate does not take (§5.2): it is never
	// retried, has no process to time out and needs no pool, explicit or implicit.
	approvalSkips = fieldSet(
		"retries", "retry_delay", "retry_exponential_backoff", "max_retry_delay",
		"execution_timeout", "queue_timeout", "pool_requirements", "pool", "pool_slots",
		"max_active_tis_per_dag", "max_active_tis_per_dagrun",
	)
)

func fieldSet(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func without(m map[string]bool, names ...string) map[string]bool {
	out := maps.Clone(m)
	for _, n := range names {
		delete(out, n)
	}
	return out
}

func with(m map[string]bool, names ...string) map[string]bool {
	out := maps.Clone(m)
	for _, n := range names {
		out[n] = true
	}
	return out
}

func isNull(r *reader, n ast.Node) bool { return r.peek(n) == nil }

// readTask decodes the entries of a task mapping. Entries whose key is not in allowed are
// reported as unknown fields. base is where the task's fields are recorded.
func (r *reader) readTask(es []entry, base at, allowed map[string]bool) *taskSpec {
	ts := &taskSpec{idx: base.task, set: map[string]bool{}}
	t := &ts.t
	for _, e := range es {
		a := base.child(e.key)
		if !allowed[e.key] {
			r.fail(e.keyN, a, e.key, "unknown field")
			continue
		}
		r.record(a.key(), e.keyN)
		r.record(a, e.value)
		if isNull(r, e.value) && e.key != "approval" {
			continue
		}
		ts.set[e.key] = true
		switch e.key {
		case "id":
			t.ID, _ = r.str(e.value, a)
		case "depends_on":
			t.DependsOn = r.dependsOn(e.value, a)
		case "command":
			t.Command = r.argv(e.value, a)
		case "bash":
			t.Bash, _ = r.str(e.value, a)
		case "sensor":
			t.Sensor = r.readSensor(e.value, a)
		case "approval":
			t.Approval = r.readApproval(e.value, a)
		case "env":
			t.Env = r.env(e.value, a)
		case "workdir":
			t.Workdir, _ = r.str(e.value, a)
		case "trigger_rule":
			s, _ := r.str(e.value, a)
			t.TriggerRule = TriggerRule(s)
		case "retries":
			t.Retries, _ = r.integer(e.value, a)
		case "retry_delay":
			t.RetryDelay, _ = r.duration(e.value, a)
			t.explicit |= explicitRetryDelay
		case "retry_exponential_backoff":
			t.RetryExponentialBackoff, _ = r.boolean(e.value, a)
		case "max_retry_delay":
			t.MaxRetryDelay, _ = r.duration(e.value, a)
		case "execution_timeout":
			t.ExecutionTimeout, _ = r.duration(e.value, a)
		case "queue_timeout":
			t.QueueTimeout, _ = r.duration(e.value, a)
		case "pool_requirements":
			t.PoolRequirements, _ = r.intMap(e.value, a)
		case "pool":
			ts.pool, _ = r.str(e.value, a)
		case "pool_slots":
			ts.poolSlots, _ = r.integer(e.value, a)
		case "priority_weight", "queue_priority":
			t.PriorityWeight, _ = r.integer(e.value, a)
			t.explicit |= explicitPriorityWeight
		case "weight_rule":
			t.WeightRule, _ = r.str(e.value, a)
		case "max_active_tis_per_dag":
			t.MaxActiveTIsPerDAG, _ = r.integer(e.value, a)
		case "max_active_tis_per_dagrun":
			t.MaxActiveTIsPerDAGRun, _ = r.integer(e.value, a)
		}
	}
	if ts.set["pool"] && ts.set["pool_requirements"] {
		r.failAt(r.src.at(base.task, joinPath(base.path, "pool")+keySuffix), base.child("pool"), ts.pool,
			"pool_requirements and pool both set; use one")
	}
	if ts.set["queue_priority"] && ts.set["priority_weight"] {
		r.failAt(r.src.at(base.task, joinPath(base.path, "queue_priority")+keySuffix), base.child("queue_priority"), "",
			"queue_priority is an alias of priority_weight; set one")
	}
	return ts
}

// dependsOn reads a list of task ids; a single id may be written without brackets.
func (r *reader) dependsOn(n ast.Node, a at) []string {
	if s, isScalar := scalarString(r.peek(n)); isScalar {
		r.record(a.index(0), n)
		return []string{s}
	}
	l, _ := r.strList(n, a)
	return l
}

// argv reads a command line as a list; a string is refused because poolflow never splits a
// command line itself (that is what bash: is for).
func (r *reader) argv(n ast.Node, a at) []string {
	if s, isScalar := scalarString(r.peek(n)); isScalar {
		r.fail(n, a, s, "expected a list of strings (argv); use bash: for a shell command line")
		return nil
	}
	l, ok := r.strList(n, a)
	if ok && l == nil {
		l = []string{}
	}
	return l
}

func (r *reader) env(n ast.Node, a at) map[string]string {
	m, _ := r.strMap(n, a)
	return m
}

// finish turns the legacy pool + pool_slots into requirements (exactly {pool: pool_slots},
// §4.2) and returns the task; ts is not used after.
func (r *reader) finish(ts *taskSpec, base at) *Task {
	t := &ts.t
	src := r.src
	switch {
	case ts.set["pool_slots"] && !ts.set["pool"]:
		r.failOnce(ts.idx, base.child("pool_slots"), "", "pool_slots without pool")
	case ts.set["pool"] && !ts.set["pool_requirements"]:
		poolPath, slotsPath := joinPath(base.path, "pool"), joinPath(base.path, "pool_slots")
		if src.isBad(ts.idx, poolPath) || src.isBad(ts.idx, slotsPath) {
			src.markBad(ts.idx, "pool_requirements")
			break
		}
		slots := 1
		if ts.set["pool_slots"] {
			slots = ts.poolSlots
		}
		t.PoolRequirements = map[string]int{ts.pool: slots}
		// Checks run on pool_requirements; point them at what the author wrote.
		req := "pool_requirements." + ts.pool
		src.put(ts.idx, "pool_requirements", src.at(ts.idx, poolPath))
		src.put(ts.idx, req+keySuffix, src.at(ts.idx, poolPath))
		src.setName(ts.idx, "pool_requirements", "pool")
		src.setName(ts.idx, req+keySuffix, "pool")
		if src.fromDefaults(ts.idx, poolPath) {
			src.setInherited(ts.idx, "pool_requirements")
		}
		if ts.set["pool_slots"] {
			src.put(ts.idx, req, src.at(ts.idx, slotsPath))
			src.setName(ts.idx, req, "pool_slots")
		} else {
			src.put(ts.idx, req, src.at(ts.idx, poolPath))
			src.setName(ts.idx, req, "pool")
		}
	}
	if len(t.PoolRequirements) == 0 && !src.isBad(ts.idx, "pool_requirements") {
		// pool_requirements: {} declares nothing; rules then apply as for an unset field.
		t.PoolRequirements = nil
	}
	// A copy, so that the spec and its set of fields are garbage once the task is built (at
	// 100,000 tasks they held 53 MB).
	task := *t
	return &task
}
