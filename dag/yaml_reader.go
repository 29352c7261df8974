package dag

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/poolflow/poolflow/internal/yamlfile"
)

// reader turns the nodes of a parsed file into the model, recording every problem as an
// ImportError at the node's position and the position of every field it reads in a sourceMap.
// It only walks mapping keys and lists; scalars are typed by the YAML library's resolution.
type reader struct {
	file    string
	dagID   string
	errs    []*ImportError
	src     *sourceMap
	unknown map[yamlfile.Pos]string // aliases naming no anchor (yamlfile.File.Unknown)
	pieces  *taskPieces             // the task list, when it is parsed in pieces
	// reported dedupes the errors of inherited fields, reported once under default_args.
	reported map[errKey]bool
}

type errKey struct {
	pos        srcPos
	field, msg string
}

// at names where a value sits: the task index (srcDAG, srcDefaultArgs or an index into
// DAG.Tasks), the task id shown in errors, the field path within the task and a prefix shown
// before it in errors ("default_args" for default_args, "tasks[3]" for a task without id).
type at struct {
	task   int
	taskID string
	path   string
	show   string
}

func (a at) child(name string) at { a.path = joinPath(a.path, name); return a }

func (a at) index(i int) at { a.path = fmt.Sprintf("%s[%d]", a.path, i); return a }

func (a at) key() at { a.path += keySuffix; return a }

// field is the field path shown in errors.
func (a at) field() string {
	p := strings.TrimSuffix(a.path, keySuffix)
	if a.show == "" {
		return p
	}
	if p == "" || strings.HasPrefix(p, "[") {
		return a.show + p
	}
	return a.show + "." + p
}

func joinPath(base, name string) string {
	if base == "" {
		return name
	}
	return base + "." + name
}

func nodePos(n *yaml.Node) srcPos {
	if n == nil {
		return srcPos{}
	}
	return srcPos{n.Line, n.Column}
}

// fail records an error at n, marking the field as bad so that later checks skip it.
func (r *reader) fail(n *yaml.Node, a at, value, format string, args ...any) {
	r.failAt(nodePos(n), a, value, format, args...)
}

func (r *reader) failAt(p srcPos, a at, value, format string, args ...any) {
	r.src.markBad(a.task, strings.TrimSuffix(a.path, keySuffix))
	e := &ImportError{
		File: r.file, Line: p.line, Column: p.col,
		DAGID: r.dagID, TaskID: a.taskID, Field: a.field(),
		Value: value, Msg: fmt.Sprintf(format, args...),
	}
	r.reported[errKey{p, e.Field, e.Msg}] = true
	r.errs = append(r.errs, e)
}

// failOnce records an error about a field of task that may come from default_args; an
// inherited field's error is reported once, under default_args.
func (r *reader) failOnce(task int, a at, value, format string, args ...any) {
	p := r.src.at(task, a.path+keySuffix)
	if r.src.fromDefaults(task, a.path) {
		a = at{task: srcDefaultArgs, path: a.path, show: "default_args"}
		if r.reported[errKey{p, a.field(), fmt.Sprintf(format, args...)}] {
			return
		}
	}
	r.failAt(p, a, value, format, args...)
}

// record remembers where the value of a field was written, recordKey where its key was.
func (r *reader) record(a at, n *yaml.Node) {
	if r.src != nil {
		r.src.put(a.task, a.path, nodePos(n))
	}
}

func (r *reader) recordKey(a at, n *yaml.Node) {
	if r.src != nil {
		r.src.put(a.task, a.path+keySuffix, nodePos(n))
	}
}

// resolve looks through an alias to the node holding the value. It returns nil for a null,
// and ok=false after reporting an unknown alias.
func (r *reader) resolve(n *yaml.Node, a at) (*yaml.Node, bool) {
	n = r.peek(n)
	if n != nil && n.Kind == yaml.ScalarNode && r.unknown != nil {
		if name, ok := r.unknown[yamlfile.At(n)]; ok {
			r.fail(n, a, name, "unknown alias *%s", name)
			return nil, false
		}
	}
	return n, true
}

// peek resolves like resolve but reports nothing: for looking at a value that is then read
// (and its problems reported) by another method.
func (r *reader) peek(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if yamlfile.IsNull(n) {
		return nil
	}
	return n
}

// entry is one key: value pair of a mapping, after merge keys are expanded.
type entry struct {
	key   string
	keyN  *yaml.Node
	value *yaml.Node
}

// mapping returns the entries of a mapping node in order. Keys merged with `<<` come first
// unless the mapping sets them itself, as YAML's merge key says.
func (r *reader) mapping(n *yaml.Node, a at) ([]entry, bool) {
	return r.mappingDepth(n, a, 0)
}

func (r *reader) mappingDepth(n *yaml.Node, a at, depth int) ([]entry, bool) {
	orig := n
	n, ok := r.resolve(n, a)
	if !ok {
		return nil, false
	}
	if n == nil {
		return nil, true
	}
	if n.Kind != yaml.MappingNode {
		r.fail(orig, a, scalarText(n), "expected a mapping, got %s", describe(n))
		return nil, false
	}
	if depth > 16 {
		r.fail(orig, a, "", "merge keys nested too deeply")
		return nil, false
	}
	var own, merged []entry
	ok = true
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && yamlfile.Tag(k) == "!!merge" {
			es, mok := r.mergeSources(v, a, depth)
			ok = ok && mok
			merged = append(merged, es...)
			continue
		}
		kn, kok := r.resolve(k, a)
		if !kok {
			ok = false
			continue
		}
		if kn == nil || kn.Kind != yaml.ScalarNode {
			r.fail(k, a, "", "mapping keys must be scalars")
			ok = false
			continue
		}
		own = append(own, entry{key: scalarText(kn), keyN: k, value: v})
	}
	if len(merged) == 0 {
		return own, ok
	}
	seen := make(map[string]bool, len(own))
	for _, e := range own {
		seen[e.key] = true
	}
	out := make([]entry, 0, len(own)+len(merged))
	for _, e := range merged {
		if !seen[e.key] {
			seen[e.key] = true
			out = append(out, e)
		}
	}
	return append(out, own...), ok
}

// mergeSources reads the value of a `<<` key: a mapping or a list of mappings, earlier ones
// taking precedence.
func (r *reader) mergeSources(n *yaml.Node, a at, depth int) ([]entry, bool) {
	v, ok := r.resolve(n, a)
	if !ok || v == nil {
		return nil, ok
	}
	sources := []*yaml.Node{n}
	if v.Kind == yaml.SequenceNode {
		sources = v.Content
	}
	var out []entry
	seen := map[string]bool{}
	ok = true
	for _, s := range sources {
		es, sok := r.mappingDepth(s, a, depth+1)
		ok = ok && sok
		for _, e := range es {
			if !seen[e.key] {
				seen[e.key] = true
				out = append(out, e)
			}
		}
	}
	return out, ok
}

// sequence returns the items of a list.
func (r *reader) sequence(n *yaml.Node, a at) ([]*yaml.Node, bool) {
	orig := n
	n, ok := r.resolve(n, a)
	if !ok || n == nil {
		return nil, ok
	}
	if n.Kind != yaml.SequenceNode {
		r.fail(orig, a, scalarText(n), "expected a list, got %s", describe(n))
		return nil, false
	}
	return n.Content, true
}
