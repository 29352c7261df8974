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
	if !d.Templated(t) {
		return nil, nil
	}
	params, conf, err := RunParams(d, r.RunID, r.LogicalDate, r.Conf)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*store.TaskInstance, len(tis))
	for i := range tis {
		byID[tis[i].TaskID] = &tis[i]
	}
	vars := TemplateVars(d, t, r.RunID, r.LogicalDate, params, conf, try, func(id string) (string, bool) {
		ti := byID[id]
		if ti == nil {
			return "", false
		}
		return ti.Output, true
	})
	if base, i, ok := dag.SplitMapID(taskID); ok {
		// A mapped instance: its item is its task's list's (evaluated as the scheduler did).
		items, err := d.ExpandItems(t, TemplateVars(d, t, r.RunID, r.LogicalDate, params, conf, 1, func(id string) (string, bool) {
			ti := byID[id]
			if ti == nil {
				return "", false
			}
			return ti.Output, true
		}))
		if err != nil {
			return nil, err
		}
		if base != t.ID || i >= len(items) {
			return nil, fmt.Errorf("%s: no item %d in a list of %d", base, i, len(items))
		}
		vars.Item, vars.MapIndex = items[i], i
	}
	return d.Render(t, vars)
}
