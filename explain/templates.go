package explain

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
)

// TemplateVars are the values task t's templates read (§14) for one try of a task instance of
// run runID: the run's, and the outputs of the upstream tasks it reads, which output gives (the
// JSON object of a task instance that succeeded, "" for none). The scheduler renders with them
// when it queues the task and when it starts it, the API and the task page show what they give:
// one function, so the three agree.
//
// output gives a task instance's output and whether the task instance exists; a mapped task's
// outputs are its instances' "id[0]", "id[1]"… in order.
func TemplateVars(d *dag.DAG, t *dag.Task, runID string, logical time.Time, params, conf map[string]any, try int,
	output func(taskID string) (string, bool)) *dag.TemplateVars {
	v := dag.NewTemplateVars(d.ID, runID, logical, params, conf, try)
	reads := d.TemplateReads(t)
	if len(reads) == 0 {
		return v
	}
	v.Tasks = make(map[string]dag.TaskOutputs, len(reads))
	for _, id := range reads {
		var out dag.TaskOutputs
		if s, _ := output(id); s != "" {
			_ = json.Unmarshal([]byte(s), &out.Output) // stored outputs are JSON objects
		}
		if d.Task(id).Mapped() {
			out.Outputs = []any{}
			for i := 0; ; i++ {
				s, ok := output(dag.MapID(id, i))
				if !ok {
					break
				}
				var o map[string]any
				if s != "" {
					_ = json.Unmarshal([]byte(s), &o)
				}
				out.Outputs = append(out.Outputs, o)
			}
		}
		v.Tasks[id] = out
	}
	return v
}

// RunParams are a run's params (§2.1, §14): the DAG's defaults, the run's conf over them, and
// the templated defaults conf does not set, evaluated for the run; conf is the conf as a map.
// err says why a templated default could not be evaluated (params then keep its text).
func RunParams(d *dag.DAG, runID string, logical time.Time, confJSON string) (params, conf map[string]any, err error) {
	params = make(map[string]any, len(d.Params))
	for k, v := range d.Params {
		params[k] = v
	}
	if confJSON != "" && json.Unmarshal([]byte(confJSON), &conf) == nil {
		for k, v := range conf {
			params[k] = v
		}
	}
	return params, conf, d.RenderParams(params, runID, logical, conf)
}

// Render evaluates task t's templates for try `try` of its task instance in run r, whose task
// instances are tis (their outputs): what the attempt runs, or ran. nil, nil for a task without
// templates.
//
// taskID is the task instance's id: a mapped instance's ("load[3]") renders with its item.
func Render(d *dag.DAG, t *dag.Task, taskID string, r store.Run, try int, tis []store.TaskInstance) (*dag.Rendered, error) {
	return NewRenderer(d, r, tis).Render(t, taskID, try)
}

// Renderer renders task instances of one run (Render): the run's params, the outputs by task
// instance and each mapped task's list are worked out once, so a clear preview of a task mapped
// over 10,000 items evaluates its list once, not once per instance.
type Renderer struct {
	d       *dag.DAG
	r       store.Run
	byID    map[string]*store.TaskInstance
	params  map[string]any
	conf    map[string]any
	err     error // the run's params do not evaluate
	items   map[string][]any
	itemErr map[string]error
}

// NewRenderer renders task instances of run r of DAG d, whose task instances are tis.
func NewRenderer(d *dag.DAG, r store.Run, tis []store.TaskInstance) *Renderer {
	x := &Renderer{d: d, r: r, byID: make(map[string]*store.TaskInstance, len(tis)), items: map[string][]any{},
		itemErr: map[string]error{}}
	for i := range tis {
		x.byID[tis[i].TaskID] = &tis[i]
	}
	x.params, x.conf, x.err = RunParams(d, r.RunID, r.LogicalDate, r.Conf)
	return x
}

func (x *Renderer) output(id string) (string, bool) {
	ti := x.byID[id]
	if ti == nil {
		return "", false
	}
	return ti.Output, true
}

// Render is Render's answer for the task instance taskID of task t.
func (x *Renderer) Render(t *dag.Task, taskID string, try int) (*dag.Rendered, error) {
	if !x.d.Templated(t) {
		return nil, nil
	}
	if x.err != nil {
		return nil, x.err
	}
	vars := TemplateVars(x.d, t, x.r.RunID, x.r.LogicalDate, x.params, x.conf, try, x.output)
	if _, i, ok := dag.SplitMapID(taskID); ok && t.Mapped() {
		// A mapped instance: its item is its task's list's (evaluated as the scheduler did).
		item, err := x.Item(t, i)
		if err != nil {
			return nil, err
		}
		vars.Item, vars.MapIndex = item, i
	}
	return x.d.Render(t, vars)
}

// Item is item i of mapped task t's list in the run, the list evaluated once.
func (x *Renderer) Item(t *dag.Task, i int) (any, error) {
	items, ok := x.items[t.ID]
	if !ok {
		var err error
		if x.err != nil {
			err = x.err
		} else {
			items, err = x.d.ExpandItems(t, TemplateVars(x.d, t, x.r.RunID, x.r.LogicalDate, x.params, x.conf, 1, x.output))
		}
		x.items[t.ID], x.itemErr[t.ID] = items, err
	}
	if err := x.itemErr[t.ID]; err != nil {
		return nil, err
	}
	if i < 0 || i >= len(items) {
		return nil, fmt.Errorf("%s: no item %d in a list of %d", t.ID, i, len(items))
	}
	return items[i], nil
}
