package dag

import (
	"fmt"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// reader turns YAML AST nodes into Go values, recording every problem as an ImportError with
// the node's position and the positions of the fields it reads in a sourceMap.
type reader struct {
	file    string
	dagID   string
	errs    []*ImportError
	src     *sourceMap
	pieces  *taskPieces // the task list, when it is parsed in pieces
	anchors map[string]ast.Node
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

func newReader(file string, src *sourceMap) *reader {
	return &reader{file: file, src: src, anchors: map[string]ast.Node{}, reported: map[errKey]bool{}}
}

func position(n ast.Node) srcPos {
	if n == nil {
		return srcPos{}
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil {
		return srcPos{}
	}
	if tk.Type == token.ImplicitNullType && tk.Next == nil && tk.Prev != nil && tk.Prev.Position != nil {
		// A missing value at the end of the tokens: the parser places it by what came before
		// the ':' or '-' (a column further, or a line down, than anywhere else), and a task
		// list parsed in pieces has such an end after every piece. Just after its indicator,
		// as everywhere else.
		return srcPos{tk.Prev.Position.Line, tk.Prev.Position.Column + 1}
	}
	return srcPos{tk.Position.Line, tk.Position.Column}
}

// nodePos is where an error about n points: the first key of a block mapping rather than its
// first ':' token.
func nodePos(n ast.Node) srcPos {
	if m, ok := n.(*ast.MappingNode); ok && !m.IsFlowStyle && len(m.Values) > 0 {
		return position(m.Values[0].Key)
	}
	return position(n)
}

// fail records an error at n, marking the field as bad so that later checks skip it.
func (r *reader) fail(n ast.Node, a at, value, format string, args ...any) {
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

// record remembers where the value of a field was written.
func (r *reader) record(a at, n ast.Node) { r.src.put(a.task, a.path, nodePos(n)) }

// collectAnchors indexes every anchor of the document so aliases can be resolved. YAML lets a
// later anchor reuse a name; the last definition wins here, which only matters for files that
// redefine an anchor after using it.
func collectAnchors(n ast.Node) map[string]ast.Node {
	anchors := map[string]ast.Node{}
	ast.Walk(visitFunc(func(n ast.Node) {
		if a, ok := n.(*ast.AnchorNode); ok && a.Name != nil && a.Value != nil {
			anchors[a.Name.GetToken().Value] = a.Value
		}
	}), n)
	return anchors
}

type visitFunc func(ast.Node)

func (f visitFunc) Visit(n ast.Node) ast.Visitor {
	f(n)
	return f
}

// resolve looks through anchors, aliases and tags to the node holding the value. It returns
// nil for an explicit or implicit null, and ok=false after reporting an unknown alias.
func (r *reader) resolve(n ast.Node, a at) (ast.Node, bool) {
	for range 64 {
		switch v := n.(type) {
		case nil, *ast.NullNode:
			return nil, true
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		case *ast.AliasNode:
			name := ""
			if v.Value != nil {
				name = v.Value.GetToken().Value
			}
			target, ok := r.anchors[name]
			if !ok {
				r.fail(v, a, name, "unknown alias *%s", name)
				return nil, false
			}
			n = target
		default:
			return n, true
		}
	}
	r.fail(n, a, "", "aliases nested too deeply")
	return nil, false
}

// peek resolves like resolve but reports nothing: for looking at a value
// that is then read (and its problems reported) by another method.
func (r *reader) peek(n ast.Node) ast.Node {
	for range 64 {
		switch v := n.(type) {
		case nil, *ast.NullNode:
			return nil
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		case *ast.AliasNode:
			if v.Value == nil {
				return v
			}
			target, ok := r.anchors[v.Value.GetToken().Value]
			if !ok {
				return v
			}
			n = target
		default:
			return n
		}
	}
	return n
}

// entry is one key: value pair of a mapping, after merge keys are expanded.
type entry struct {
	key   string
	keyN  ast.Node
	value ast.Node
}

// mapping returns the entries of a mapping node in order. Keys merged with `<<` come first
// unless the mapping sets them itself, as YAML's merge key says.
func (r *reader) mapping(n ast.Node, a at) ([]entry, bool) {
	return r.mappingDepth(n, a, 0)
}

func (r *reader) mappingDepth(n ast.Node, a at, depth int) ([]entry, bool) {
	orig := n
	n, ok := r.resolve(n, a)
	if !ok {
		return nil, false
	}
	if n == nil {
		return nil, true
	}
	m, isMap := n.(*ast.MappingNode)
	if !isMap {
		r.fail(orig, a, scalarText(n), "expected a mapping, got %s", describe(n))
		return nil, false
	}
	if depth > 16 {
		r.fail(orig, a, "", "merge keys nested too deeply")
		return nil, false
	}
	var own, merged []entry
	ok = true
	for _, mv := range m.Values {
		if mk, isMerge := mv.Key.(*ast.MergeKeyNode); isMerge && mk != nil {
			es, mok := r.mergeSources(mv.Value, a, depth)
			ok = ok && mok
			merged = append(merged, es...)
			continue
		}
		kn, kok := r.resolve(mv.Key, a)
		if !kok {
			ok = false
			continue
		}
		key, isScalar := scalarString(kn)
		if !isScalar {
			r.fail(mv.Key, a, "", "mapping keys must be scalars")
			ok = false
			continue
		}
		own = append(own, entry{key: key, keyN: mv.Key, value: mv.Value})
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
func (r *reader) mergeSources(n ast.Node, a at, depth int) ([]entry, bool) {
	v, ok := r.resolve(n, a)
	if !ok || v == nil {
		return nil, ok
	}
	var sources []ast.Node
	if seq, isSeq := v.(*ast.SequenceNode); isSeq {
		sources = seq.Values
	} else {
		sources = []ast.Node{n}
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
func (r *reader) sequence(n ast.Node, a at) ([]ast.Node, bool) {
	orig := n
	n, ok := r.resolve(n, a)
	if !ok || n == nil {
		return nil, ok
	}
	s, isSeq := n.(*ast.SequenceNode)
	if !isSeq {
		r.fail(orig, a, scalarText(n), "expected a list, got %s", describe(n))
		return nil, false
	}
	return s.Values, true
}
