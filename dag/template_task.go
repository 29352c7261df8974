package dag

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// dagTemplates are a DAG's compiled templates, memoized on it (derived.templates): validation
// reports their problems, the scheduler and the API render them.
type dagTemplates struct {
	tasks    []*taskTemplates // by task index; nil for a task without templates
	params   map[string]*tmplString
	problems []templateProblem
}

// templateProblem is a template that does not compile, or reads a task it may not.
type templateProblem struct {
	task        int // srcDAG for params
	path, value string
	msg         string
}

// taskTemplates are one task's compiled templates.
type taskTemplates struct {
	command []*tmplString // by argv item; nil for a plain item
	env     map[string]*tmplString
	sensor  []*tmplString // sensor.command items
	file    *tmplString   // sensor.file_exists
	url     *tmplString   // sensor.http.url
	pools   []poolTemplate
	expand  *tmplString // a mapped task's list
	mapped  bool        // a mapped task (its list literal or not)
	reads   []string    // the tasks whose outputs it reads, sorted
}

// poolTemplate is one pool requirement with a template in its name or its slots.
type poolTemplate struct {
	rawName      string
	name, amount *tmplString // nil: plain
	slots        int         // the slots when amount is plain
}

func (d *DAG) templates() *dagTemplates {
	return memo(&d.derived.templates, func() *dagTemplates { return compileDAG(d) })
}

// compileDAG compiles every template of the DAG and checks what the tasks read.
func compileDAG(d *DAG) *dagTemplates {
	out := &dagTemplates{}
	fail := func(task int, path, value string, err error) {
		out.problems = append(out.problems, templateProblem{task, path, value, err.Error()})
	}
	for _, k := range slices.Sorted(maps.Keys(d.Params)) {
		s, ok := d.Params[k].(string)
		if !ok {
			continue
		}
		tp, err := compileTemplate(s, paramsVars{}, wantValue, nil)
		if err != nil {
			fail(srcDAG, "params."+k, s, fmt.Errorf("%w (a params default reads dag_id, run_id, logical_date, ds, ds_nodash and conf)", err))
			continue
		}
		if tp != nil {
			if out.params == nil {
				out.params = map[string]*tmplString{}
			}
			out.params[k] = tp
		}
	}
	for i, t := range d.Tasks {
		tt, problems := compileTask(d, i, t)
		out.problems = append(out.problems, problems...)
		if tt != nil {
			if out.tasks == nil {
				out.tasks = make([]*taskTemplates, len(d.Tasks))
			}
			out.tasks[i] = tt
		}
	}
	return out
}

func compileTask(d *DAG, i int, t *Task) (*taskTemplates, []templateProblem) {
	var problems []templateProblem
	tt := &taskTemplates{}
	any := false
	reads := map[string]bool{}
	uses := func(id string) { reads[id] = true }
	one := func(path, s string, w want) *tmplString {
		tp, err := compileTemplate(s, TemplateVars{}, w, uses)
		if err != nil {
			problems = append(problems, templateProblem{i, path, s, err.Error()})
			return nil
		}
		any = any || tp != nil
		return tp
	}
	list := func(path string, items []string) []*tmplString {
		var out []*tmplString
		for j, s := range items {
			if tp := one(path+"["+strconv.Itoa(j)+"]", s, wantString); tp != nil {
				if out == nil {
					out = make([]*tmplString, len(items))
				}
				out[j] = tp
			}
		}
		return out
	}
	if HasTemplate(t.Bash) {
		problems = append(problems, templateProblem{i, "bash", clip(t.Bash),
			"templates are not expanded in a bash script (the shell would run whatever a value holds): " +
				"pass the value through env: (env: {FILES: \"${{ tasks.extract.output.files[0] }}\"}) and read $FILES"})
	}
	tt.command = list("command", t.Command)
	for _, k := range slices.Sorted(maps.Keys(t.Env)) {
		if tp := one("env."+k, t.Env[k], wantString); tp != nil {
			if tt.env == nil {
				tt.env = map[string]*tmplString{}
			}
			tt.env[k] = tp
		}
	}
	if s := t.Sensor; s != nil {
		tt.sensor = list("sensor.command", s.Command)
		tt.file = one("sensor.file_exists", s.FileExists, wantString)
		if s.HTTP != nil {
			tt.url = one("sensor.http.url", s.HTTP.URL, wantString)
		}
	}
	if e := t.Expand; e != nil {
		tt.mapped, any = true, true
		if e.Template != "" {
			tt.expand = one("expand", e.Template, wantList)
		} else if n := maxMapLength(t); len(e.Items) > n {
			problems = append(problems, templateProblem{i, "expand", fmt.Sprintf("%d items", len(e.Items)),
				fmt.Sprintf("%d items, over max_map_length %d", len(e.Items), n)})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(t.PoolTemplates)) {
		amount := t.PoolTemplates[name]
		pt := poolTemplate{rawName: name}
		path := "pool_requirements." + name
		pt.name = one(path+keySuffix, name, wantString)
		if HasTemplate(amount) {
			pt.amount = one(path, amount, wantAmount)
		} else if n, err := strconv.Atoi(amount); err != nil || n < 1 {
			problems = append(problems, templateProblem{i, path, amount, "slots must be an integer of at least 1"})
		} else {
			pt.slots = n
		}
		tt.pools = append(tt.pools, pt)
		any = true
	}
	if len(reads) > 0 {
		up := upstreamOf(d, t)
		for _, id := range slices.Sorted(maps.Keys(reads)) {
			switch {
			case d.Task(id) == nil:
				problems = append(problems, templateProblem{i, "", "tasks." + id,
					fmt.Sprintf("a template reads tasks.%s, but the DAG has no task %s", id, id)})
			case !up[id]:
				problems = append(problems, templateProblem{i, "", "tasks." + id,
					fmt.Sprintf("a template reads tasks.%s, which is not upstream of %s: add it to depends_on", id, t.ID)})
			}
			tt.reads = append(tt.reads, id)
		}
	}
	if !any {
		return nil, problems
	}
	return tt, problems
}

// upstreamOf is every task t depends on, directly or not.
func upstreamOf(d *DAG, t *Task) map[string]bool {
	seen := map[string]bool{}
	stack := slices.Clone(t.DependsOn)
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[id] {
			continue
		}
		seen[id] = true
		if u := d.Task(id); u != nil {
			stack = append(stack, u.DependsOn...)
		}
	}
	return seen
}

