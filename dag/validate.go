package dag

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// maxIDLength is Airflow's limit for DAG and task ids.
const maxIDLength = 250

// Validate runs the checks that apply to any DAG, from YAML or Go (SPEC §2.3): ids, the kind of
// each task, dependencies and cycles, pool requirements against opts.Pools, schedule, trigger
// and weight rules, concurrency policy, limits, durations, sensors and approvals. Zero values
// that ApplyDefaults would fill are accepted. Errors of a YAML DAG carry the positions of the
// offending tokens.
func Validate(d *DAG, opts LoadOptions) []*ImportError {
	errs := validate(d, opts)
	if len(errs) == 0 {
		return nil
	}
	return finishErrors(errs)
}

type validator struct {
	d    *DAG
	src  *lazySource
	opts LoadOptions
	errs []*ImportError
	// reported dedupes the errors of inherited fields, reported once under default_args.
	reported map[errKey]bool
}

func validate(d *DAG, opts LoadOptions) []*ImportError {
	v := &validator{d: d, src: d.src, opts: opts, reported: map[errKey]bool{}}
	v.checkDAG()
	first := v.checkIDs()
	for i, t := range d.Tasks {
		v.checkTask(i, t)
	}
	v.checkDependencies(first)
	v.checkTemplates()
	return v.errs
}

// checkTemplates reports the templates that do not compile, hold the wrong type or read a task
// that is not upstream (§14), at the token of the field.
func (v *validator) checkTemplates() {
	for _, p := range v.d.templates().problems {
		if p.path != "" && v.bad(p.task, p.path) {
			continue
		}
		v.fail(p.task, p.path, p.value, "%s", p.msg)
	}
}

// fail records an error about field path of task i (srcDAG for the DAG itself).
func (v *validator) fail(i int, path, value, format string, args ...any) {
	v.add(i, path, value, fmt.Sprintf(format, args...), nil)
}

// failLazy records an error whose message is computed only if the error is shown.
func (v *validator) failLazy(i int, path, value string, msg func() string) {
	v.add(i, path, value, "", msg)
}

func (v *validator) add(i int, path, value, msg string, lazy func() string) {
	src := v.src.get()
	p := src.at(i, path)
	e := &ImportError{
		File: v.d.File, Line: p.line, Column: p.col, DAGID: v.d.ID,
		Field: src.display(i, path), Value: value, Msg: msg, lazy: lazy,
	}
	if src.fromDefaults(i, path) {
		// The same problem for every task that inherits the field: report it once.
		e.Field = "default_args." + e.Field
		k := errKey{p, e.Field, e.Msg}
		if v.reported[k] {
			return
		}
		v.reported[k] = true
	} else if i >= 0 && !v.d.IsJob {
		// A job's task is the DAG itself; naming it twice says nothing.
		if id := v.d.Tasks[i].ID; id != "" {
			e.TaskID = id
		} else {
			e.Field = strings.TrimSuffix(fmt.Sprintf("tasks[%d].%s", i, e.Field), ".")
		}
	}
	v.errs = append(v.errs, e)
}

func (v *validator) bad(i int, path string) bool { return v.src.isBad(i, path) }

func (v *validator) checkDAG() {
	d := v.d
	if !v.bad(srcDAG, "dag_id") {
		if msg := checkID(d.ID); msg != "" {
			v.fail(srcDAG, "dag_id", d.ID, "%s", msg)
		}
	}
	if !v.bad(srcDAG, "schedule") {
		if _, _, err := ParseSchedule(d.Schedule); err != nil {
			v.fail(srcDAG, "schedule", d.Schedule, "%v", err)
		}
	}
	v.checkEveryNode()
	v.checkDAGHandlers()
	if d.MaxActiveRuns < 0 && !v.bad(srcDAG, "max_active_runs") {
		v.fail(srcDAG, "max_active_runs", fmt.Sprint(d.MaxActiveRuns), "must be at least 1, got %d", d.MaxActiveRuns)
	}
	if d.MaxActiveTasks < 0 && !v.bad(srcDAG, "max_active_tasks") {
		v.fail(srcDAG, "max_active_tasks", fmt.Sprint(d.MaxActiveTasks), "must be at least 1, got %d", d.MaxActiveTasks)
	}
	switch d.ConcurrencyPolicy {
	case "", PolicyAllow, PolicyForbid, PolicyReplace:
	default:
		if !v.bad(srcDAG, "concurrency_policy") {
			v.fail(srcDAG, "concurrency_policy", d.ConcurrencyPolicy,
				"invalid concurrency policy %q (want allow, forbid or replace)", d.ConcurrencyPolicy)
		}
	}
	switch {
	case len(d.Tasks) == 0:
		if !v.bad(srcDAG, "tasks") {
			v.fail(srcDAG, "tasks", "", "a DAG needs at least one task")
		}
	case d.IsJob && (len(d.Tasks) != 1 || d.Tasks[0].ID != d.ID):
		v.fail(srcDAG, "", "", "a job has exactly one task, whose id is the DAG id")
	}
}

