package dag

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/poolflow/poolflow/internal/yamlfile"
)

// PoolLookup tells whether a pool exists (configured or stored) and its capacity in slots;
// -1 means unlimited.
type PoolLookup func(name string) (capacity int, ok bool)

// LoadOptions are what validation needs to know beyond the DAG itself.
type LoadOptions struct {
	// Pools checks that required pools exist and are large enough; nil skips both checks.
	Pools PoolLookup
	// Notifiers tells whether a notifier exists (§13); nil skips the check of handlers' names.
	Notifiers func(name string) bool
	// PoolTeams gives the teams a pool is open to (§15; none = every team); nil skips the check
	// that a task's pools are open to its DAG's team.
	PoolTeams func(name string) []string
}

// dagFields are the fields of the top level of a DAG file other than default_args and tasks;
// a job also takes the task fields marked inJob.
var dagFields = []subField[DAG]{
	// dag_id is read first, to name the DAG in every error.
	{name: "dag_id"},
	sub("description", (*reader).str, func(d *DAG) *string { return &d.Description }),
	sub("schedule", (*reader).str, func(d *DAG) *string { return &d.Schedule }),
	sub("start_date", (*reader).timestamp, func(d *DAG) *time.Time { return &d.StartDate }),
	sub("catchup", (*reader).boolean, func(d *DAG) *bool { return &d.Catchup }),
	sub("every_node", (*reader).boolean, func(d *DAG) *bool { return &d.EveryNode }),
	sub("max_active_runs", (*reader).atLeastOne, func(d *DAG) *int { return &d.MaxActiveRuns }),
	sub("max_active_tasks", (*reader).atLeastOne, func(d *DAG) *int { return &d.MaxActiveTasks }),
	sub("concurrency_policy", (*reader).str, func(d *DAG) *string { return &d.ConcurrencyPolicy }),
	sub("tags", (*reader).strList, func(d *DAG) *[]string { return &d.Tags }),
	sub("team", (*reader).str, func(d *DAG) *string { return &d.Team }),
	sub("owner", (*reader).str, func(d *DAG) *string { return &d.Owner }),
	sub("params", (*reader).params, func(d *DAG) *map[string]any { return &d.Params }),
	sub("on_failure", (*reader).ids, func(d *DAG) *[]string { return &d.OnFailure }),
	sub("on_success", (*reader).ids, func(d *DAG) *[]string { return &d.OnSuccess }),
	sub("on_deadline_miss", (*reader).ids, func(d *DAG) *[]string { return &d.OnDeadlineMiss }),
	sub("dagrun_timeout", (*reader).duration, func(d *DAG) *time.Duration { return &d.DagrunTimeout }),
	sub("deadline", (*reader).deadline, func(d *DAG) **Deadline { return &d.Deadline }),
	{name: "default_args"},
	{name: "tasks"},
}

// Parse reads one YAML DAG file (SPEC §2.1) and validates it. The DAG id defaults to the file
// name without extension. Every problem of the file is returned, in file order; the DAG is nil
// when there is any.
func Parse(path string, data []byte, opts LoadOptions) (*DAG, []*ImportError) {
	d, errs := decode(path, data)
	if d != nil && d.src.data != nil {
		// A clean DAG keeps the bytes to decode again for positions; the caller's may change.
		d.src.data = bytes.Clone(data)
		d.text = d.src.data
	}
	return validated(d, errs, opts)
}

// decodeFile is decode (read_file.go) without the turn taking of big files. A file that
// decodes without an error keeps its bytes (data must not change afterwards) rather than a
// source map, which is built only by a second decode, mapped, the first time a check has an
// error to place (lazySource): most files have none, and the map costs more than the model
// (85 MB at 100,000 tasks). A file with errors is decoded again at once with its map, which
// places them and marks the fields the checks must skip.
func decodeFile(path string, data []byte, mapped bool) (*DAG, []*ImportError) {
	return decodeWith(path, data, mapped, defaultChunking)
}

// decodeWith is decodeFile with a big file's task list cut as ch says.
func decodeWith(path string, data []byte, mapped bool, ch chunking) (*DAG, []*ImportError) {
	d, errs := decodeOnce(path, data, mapped, ch)
	if d != nil {
		d.text = data // its source (§12)
	}
	switch {
	case mapped || d == nil && len(errs) == 1 && errs[0].Field == "":
		return d, errs // mapped, or the file itself is refused (no field involved)
	case len(errs) > 0:
		return decodeOnce(path, data, true, ch)
	}
	d.src = &lazySource{file: path, clean: true, data: data}
	return d, nil
}

// decodeOnce decodes data, its task list in pieces (pieces.go) when its plan holds.
func decodeOnce(path string, data []byte, mapped bool, ch chunking) (*DAG, []*ImportError) {
	if p, ok := planPieces(data, ch); ok {
		if body, ok := p.header(); ok {
			if d, errs, ok := decodeBody(path, body, nil, mapped, p); ok {
				return d, errs
			}
		}
	}
	id := fileID(path)
	f, err := yamlfile.Parse(data)
	if err != nil {
		e := err.(*yamlfile.Error)
		return nil, []*ImportError{{File: path, Line: e.Line, Column: e.Column, DAGID: id, Value: e.Value, Msg: e.Msg}}
	}
	switch len(f.Docs) {
	case 0:
		return nil, []*ImportError{{File: path, Line: 1, Column: 1, DAGID: id, Msg: "empty file"}}
	case 1:
	default:
		p := f.Docs[1]
		return nil, []*ImportError{{File: path, Line: p.Line, Column: p.Column, DAGID: id,
			Msg: fmt.Sprintf("one DAG per file, found %d documents", len(f.Docs))}}
	}
	d, errs, _ := decodeBody(path, f.Docs[0], f.Unknown, mapped, nil)
	return d, errs
}

