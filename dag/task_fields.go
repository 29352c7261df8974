package dag

import (
	"maps"
	"time"

	"go.yaml.in/yaml/v3"
)

// taskFields is the one table of task fields (SPEC §2.1). It drives the unknown-field check of
// tasks, default_args and jobs, default_args inheritance, what an approval gate does not take
// from default_args, the task fingerprint and the field list of docs/design.md
// (TestDesignDocListsTaskFields). Adding a field is a field of Task (model.go), a row here and,
// when its values need a check beyond their type, a line of Validate: see dag/doc.go.
var taskFields = []taskField{
	field("id", inTask, "ID", (*reader).str, func(s *taskSpec) *string { return &s.t.ID }),
	modelOnly("Kind", func(s *taskSpec) *Kind { return &s.t.Kind }),
	field("depends_on", inTask, "DependsOn", (*reader).ids, func(s *taskSpec) *[]string { return &s.t.DependsOn }),
	field("command", inTask|inJob, "Command", (*reader).argv, func(s *taskSpec) *[]string { return &s.t.Command }),
	field("bash", inTask|inJob, "Bash", (*reader).str, func(s *taskSpec) *string { return &s.t.Bash }),
	field("sensor", inTask, "Sensor", (*reader).sensor, func(s *taskSpec) **Sensor { return &s.t.Sensor }),
	// approval: with no value is a gate with no timeout.
	field("approval", inTask|nullSets, "Approval", (*reader).approval, func(s *taskSpec) **Approval { return &s.t.Approval }),
	field("env", all, "Env", (*reader).strMap, func(s *taskSpec) *map[string]string { return &s.t.Env }),
	field("workdir", all, "Workdir", (*reader).str, func(s *taskSpec) *string { return &s.t.Workdir }),
	field("trigger_rule", all, "TriggerRule", (*reader).triggerRule, func(s *taskSpec) *TriggerRule { return &s.t.TriggerRule }),
	field("retries", all|notApproval, "Retries", (*reader).integer, func(s *taskSpec) *int { return &s.t.Retries }),
	field("retry_delay", all|notApproval, "RetryDelay", (*reader).duration, func(s *taskSpec) *time.Duration { return &s.t.RetryDelay }).
		explicitly(explicitRetryDelay),
	field("retry_exponential_backoff", all|notApproval, "RetryExponentialBackoff", (*reader).boolean,
		func(s *taskSpec) *bool { return &s.t.RetryExponentialBackoff }),
	field("max_retry_delay", all|notApproval, "MaxRetryDelay", (*reader).duration, func(s *taskSpec) *time.Duration { return &s.t.MaxRetryDelay }),
	field("execution_timeout", all|notApproval, "ExecutionTimeout", (*reader).duration, func(s *taskSpec) *time.Duration { return &s.t.ExecutionTimeout }),
	field("queue_timeout", all|notApproval, "QueueTimeout", (*reader).duration, func(s *taskSpec) *time.Duration { return &s.t.QueueTimeout }),
	// A requirement with a template in its name or slots goes to PoolTemplates (§14).
	{name: "pool_requirements", use: all | notApproval, fp: "PoolRequirements",
		decode: func(r *reader, n *yaml.Node, a at, s *taskSpec) {
			s.t.PoolRequirements, s.t.PoolTemplates, _ = r.requirements(n, a)
		},
		copy: func(dst, src *taskSpec) {
			dst.t.PoolRequirements, dst.t.PoolTemplates = maps.Clone(src.t.PoolRequirements), maps.Clone(src.t.PoolTemplates)
		},
		value: func(s *taskSpec) any { return &s.t.PoolRequirements }},
	modelOnly("PoolTemplates,omitempty", func(s *taskSpec) *map[string]string { return &s.t.PoolTemplates }),
	// The legacy form of pool_requirements (§4.2), turned into it by finish.
	field("pool", all|notApproval, "", (*reader).str, func(s *taskSpec) *string { return &s.pool }),
	field("pool_slots", all|notApproval, "", (*reader).integer, func(s *taskSpec) *int { return &s.poolSlots }),
	field("priority_weight", all, "PriorityWeight", (*reader).integer, func(s *taskSpec) *int { return &s.t.PriorityWeight }).
		explicitly(explicitPriorityWeight),
	field("weight_rule", all, "WeightRule", (*reader).str, func(s *taskSpec) *string { return &s.t.WeightRule }),
	field("max_active_tis_per_dag", all|notApproval, "MaxActiveTIsPerDAG", (*reader).integer,
		func(s *taskSpec) *int { return &s.t.MaxActiveTIsPerDAG }),
	field("max_active_tis_per_dagrun", all|notApproval, "MaxActiveTIsPerDAGRun", (*reader).integer,
		func(s *taskSpec) *int { return &s.t.MaxActiveTIsPerDAGRun }),
	// Handlers (§13): they change who is told, not how the task runs, so not the fingerprint.
	// A job's top-level on_failure and on_success are its DAG's (once per run).
	field("on_failure", inTask|inDefaults, "", (*reader).ids, func(s *taskSpec) *[]string { return &s.t.handlers().OnFailure }),
	field("on_success", inTask|inDefaults, "", (*reader).ids, func(s *taskSpec) *[]string { return &s.t.handlers().OnSuccess }),
	field("on_retry", all, "", (*reader).ids, func(s *taskSpec) *[]string { return &s.t.handlers().OnRetry }),
	field("on_queue_wait", all, "", (*reader).queueWait, func(s *taskSpec) **QueueWait { return &s.t.handlers().OnQueueWait }),
	field("expand", inTask, "Expand,omitempty", (*reader).expand, func(s *taskSpec) **Expand { return &s.t.Expand }),
	field("max_map_length", all|notApproval, "MaxMapLength,omitempty", (*reader).integer,
		func(s *taskSpec) *int { return &s.t.MaxMapLength }),
	// A job's alias of priority_weight (§2.1).
	field("queue_priority", inJob, "", (*reader).integer, func(s *taskSpec) *int { return &s.t.PriorityWeight }).
		explicitly(explicitPriorityWeight),
}