// checkEveryNode: an every_node DAG fires a schedule on each daemon, from the daemon's start
// (a daemon keeps its fires in memory, §9): it needs a schedule, and has no catch-up to do.
func (v *validator) checkEveryNode() {
	d := v.d
	if !d.EveryNode || v.bad(srcDAG, "every_node") {
		return
	}
	switch {
	case d.Schedule == "" && !v.bad(srcDAG, "schedule"):
		v.fail(srcDAG, "every_node", "true", "needs a schedule (a manual start runs on the daemon that takes it)")
	case d.Catchup && !v.bad(srcDAG, "catchup"):
		v.fail(srcDAG, "catchup", "true", "not supported with every_node (each daemon fires from its own start)")
	}
}

// checkID returns why id is not a valid DAG or task id, or "".
func checkID(id string) string {
	switch {
	case id == "":
		return "missing"
	case len(id) > maxIDLength:
		return fmt.Sprintf("id longer than %d characters", maxIDLength)
	case id == "." || id == "..":
		return fmt.Sprintf("invalid id %q", id)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return fmt.Sprintf("invalid id %q: use letters, digits, '_', '.' and '-'", id)
		}
	}
	return ""
}

// checkIDs reports missing, invalid and duplicate task ids and returns the index of the first
// task of each id.
func (v *validator) checkIDs() map[string]int {
	first := make(map[string]int, len(v.d.Tasks))
	for i, t := range v.d.Tasks {
		if v.bad(i, "id") {
			continue
		}
		if msg := checkID(t.ID); msg != "" {
			v.fail(i, "id", t.ID, "%s", msg)
			continue
		}
		if _, dup := first[t.ID]; dup {
			v.fail(i, "id", t.ID, "duplicate task id %q", t.ID)
			continue
		}
		first[t.ID] = i
	}
	return first
}

var kindFields = map[Kind]string{
	KindCommand: "command", KindBash: "bash", KindGo: "func", KindSensor: "sensor", KindApproval: "approval",
}

func (v *validator) checkTask(i int, t *Task) {
	v.checkKind(i, t)
	if t.Command != nil && !v.bad(i, "command") {
		v.checkArgv(i, "command", t.Command)
	}
	for _, k := range slices.Sorted(maps.Keys(t.Env)) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			v.fail(i, "env."+k+keySuffix, k, "invalid variable name %q", k)
		}
	}
	if !t.TriggerRule.Valid() && t.TriggerRule != "" && !v.bad(i, "trigger_rule") {
		v.fail(i, "trigger_rule", string(t.TriggerRule), "invalid trigger rule %q", t.TriggerRule)
	}
	switch t.WeightRule {
	case "", WeightDownstream, WeightUpstream, WeightAbsolute:
	default:
		if !v.bad(i, "weight_rule") {
			v.fail(i, "weight_rule", t.WeightRule, "invalid weight rule %q (want downstream, upstream or absolute)", t.WeightRule)
		}
	}
	v.nonNegative(i, "retries", int64(t.Retries))
	v.nonNegative(i, "max_active_tis_per_dag", int64(t.MaxActiveTIsPerDAG))
	v.nonNegative(i, "max_active_tis_per_dagrun", int64(t.MaxActiveTIsPerDAGRun))
	v.nonNegative(i, "max_map_length", int64(t.MaxMapLength))
	v.nonNegativeDuration(i, "retry_delay", t.RetryDelay)
	v.nonNegativeDuration(i, "max_retry_delay", t.MaxRetryDelay)
	v.nonNegativeDuration(i, "execution_timeout", t.ExecutionTimeout)
	v.nonNegativeDuration(i, "queue_timeout", t.QueueTimeout)
	v.checkRequirements(i, t)
	v.checkTaskHandlers(i, t)
	if t.Sensor != nil && !v.bad(i, "sensor") {
		v.checkSensor(i, t.Sensor)
	}
	if t.Approval != nil {
		v.checkApproval(i, t)
	}
}