// Templated reports whether task t of d has templates to render before it runs.
func (d *DAG) Templated(t *Task) bool { return d.taskTemplates(t) != nil }

func (d *DAG) taskTemplates(t *Task) *taskTemplates {
	dt := d.templates()
	if dt.tasks == nil {
		return nil
	}
	i, ok := d.TaskIndex(t.ID)
	if !ok || d.Tasks[i] != t {
		return nil
	}
	return dt.tasks[i]
}

// TemplateReads lists the tasks whose outputs t's templates read.
func (d *DAG) TemplateReads(t *Task) []string {
	if tt := d.taskTemplates(t); tt != nil {
		return tt.reads
	}
	return nil
}

// Rendered is a task's templated fields evaluated for one task instance; a field is nil when
// the task's is not templated (use the task's own).
type Rendered struct {
	Argv   []string
	Env    map[string]string
	Sensor *Sensor
	// Pools are the named-pool requirements, the plain ones with the evaluated ones.
	Pools map[string]int
}

// Render evaluates t's templates over vars: nil, nil for a task without templates. The first
// evaluation that fails is a *TemplateError naming the field and the expression.
func (d *DAG) Render(t *Task, vars *TemplateVars) (*Rendered, error) {
	tt := d.taskTemplates(t)
	if tt == nil {
		return nil, nil
	}
	env := *vars
	out := &Rendered{}
	var err error
	if tt.command != nil {
		if out.Argv, err = renderList("command", t.Command, tt.command, &env); err != nil {
			return nil, err
		}
	}
	if tt.env != nil {
		out.Env = maps.Clone(t.Env)
		for k, tp := range tt.env {
			if out.Env[k], err = tp.evalString(&env, "env."+k); err != nil {
				return nil, err
			}
		}
	}
	if s := t.Sensor; s != nil && (tt.sensor != nil || tt.file != nil || tt.url != nil) {
		c := *s
		if tt.sensor != nil {
			if c.Command, err = renderList("sensor.command", s.Command, tt.sensor, &env); err != nil {
				return nil, err
			}
		}
		if tt.file != nil {
			if c.FileExists, err = tt.file.evalString(&env, "sensor.file_exists"); err != nil {
				return nil, err
			}
		}
		if tt.url != nil {
			h := *s.HTTP
			if h.URL, err = tt.url.evalString(&env, "sensor.http.url"); err != nil {
				return nil, err
			}
			c.HTTP = &h
		}
		out.Sensor = &c
	}
	if tt.pools != nil {
		if out.Pools, err = renderPools(t, tt, &env); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RenderPools evaluates only t's named-pool requirements over vars (the plain ones with the
// evaluated ones): nil, nil for a task whose requirements have no template. The scheduler
// reads a mapped instance's pools with it before the instance is queued (its line's look
// ahead), without evaluating its command.
func (d *DAG) RenderPools(t *Task, vars *TemplateVars) (map[string]int, error) {
	tt := d.taskTemplates(t)
	if tt == nil || tt.pools == nil {
		return nil, nil
	}
	env := *vars
	return renderPools(t, tt, &env)
}

func renderPools(t *Task, tt *taskTemplates, env *TemplateVars) (map[string]int, error) {
	out := maps.Clone(t.PoolRequirements)
	if out == nil {
		out = map[string]int{}
	}
	for _, pt := range tt.pools {
		name, slots := pt.rawName, pt.slots
		path := "pool_requirements." + pt.rawName
		var err error
		if pt.name != nil {
			if name, err = pt.name.evalString(env, path); err != nil {
				return nil, err
			}
			if name == "" || name[0] == '_' {
				return nil, &TemplateError{path, pt.name.parts[len(pt.name.parts)-1].src,
					fmt.Sprintf("gives the pool name %q, which is not a pool a task may require", name)}
			}
		}
		if pt.amount != nil {
			if slots, err = pt.amount.evalAmount(env, path); err != nil {
				return nil, err
			}
		}
		out[name] += slots
	}
	return out, nil
}

func renderList(field string, items []string, tps []*tmplString, env *TemplateVars) ([]string, error) {
	out := slices.Clone(items)
	for j, tp := range tps {
		if tp == nil {
			continue
		}
		s, err := tp.evalString(env, field+"["+strconv.Itoa(j)+"]")
		if err != nil {
			return nil, err
		}
		out[j] = s // one argv element, whatever it holds: never split, never given to a shell
	}
	return out, nil
}

// RenderParams evaluates the templated params defaults of the DAG for a run into params (which
// holds the defaults): a key conf sets is the run's value and is not evaluated.
func (d *DAG) RenderParams(params map[string]any, runID string, logical time.Time, conf map[string]any) error {
	dt := d.templates()
	if len(dt.params) == 0 {
		return nil
	}
	env := paramsVars{DAGID: d.ID, RunID: runID, LogicalDate: logical, DS: logical.UTC().Format("2006-01-02"),
		DSNoDash: logical.UTC().Format("20060102"), Conf: conf}
	for _, k := range slices.Sorted(maps.Keys(dt.params)) {
		if _, set := conf[k]; set {
			continue
		}
		v, err := dt.params[k].evalValue(&env, "params."+k)
		if err != nil {
			return err
		}
		params[k] = v
	}
	return nil
}

// NewTemplateVars fills the run's part of TemplateVars; the caller adds the tasks' outputs and
// a mapped instance's item.
func NewTemplateVars(dagID, runID string, logical time.Time, params, conf map[string]any, try int) *TemplateVars {
	return &TemplateVars{DAGID: dagID, RunID: runID, LogicalDate: logical, DS: logical.UTC().Format("2006-01-02"),
		DSNoDash: logical.UTC().Format("20060102"), Params: params, Conf: conf, TryNumber: try, MapIndex: -1}
}

func maxMapLength(t *Task) int {
	if t.MaxMapLength > 0 {
		return t.MaxMapLength
	}
	return DefaultMaxMapLength
}

// Mapped reports whether t is a mapped task (expand:).
func (t *Task) Mapped() bool { return t != nil && t.Expand != nil }

// ExpandItems is the list a mapped task maps over, for a run: its literal items, or its
// template evaluated over vars. More than max_map_length items, or a value that is not a list,
// is an error naming the length or the type.
func (d *DAG) ExpandItems(t *Task, vars *TemplateVars) ([]any, error) {
	if t.Expand == nil {
		return nil, nil
	}
	items := t.Expand.Items
	if t.Expand.Template != "" {
		tt := d.taskTemplates(t)
		if tt == nil || tt.expand == nil {
			return nil, fmt.Errorf("expand: the template did not compile")
		}
		v, err := tt.expand.evalValue(vars, "expand")
		if err != nil {
			return nil, err
		}
		list, ok := asList(v)
		if !ok {
			return nil, &TemplateError{"expand", tt.expand.parts[0].src, fmt.Sprintf("gives %s; expand needs a list", valueWords(v))}
		}
		items = list
	}
	if n := maxMapLength(t); len(items) > n {
		return nil, fmt.Errorf("expand: %d items, over max_map_length %d", len(items), n)
	}
	return items, nil
}

func asList(v any) ([]any, bool) {
	if l, ok := v.([]any); ok {
		return l, true
	}
	rv := reflect.ValueOf(v)
	if v == nil || (rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array) {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

// MapID is the id of instance i of mapped task id: id[i].
func MapID(id string, i int) string { return id + "[" + strconv.Itoa(i) + "]" }

// SplitMapID splits a mapped instance's id "id[i]" into id and i; ok is false for any other id.
func SplitMapID(s string) (id string, i int, ok bool) {
	if !strings.HasSuffix(s, "]") {
		return s, -1, false
	}
	open := strings.LastIndexByte(s, '[')
	if open <= 0 {
		return s, -1, false
	}
	n, err := strconv.Atoi(s[open+1 : len(s)-1])
	if err != nil || n < 0 || strconv.Itoa(n) != s[open+1:len(s)-1] {
		return s, -1, false
	}
	return s[:open], n, true
}

// TaskOf is the task of a task instance id: a task's own, or for a mapped instance "id[i]" its
// mapped task's; nil when there is none.
func (d *DAG) TaskOf(id string) *Task {
	if t := d.Task(id); t != nil {
		return t
	}
	if base, _, ok := SplitMapID(id); ok {
		if t := d.Task(base); t.Mapped() {
			return t
		}
	}
	return nil
}