// fieldUse says where a task field may be written and how it is inherited.
type fieldUse uint8

const (
	inTask      fieldUse = 1 << iota // an item of tasks
	inDefaults                       // default_args, for every task that does not set it
	inJob                            // the top level of a job
	notApproval                      // an approval gate does not take it from default_args (§5.2)
	nullSets                         // a null value sets the field (to its zero value)

	all = inTask | inDefaults | inJob
)

// taskField is one row of taskFields.
type taskField struct {
	name     string // "" for a part of the model not written in YAML (the kind)
	use      fieldUse
	fp       string // its key in Fingerprint; "" when not part of it
	explicit explicitFields
	bit      uint64 // 1 << its index in taskFields
	decode   func(r *reader, n *yaml.Node, a at, s *taskSpec)
	copy     func(dst, src *taskSpec)
	value    func(s *taskSpec) any // a pointer to where the value is kept
}

// field makes a row whose value of type V is read by read and kept where ptr says.
func field[V any](name string, use fieldUse, fp string, read func(*reader, *yaml.Node, at) (V, bool), ptr func(*taskSpec) *V) taskField {
	return taskField{
		name: name, use: use, fp: fp,
		decode: func(r *reader, n *yaml.Node, a at, s *taskSpec) { *ptr(s), _ = read(r, n, a) },
		copy:   func(dst, src *taskSpec) { *ptr(dst) = clone(*ptr(src)) },
		value:  func(s *taskSpec) any { return ptr(s) },
	}
}

func modelOnly[V any](fp string, ptr func(*taskSpec) *V) taskField {
	return taskField{fp: fp, value: func(s *taskSpec) any { return ptr(s) }}
}

// explicitly marks a field whose zero value, when written, is kept rather than defaulted.
func (f taskField) explicitly(e explicitFields) taskField { f.explicit = e; return f }

// clone copies a value for another task: maps are not shared.
func clone[V any](v V) V {
	switch m := any(v).(type) {
	case map[string]string:
		return any(maps.Clone(m)).(V)
	case map[string]int:
		return any(maps.Clone(m)).(V)
	}
	return v
}

// taskFieldByName indexes taskFields, and numbers them for taskSpec.set.
var taskFieldByName = func() map[string]*taskField {
	if len(taskFields) > 64 {
		panic("dag: taskSpec.set has room for 64 task fields")
	}
	m := make(map[string]*taskField, len(taskFields))
	for i := range taskFields {
		f := &taskFields[i]
		f.bit = 1 << i
		if f.name != "" {
			m[f.name] = f
		}
	}
	return m
}()

// has reports whether the mapping gave field name a value.
func (s *taskSpec) has(name string) bool { return s.set&taskFieldByName[name].bit != 0 }