func (v *validator) checkKind(i int, t *Task) {
	kinds := t.payloadKinds()
	switch {
	case len(kinds) == 0:
		for _, f := range []string{"command", "bash", "sensor", "approval"} {
			if v.bad(i, f) {
				return
			}
		}
		v.fail(i, "", "", "needs exactly one of command, bash, sensor, approval or a Go function")
	case len(kinds) > 1:
		f := kindFields[kinds[1]]
		v.fail(i, f+keySuffix, "", "%s and %s both set; a task runs exactly one of command, bash, sensor, approval or a Go function",
			kindFields[kinds[0]], f)
	case t.Kind != "" && t.Kind != kinds[0]:
		v.fail(i, "", string(t.Kind), "kind %q does not match the task's %s", t.Kind, kindFields[kinds[0]])
	}
}

func (v *validator) checkArgv(i int, path string, argv []string) {
	switch {
	case len(argv) == 0:
		v.fail(i, path, "", "empty argv")
	case argv[0] == "":
		v.fail(i, path+"[0]", "", "empty program name")
	}
}

func (v *validator) nonNegative(i int, path string, n int64) {
	if n < 0 && !v.bad(i, path) {
		v.fail(i, path, fmt.Sprint(n), "must not be negative, got %d", n)
	}
}

func (v *validator) nonNegativeDuration(i int, path string, d time.Duration) {
	if d < 0 && !v.bad(i, path) {
		v.fail(i, path, d.String(), "must not be negative, got %s", d)
	}
}

// checkRequirements checks the named pools a task requires (§2.3, §4.1).
func (v *validator) checkRequirements(i int, t *Task) {
	for _, name := range slices.Sorted(maps.Keys(t.PoolRequirements)) {
		slots := t.PoolRequirements[name]
		path := "pool_requirements." + name
		if v.bad(i, path) {
			continue
		}
		switch {
		case name == "":
			v.fail(i, "pool_requirements", "", "empty pool name")
			continue
		case strings.HasPrefix(name, "_"):
			v.fail(i, path+keySuffix, name, "pool names starting with \"_\" are reserved for implicit pools")
			continue
		}
		if slots < 1 {
			v.fail(i, path, fmt.Sprint(slots), "slots must be at least 1, got %d", slots)
		}
		if v.opts.Pools == nil {
			continue
		}
		capacity, ok := v.opts.Pools(name)
		switch {
		case !ok:
			v.fail(i, path+keySuffix, name, "unknown pool %q", name)
		case capacity >= 0 && slots > capacity:
			v.fail(i, path, fmt.Sprint(slots), "%d slots exceed capacity %d", slots, capacity)
		}
		if ok && v.opts.PoolTeams != nil {
			if msg := TeamRefusal(name, v.opts.PoolTeams(name), v.d.Team); msg != "" {
				v.fail(i, path+keySuffix, name, "%s", msg)
			}
		}
	}
}

// TeamRefusal says why a DAG of team may not use pool, open to teams (§15; none = every team),
// "" when it may.
func TeamRefusal(pool string, teams []string, team string) string {
	if len(teams) == 0 || slices.Contains(teams, team) {
		return ""
	}
	if team == "" {
		return fmt.Sprintf("pool %s is for team %s; this DAG names no team", pool, strings.Join(teams, ", "))
	}
	return fmt.Sprintf("pool %s is for team %s, not team %s", pool, strings.Join(teams, ", "), team)
}
