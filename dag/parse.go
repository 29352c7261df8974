package dag

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// PoolLookup tells whether a pool exists (configured or stored) and its capacity in slots;
// -1 means unlimited.
type PoolLookup func(name string) (capacity int, ok bool)

// LoadOptions are what validation needs to know beyond the DAG itself.
type LoadOptions struct {
	// Pools checks that required pools exist and are large enough; nil skips both checks.
	Pools PoolLookup
}

// dagFields are the top-level fields of a DAG file; a job also takes jobFields.
var dagFields = fieldSet(
	"dag_id", "description", "schedule", "start_date", "catchup", "every_node", "max_active_runs",
	"max_active_tasks", "concurrency_policy", "tags", "owner", "params", "default_args", "tasks",
)

// Parse reads one YAML DAG file (SPEC §2.1) and validates it. The DAG id defaults to the file
// name without extension. Every problem of the file is returned, in file order; the DAG is nil
// when there is any.
func Parse(path string, data []byte, opts LoadOptions) (*DAG, []*ImportError) {
	d, errs := decode(path, data)
	return validated(d, errs, opts)
}

// decode builds the DAG from the file. It returns the DAG, with defaults applied, even when
// some fields failed, so that the model checks can still report the other problems.
func decode(path string, data []byte) (*DAG, []*ImportError) {
	return decodeWith(path, data, defaultChunking)
}

// decodeWith is decode with a large file's task list parsed in pieces as ch says (chunked.go).
func decodeWith(path string, data []byte, ch chunking) (*DAG, []*ImportError) {
	if ch.minBytes >= 0 && len(data) >= ch.minBytes && checkSize(data) == nil {
		if plan, ok := planTasks(data); ok {
			tp := &taskPieces{plan: plan, data: data, items: max(ch.items, 1)}
			d, errs := decodeFrom(path, plan.header(data, tp.items), tp)
			if tp.done && !tp.failed {
				return d, errs
			}
		}
	}
	return decodeFrom(path, data, nil)
}

// decodeFrom decodes data; with pieces, data is the file without most of its task list,
// which pieces hands over.
func decodeFrom(path string, data []byte, pieces *taskPieces) (*DAG, []*ImportError) {
	id := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	src := newSourceMap(path)
	r := newReader(path, src)
	r.dagID = id
	r.pieces = pieces
	chk := &tokenCheck{}
	if pieces != nil {
		chk = &pieces.check
	}
	body, anchors, err := parseYAMLWith(data, chk)
	if pieces != nil {
		// The pieces go on one level down; an anchor or an alias may refer across them.
		pieces.check.base = 1
		if err != nil || len(anchors) > 0 || len(ast.Filter(ast.AliasType, body)) > 0 {
			pieces.failed = true
			return nil, nil
		}
	}
	if err != nil {
		return nil, []*ImportError{syntaxError(path, id, err)}
	}
	if body == nil {
		return nil, []*ImportError{{File: path, Line: 1, Column: 1, DAGID: id, Msg: "empty file"}}
	}
	r.anchors = anchors
	top := at{task: srcDAG}
	src.put(srcDAG, "", nodePos(body))
	es, ok := r.mapping(body, top)
	if !ok {
		return nil, r.errs
	}

	keys := map[string]entry{}
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
		switch {
		case dagFields[e.key] && !(d.IsJob && e.key == "default_args"):
			r.record(a.key(), e.keyN)
			r.record(a, e.value)
		case strings.HasPrefix(e.key, "x-"):
			// Extension fields, as in Compose files: a place for anchors, ignored otherwise.
			continue
		case d.IsJob && jobFields[e.key]:
			jobEntries = append(jobEntries, e)
			continue
		case jobFields[e.key] && (e.key == "command" || e.key == "bash"):
			r.fail(e.keyN, a, e.key, "a top-level %s makes the file a job, which has no tasks", e.key)
			continue
		default:
			r.fail(e.keyN, a, e.key, "unknown field")
			continue
		}
		r.dagField(d, e, a)
	}

	if d.IsJob {
		ja := at{task: 0}
		ts := r.readTask(jobEntries, ja, jobFields)
		ts.t.ID = d.ID
		src.put(0, "", src.at(srcDAG, ""))
		d.Tasks = []*Task{r.finish(ts, ja)}
	} else {
		r.readTasks(d, keys)
	}
	ApplyDefaults(d)
	return d, r.errs
}

// parseYAML parses data into the body of its single document; nil for an empty file. The
// limits of limits.go are checked at each stage before the next one is built.
func parseYAML(data []byte) (body ast.Node, anchors map[string]ast.Node, err error) {
	return parseYAMLWith(data, &tokenCheck{})
}