// taskSpec is a task mapping (or default_args, or the top level of a job) as read, before
// default_args are merged in and the pool fields are turned into requirements.
type taskSpec struct {
	t   Task
	idx int // sourceMap task index
	// set holds the fields the mapping gives a non-null value, even one that failed to decode,
	// so that default_args never fill in a field the author did write: bit i is taskFields[i].
	set       uint64
	pool      string
	poolSlots int
}

// readTask decodes the entries of a task mapping written where use says (a task, default_args
// or a job). base is where the task's fields are recorded.
func (r *reader) readTask(es []entry, base at, use fieldUse) *taskSpec {
	ts := &taskSpec{idx: base.task}
	for _, e := range es {
		a := base.child(e.key)
		f := taskFieldByName[e.key]
		if f == nil || f.use&use == 0 {
			r.fail(e.keyN, a, e.key, "unknown field")
			continue
		}
		r.recordKey(a, e.keyN)
		r.record(a, e.value)
		if f.use&nullSets == 0 && r.peek(e.value) == nil {
			continue
		}
		ts.set |= f.bit
		f.decode(r, e.value, a, ts)
		ts.t.explicit |= f.explicit
	}
	if ts.has("pool") && ts.has("pool_requirements") {
		r.failAt(r.src.at(base.task, joinPath(base.path, "pool")+keySuffix), base.child("pool"), ts.pool,
			"pool_requirements and pool both set; use one")
	}
	if ts.has("queue_priority") && ts.has("priority_weight") {
		r.failAt(r.src.at(base.task, joinPath(base.path, "queue_priority")+keySuffix), base.child("queue_priority"), "",
			"queue_priority is an alias of priority_weight; set one")
	}
	return ts
}

// inherit fills the fields ts does not set from default_args (§2.1). Pool fields go as a
// group: a task that declares its requirements in one form takes none of the other form.
func (r *reader) inherit(ts, def *taskSpec) {
	ownReq := ts.has("pool_requirements")
	ownLegacy := ts.has("pool") || ts.has("pool_slots")
	for i := range taskFields {
		f := &taskFields[i]
		switch {
		case def.set&f.bit == 0 || ts.set&f.bit != 0:
			continue
		case ts.t.Approval != nil && f.use&notApproval != 0:
			continue
		case f.name == "pool_requirements" && ownLegacy:
			continue
		case (f.name == "pool" || f.name == "pool_slots") && ownReq:
			continue
		}
		f.copy(ts, def)
		ts.t.explicit |= def.t.explicit & f.explicit
		ts.set |= f.bit
		r.src.copyField(def.idx, ts.idx, f.name)
	}
}