// decodeBody reads the body of a file; with pieces, its task list is read from them, and ok
// is false when one of them does not hold (the file must then be parsed whole).
func decodeBody(path string, body *yaml.Node, unknown map[yamlfile.Pos]string, mapped bool, pieces *taskPieces) (
	_ *DAG, _ []*ImportError, ok bool) {
	id := fileID(path)
	var src *sourceMap // nil: no positions recorded
	if mapped {
		src = newSourceMap(path)
	}
	r := &reader{file: path, dagID: id, src: src, unknown: unknown, pieces: pieces, reported: map[errKey]bool{}}
	top := at{task: srcDAG}
	src.put(srcDAG, "", nodePos(body))
	es, ok := r.mapping(body, top)
	if !ok {
		return nil, r.errs, true
	}

	keys := make(map[string]entry, len(es))
	for _, e := range es {
		keys[e.key] = e
	}
	if e, has := keys["dag_id"]; has {
		if s, ok := r.str(e.value, top.child("dag_id")); ok {
			r.dagID = s
		}
	}
	_, hasTasks := keys["tasks"]
	_, hasCommand := keys["command"]
	_, hasBash := keys["bash"]
	d := &DAG{ID: r.dagID, File: path, IsJob: !hasTasks && (hasCommand || hasBash), src: &lazySource{m: src}}

	var jobEntries []entry
	for _, e := range es {
		a := top.child(e.key)
		i := 0
		for i < len(dagFields) && dagFields[i].name != e.key {
			i++
		}
		tf := taskFieldByName[e.key]
		switch {
		case i < len(dagFields) && !(d.IsJob && e.key == "default_args"):
			r.recordKey(a, e.keyN)
			r.record(a, e.value)
			if dagFields[i].read != nil && r.peek(e.value) != nil {
				dagFields[i].read(r, e.value, a, d)
			}
		case strings.HasPrefix(e.key, "x-"):
			// Extension fields, as in Compose files: a place for anchors, ignored otherwise.
		case d.IsJob && tf != nil && tf.use&inJob != 0:
			jobEntries = append(jobEntries, e)
		case e.key == "command" || e.key == "bash":
			r.fail(e.keyN, a, e.key, "a top-level %s makes the file a job, which has no tasks", e.key)
		default:
			r.fail(e.keyN, a, e.key, "unknown field")
		}
	}

	if d.IsJob {
		ja := at{task: 0}
		ts := r.readTask(jobEntries, ja, inJob)
		ts.t.ID = d.ID
		src.put(0, "", src.at(srcDAG, ""))
		d.Tasks = []*Task{r.finish(ts, ja)}
	} else if !r.readTasks(d, keys) {
		return nil, nil, false
	}
	ApplyDefaults(d)
	return d, r.errs, true
}

// readTasks decodes default_args and the task list of a (non-job) DAG; false when a piece of
// the list does not hold.
func (r *reader) readTasks(d *DAG, keys map[string]entry) bool {
	var def *taskSpec
	if e, ok := keys["default_args"]; ok {
		da := at{task: srcDefaultArgs, show: "default_args"}
		es, _ := r.mapping(e.value, da)
		def = r.readTask(es, da, inDefaults)
	}
	e, ok := keys["tasks"]
	if !ok {
		return true
	}
	if p := r.pieces; p != nil {
		// The list starts at its first '-', as the whole parse places it.
		r.src.put(srcDAG, "tasks", srcPos{p.lines[0], p.col})
		d.Tasks = make([]*Task, 0, len(p.starts))
		for k := range p.count() {
			items, ok := p.piece(k)
			if !ok {
				return false
			}
			for i, item := range items {
				r.readItem(d, len(d.Tasks), item, def)
				items[i] = nil
			}
		}
		return true
	}
	items, _ := r.sequence(e.value, at{task: srcDAG, path: "tasks"})
	d.Tasks = make([]*Task, 0, len(items))
	for i, item := range items {
		r.readItem(d, i, item, def)
		// The item's nodes are garbage once read (an alias elsewhere keeps what it names), so
		// the tree shrinks as the model grows: the peak is not the two together.
		items[i] = nil
	}
	return true
}

// readItem decodes item i of the task list.
func (r *reader) readItem(d *DAG, i int, item *yaml.Node, def *taskSpec) {
	r.src.put(i, "", nodePos(item))
	base := at{task: i, show: fmt.Sprintf("tasks[%d]", i)}
	es, _ := r.mapping(item, base)
	for _, te := range es {
		// Only a plain scalar names the task here; readTask reports any other id value.
		if v := r.peek(te.value); te.key == "id" && v != nil && v.Kind == yaml.ScalarNode && v.Value != "" &&
			r.unknown[yamlfile.At(v)] == "" {
			base = at{task: i, taskID: v.Value}
		}
	}
	ts := r.readTask(es, base, inTask)
	if def != nil {
		r.inherit(ts, def)
	}
	d.Tasks = append(d.Tasks, r.finish(ts, base))
}