// parseYAMLWith is parseYAML with the token limits counted on from chk (chunked.go).
func parseYAMLWith(data []byte, chk *tokenCheck) (body ast.Node, anchors map[string]ast.Node, err error) {
	defer func() {
		// The parser has panicked on malformed input before; a broken file must not stop the
		// daemon from loading the others.
		if p := recover(); p != nil {
			body, anchors, err = nil, nil, fmt.Errorf("yaml parser failed: %v", p)
		}
	}()
	if err := checkSize(data); err != nil {
		return nil, nil, err
	}
	tokens := lexer.Tokenize(string(data))
	if tk := tokens.InvalidToken(); tk == nil {
		// A file with an invalid token gets the parser's message for it instead.
		if err := chk.all(tokens); err != nil {
			return nil, nil, err
		}
	}
	f, err := parser.Parse(tokens, 0)
	if err != nil {
		return nil, nil, err
	}
	var bodies []ast.Node
	for _, doc := range f.Docs {
		if doc != nil && doc.Body != nil {
			bodies = append(bodies, doc.Body)
		}
	}
	switch len(bodies) {
	case 0:
		return nil, nil, nil
	case 1:
	default:
		return nil, nil, &docError{nodePos(bodies[1]), fmt.Sprintf("one DAG per file, found %d documents", len(bodies))}
	}
	anchors = collectAnchors(bodies[0])
	if err := checkAliases(bodies[0], anchors); err != nil {
		return nil, nil, err
	}
	return bodies[0], anchors, nil
}

// docError is a file that parses but is not one document.
type docError struct {
	pos srcPos
	msg string
}

func (e *docError) Error() string { return e.msg }

// syntaxError converts a parser error, which carries the offending token.
func syntaxError(path, id string, err error) *ImportError {
	ie := &ImportError{File: path, DAGID: id, Msg: err.Error()}
	switch e := err.(type) {
	case *docError:
		ie.Line, ie.Column = e.pos.line, e.pos.col
	case *limitError:
		ie.Line, ie.Column = e.pos.line, e.pos.col
	}
	if pe, ok := err.(interface {
		GetMessage() string
		GetToken() *token.Token
	}); ok {
		ie.Msg = pe.GetMessage()
		if tk := pe.GetToken(); tk != nil && tk.Position != nil {
			ie.Line, ie.Column = tk.Position.Line, tk.Position.Column
			ie.Value = tk.Value
		}
	}
	return ie
}

func (r *reader) dagField(d *DAG, e entry, a at) {
	switch e.key {
	case "dag_id":
		// read first, to name the DAG in every error
	case "description":
		d.Description, _ = r.str(e.value, a)
	case "schedule":
		d.Schedule, _ = r.str(e.value, a)
	case "start_date":
		d.StartDate, _ = r.timestamp(e.value, a)
	case "catchup":
		d.Catchup, _ = r.boolean(e.value, a)
	case "every_node":
		d.EveryNode, _ = r.boolean(e.value, a)
	case "max_active_runs":
		d.MaxActiveRuns = r.atLeastOne(e.value, a)
	case "max_active_tasks":
		d.MaxActiveTasks = r.atLeastOne(e.value, a)
	case "concurrency_policy":
		d.ConcurrencyPolicy, _ = r.str(e.value, a)
	case "tags":
		d.Tags, _ = r.strList(e.value, a)
	case "owner":
		d.Owner, _ = r.str(e.value, a)
	case "params":
		if v, ok := r.value(e.value, a); ok && v != nil {
			if m, isMap := v.(map[string]any); isMap {
				d.Params = m
			} else {
				r.fail(e.value, a, "", "expected a mapping, got %s", describe(e.value))
			}
		}
	}
}

// atLeastOne reads a limit whose zero would silently mean the default.
func (r *reader) atLeastOne(n ast.Node, a at) int {
	v, ok := r.integer(n, a)
	if ok && v < 1 {
		r.fail(n, a, scalarText(n), "must be at least 1, got %d", v)
	}
	return v
}

// readTasks decodes default_args and the task list of a (non-job) DAG.
func (r *reader) readTasks(d *DAG, keys map[string]entry) {
	var def *taskSpec
	if e, ok := keys["default_args"]; ok {
		da := at{task: srcDefaultArgs, show: "default_args"}
		es, _ := r.mapping(e.value, da)
		def = r.readTask(es, da, defaultArgFields)
	}
	e, ok := keys["tasks"]
	if !ok {
		return
	}
	items, _ := r.sequence(e.value, at{task: srcDAG, path: "tasks"})
	if tp := r.pieces; tp != nil {
		// The list starts where the plan found it, before the items left in the header.
		r.src.put(srcDAG, "tasks", tp.plan.first)
		tp.each(items, func(i int, item ast.Node) { r.readItem(d, i, item, def) })
		return
	}
	for i, item := range items {
		r.readItem(d, i, item, def)
	}
}

// readItem decodes item i of the task list.
func (r *reader) readItem(d *DAG, i int, item ast.Node, def *taskSpec) {
	pos := nodePos(item)
	r.src.put(i, "", pos)
	base := at{task: i, show: fmt.Sprintf("tasks[%d]", i)}
	es, _ := r.mapping(item, base)
	for _, te := range es {
		// Only a plain scalar names the task here; readTask reports any other id value.
		if id, ok := scalarString(te.value); ok && te.key == "id" && id != "" {
			base = at{task: i, taskID: id}
		}
	}
	ts := r.readTask(es, base, taskFields)
	if def != nil {
		r.inherit(ts, def)
	}
	d.Tasks = append(d.Tasks, r.finish(ts, base))
}