// finish turns the legacy pool + pool_slots into requirements (exactly {pool: pool_slots},
// §4.2) and returns the task; ts is not used after.
func (r *reader) finish(ts *taskSpec, base at) *Task {
	t := &ts.t
	src := r.src
	switch {
	case ts.has("pool_slots") && !ts.has("pool"):
		r.failOnce(ts.idx, base.child("pool_slots"), "", "pool_slots without pool")
	case ts.has("pool") && !ts.has("pool_requirements"):
		poolPath, slotsPath := joinPath(base.path, "pool"), joinPath(base.path, "pool_slots")
		if src.isBad(ts.idx, poolPath) || src.isBad(ts.idx, slotsPath) {
			src.markBad(ts.idx, "pool_requirements")
			break
		}
		slots := 1
		if ts.has("pool_slots") {
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
		if ts.has("pool_slots") {
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

func (r *reader) triggerRule(n *yaml.Node, a at) (TriggerRule, bool) {
	s, ok := r.str(n, a)
	return TriggerRule(s), ok
}

// subField is a field of a mapping inside a task (a sensor, its http check, an approval).
type subField[T any] struct {
	name string
	read func(r *reader, n *yaml.Node, a at, dst *T)
}

func sub[T, V any](name string, read func(*reader, *yaml.Node, at) (V, bool), ptr func(*T) *V) subField[T] {
	return subField[T]{name, func(r *reader, n *yaml.Node, a at, dst *T) { *ptr(dst), _ = read(r, n, a) }}
}

// Fields of a sensor, of its http check and of an approval (§2.1).
var (
	sensorFields = []subField[Sensor]{
		sub("command", (*reader).argv, func(s *Sensor) *[]string { return &s.Command }),
		sub("file_exists", (*reader).str, func(s *Sensor) *string { return &s.FileExists }),
		sub("http", (*reader).http, func(s *Sensor) **HTTPCheck { return &s.HTTP }),
		sub("mode", (*reader).str, func(s *Sensor) *string { return &s.Mode }),
		sub("poke_interval", (*reader).positiveDuration, func(s *Sensor) *time.Duration { return &s.PokeInterval }),
		sub("timeout", (*reader).positiveDuration, func(s *Sensor) *time.Duration { return &s.Timeout }),
		sub("soft_fail", (*reader).boolean, func(s *Sensor) *bool { return &s.SoftFail }),
		sub("exponential_backoff", (*reader).boolean, func(s *Sensor) *bool { return &s.ExponentialBackoff }),
		sub("max_wait", (*reader).duration, func(s *Sensor) *time.Duration { return &s.MaxWait }),
	}
	httpFields = []subField[HTTPCheck]{
		sub("url", (*reader).str, func(h *HTTPCheck) *string { return &h.URL }),
		sub("status", (*reader).integer, func(h *HTTPCheck) *int { return &h.Status }),
	}
	approvalFields = []subField[Approval]{
		sub("timeout", (*reader).duration, func(ap *Approval) *time.Duration { return &ap.Timeout }),
	}
)

// readFields decodes mapping n into dst by fields; other keys are unknown fields.
func readFields[T any](r *reader, n *yaml.Node, base at, fields []subField[T], dst *T) {
	es, _ := r.mapping(n, base)
	for _, e := range es {
		a := base.child(e.key)
		i := 0
		for i < len(fields) && fields[i].name != e.key {
			i++
		}
		if i == len(fields) {
			r.fail(e.keyN, a, e.key, "unknown field")
			continue
		}
		r.recordKey(a, e.keyN)
		r.record(a, e.value)
		if r.peek(e.value) != nil {
			fields[i].read(r, e.value, a, dst)
		}
	}
}

func (r *reader) sensor(n *yaml.Node, a at) (*Sensor, bool) {
	s := &Sensor{}
	readFields(r, n, a, sensorFields, s)
	return s, true
}

func (r *reader) http(n *yaml.Node, a at) (*HTTPCheck, bool) {
	h := &HTTPCheck{}
	readFields(r, n, a, httpFields, h)
	return h, true
}

func (r *reader) approval(n *yaml.Node, a at) (*Approval, bool) {
	ap := &Approval{}
	readFields(r, n, a, approvalFields, ap)
	return ap, true
}

// requirements reads pool_requirements: names to integers, and (§14) the entries whose name or
// slots hold a template, kept as written to be evaluated when the task is queued.
func (r *reader) requirements(n *yaml.Node, a at) (map[string]int, map[string]string, bool) {
	es, ok := r.mapping(n, a)
	if !ok {
		return nil, nil, false
	}
	out := make(map[string]int, len(es))
	var templ map[string]string
	for _, e := range es {
		ea := a.child(e.key)
		r.recordKey(ea, e.keyN)
		r.record(ea, e.value)
		v := r.peek(e.value)
		if v == nil {
			r.fail(e.value, ea, "", "expected an integer, got null")
			ok = false
			continue
		}
		if v.Kind == yaml.ScalarNode && (HasTemplate(e.key) || HasTemplate(v.Value)) {
			if tagOf(v) != "!!int" && !HasTemplate(v.Value) {
				r.fail(e.value, ea, v.Value, "expected an integer or a ${{ }} template, got %s", describe(v))
				ok = false
				continue
			}
			if templ == nil {
				templ = map[string]string{}
			}
			templ[e.key] = v.Value
			continue
		}
		n, vok := r.integer(e.value, ea)
		if !vok {
			ok = false
			continue
		}
		out[e.key] = n
	}
	return out, templ, ok
}

// expand reads a mapped task's list (§14): a sequence written out, or one ${{ }} giving a list.
func (r *reader) expand(n *yaml.Node, a at) (*Expand, bool) {
	v := r.peek(n)
	if v != nil && v.Kind == yaml.ScalarNode {
		if !HasTemplate(v.Value) {
			r.fail(n, a, v.Value, "expected a list, or a ${{ }} template giving one (expand: ${{ tasks.list.output.files }})")
			return nil, false
		}
		return &Expand{Template: v.Value}, true
	}
	val, ok := r.value(n, a)
	if !ok {
		return nil, false
	}
	items, isList := val.([]any)
	if !isList {
		r.fail(n, a, "", "expected a list, or a ${{ }} template giving one, got %s", describe(v))
		return nil, false
	}
	if items == nil {
		items = []any{}
	}
	return &Expand{Items: items}, true
}
