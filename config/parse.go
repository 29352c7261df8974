package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/poolflow/poolflow/pools"
)

// Parse parses the contents of a poolflow.yaml read from path (used in messages only). An
// empty file, or one with only comments, gives the defaults. Errors are *Error values, all of
// them, in file order, joined: a wrong field does not hide a pool-resolution problem elsewhere.
func Parse(path string, data []byte) (*Config, error) {
	return ParseWith(path, data, Options{})
}

// Options extend Parse.
type Options struct {
	// CheckRules, when set, checks the parsed rules (package rules compiles them; config cannot
	// import it) so that their errors come in the same report as the file's. It returns one
	// error per problem; an error with a position (see Positioned) is sorted in among the others.
	CheckRules func(file string, specs []RuleSpec) []error
}

// Positioned is an error that knows where in the file it is, for ordering a joined report.
type Positioned interface {
	error
	Position() (line, column int)
}

// ParseWith is Parse with opts.
func ParseWith(path string, data []byte, opts Options) (*Config, error) {
	r := &reader{file: path, poolPos: map[string]map[string]pos{}}
	c := &Config{File: path, MaxRunning: DefaultMaxRunning}
	root, err := r.document(data)
	if err != nil {
		return nil, err
	}
	specs := r.root(root, c)
	out, rerrs := build(c, specs, r)
	for _, e := range rerrs {
		// A remainder computed from a max_running that failed to parse is not a finding.
		if r.badMaxRunning && e.Field == "pools."+pools.DefaultPool+".slots" {
			continue
		}
		r.errs = append(r.errs, e)
	}
	var extra []error
	if opts.CheckRules != nil && len(c.Rules) > 0 {
		// Rules whose fields are already reported are left out, so one mistake is one line.
		var ok []RuleSpec
		for i, rule := range c.Rules {
			prefix := fmt.Sprintf("rules[%d]", i)
			if !slices.ContainsFunc(r.errs, func(e *Error) bool {
				return e.Field == prefix || strings.HasPrefix(e.Field, prefix+".")
			}) {
				ok = append(ok, rule)
			}
		}
		if len(ok) > 0 {
			extra = opts.CheckRules(path, ok)
		}
	}
	if len(r.errs) > 0 || len(extra) > 0 {
		return nil, joinAll(r.errs, extra)
	}
	return out, nil
}

// build resolves the pools and lays them out in file order, the default pool last if the file
// does not define it.
func build(c *Config, specs []pools.Spec, r *reader) (*Config, []*Error) {
	resolved, err := pools.Resolve(c.MaxRunning, specs)
	if err != nil {
		return nil, r.specErrors(err)
	}
	c.Pools = make([]pools.Spec, 0, len(resolved))
	for _, s := range specs {
		c.Pools = append(c.Pools, resolved[s.Name])
	}
	if _, ok := c.Pool(pools.DefaultPool); !ok {
		c.Pools = append(c.Pools, resolved[pools.DefaultPool])
	}
	return c, nil
}

type pos struct{ line, col int }

type reader struct {
	file string
	errs []*Error
	// badMaxRunning is set when max_running did not parse: a remainder computed from it is
	// meaningless.
	badMaxRunning bool
	// poolPos locates each pool's fields ("name" is the pool's key) for pools.Resolve errors.
	poolPos map[string]map[string]pos
}

func (r *reader) fail(at pos, field, format string, args ...any) {
	r.errs = append(r.errs, &Error{File: r.file, Line: at.line, Column: at.col, Field: field,
		Msg: fmt.Sprintf(format, args...)})
}

// specErrors places pools.Resolve's errors at the fields they are about.
func (r *reader) specErrors(err error) []*Error {
	all := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		all = j.Unwrap()
	}
	var out []*Error
	for _, e := range all {
		var se *pools.SpecError
		if !errors.As(e, &se) {
			out = append(out, &Error{File: r.file, Msg: e.Error()})
			continue
		}
		field := "pools." + se.Pool
		if se.Field != "name" {
			field += "." + se.Field
		}
		at, ok := r.poolPos[se.Pool][se.Field]
		if !ok {
			at = r.poolPos[se.Pool]["name"]
		}
		out = append(out, &Error{File: r.file, Line: at.line, Column: at.col, Field: field, Msg: se.Msg})
	}
	return out
}

// document parses the YAML and returns its one document's body, nil when there is none.
func (r *reader) document(data []byte) (node ast.Node, err error) {
	defer func() {
		// The YAML library is third-party code fed arbitrary files: a panic there is a parse
		// error here, not a crash of the daemon.
		if p := recover(); p != nil {
			node, err = nil, joinErrors([]*Error{{File: r.file, Msg: fmt.Sprintf("invalid YAML: %v", p)}})
		}
	}()
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		e := &Error{File: r.file, Msg: err.Error()}
		var ye yaml.Error
		if errors.As(err, &ye) {
			e.Msg = ye.GetMessage()
			if tk := ye.GetToken(); tk != nil && tk.Position != nil {
				e.Line, e.Column = tk.Position.Line, tk.Position.Column
			}
		}
		return nil, joinErrors([]*Error{e})
	}
	var body ast.Node
	for _, d := range f.Docs {
		b := unwrap(d.Body)
		if b == nil {
			continue
		}
		if body != nil {
			r.fail(position(b, pos{}), "", "only one YAML document is allowed")
			return nil, joinErrors(r.errs)
		}
		body = b
	}
	return body, nil
}

// unwrap looks through tags, anchors and comments to the value node; nil for no value.
func unwrap(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case nil:
			return nil
		case *ast.TagNode:
			n = v.Value
		case *ast.AnchorNode:
			n = v.Value
		case *ast.CommentGroupNode:
			return nil
		default:
			return n
		}
	}
}

func position(n ast.Node, fallback pos) pos {
	switch v := n.(type) {
	case nil:
		return fallback
	case *ast.MappingNode:
		// A block mapping's own token is not where it starts: its first key is.
		if len(v.Values) > 0 && !v.IsFlowStyle {
			return position(v.Values[0].Key, fallback)
		}
	case *ast.MappingValueNode:
		return position(v.Key, fallback)
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil && tk.Position.Line > 0 {
		return pos{tk.Position.Line, tk.Position.Column}
	}
	return fallback
}

// field is one key: value of a mapping being read.
type field struct {
	key   string
	path  string // dotted path for messages
	at    pos    // the key
	value ast.Node
}

func (f field) valuePos() pos { return position(f.value, f.at) }

// fields lists a mapping's entries; a missing or null value is an empty mapping. Unknown
// keys are reported against allowed and left out.
func (r *reader) fields(n ast.Node, path string, fallback pos, allowed ...string) []field {
	var mvs []*ast.MappingValueNode
	switch v := unwrap(n).(type) {
	case nil, *ast.NullNode:
		return nil
	case *ast.MappingNode:
		mvs = v.Values
	case *ast.MappingValueNode:
		mvs = []*ast.MappingValueNode{v}
	default:
		r.bad(field{path: path, at: position(v, fallback), value: v}, "a mapping")
		return nil
	}
	out := make([]field, 0, len(mvs))
	for _, mv := range mvs {
		f := field{key: keyText(mv.Key), at: position(mv.Key, fallback), value: unwrap(mv.Value)}
		f.path = f.key
		if path != "" {
			f.path = path + "." + f.key
		}
		if allowed != nil && !contains(allowed, f.key) {
			r.fail(f.at, f.path, "unknown field (want one of %s)", strings.Join(allowed, ", "))
			continue
		}
		out = append(out, f)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func keyText(k ast.MapKeyNode) string {
	switch v := unwrap(k).(type) {
	case nil:
		return ""
	case *ast.StringNode:
		return v.Value
	default:
		if tk := v.GetToken(); tk != nil {
			return tk.Value
		}
		return v.String()
	}
}

// describe names a node's kind for "want X, got Y" messages.
func describe(n ast.Node) string {
	switch v := n.(type) {
	case nil:
		return "nothing"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.NullNode:
		return "nothing"
	case *ast.AliasNode:
		return "an alias (not supported)"
	case *ast.StringNode:
		return strconv.Quote(v.Value)
	case *ast.LiteralNode:
		return strconv.Quote(v.Value.Value)
	default:
		if tk := n.GetToken(); tk != nil {
			return tk.Value
		}
		return n.Type().String()
	}
}

// bad reports a value of the wrong kind.
func (r *reader) bad(f field, want string) {
	switch f.value.(type) {
	case nil, *ast.NullNode:
		r.fail(f.valuePos(), f.path, "missing value (want %s)", want)
	case *ast.MappingNode, *ast.MappingValueNode, *ast.SequenceNode, *ast.AliasNode:
		r.fail(f.valuePos(), f.path, "want %s, got %s", want, describe(f.value))
	default:
		r.fail(f.valuePos(), f.path, "invalid value %s (want %s)", describe(f.value), want)
	}
}

func (r *reader) int(f field, want string) (int, bool) {
	if v, ok := f.value.(*ast.IntegerNode); ok {
		switch n := v.Value.(type) {
		case int64:
			if int64(int(n)) == n {
				return int(n), true
			}
		case uint64:
			if n <= uint64(^uint(0)>>1) {
				return int(n), true
			}
		}
	}
	r.bad(f, want)
	return 0, false
}

// str reads a scalar as text: a number or boolean where text is wanted (an API token, a pool
// named 2024) is taken as written; a null is "".
func (r *reader) str(f field) (string, bool) {
	switch v := f.value.(type) {
	case nil, *ast.NullNode:
		return "", true
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		return v.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		return v.GetToken().Value, true
	}
	r.bad(f, "a string")
	return "", false
}

func (r *reader) bool(f field) (bool, bool) {
	if v, ok := f.value.(*ast.BoolNode); ok {
		return v.Value, true
	}
	r.bad(f, "true or false")
	return false, false
}

// duration reads a Go duration ("10m") or integer seconds.
func (r *reader) duration(f field) (time.Duration, bool) {
	const want = "a duration such as 30s or 10m, or integer seconds"
	var d time.Duration
	switch v := f.value.(type) {
	case *ast.IntegerNode:
		secs, ok := r.int(f, want)
		if !ok {
			return 0, false
		}
		if secs > int(time.Duration(1<<63-1)/time.Second) {
			r.fail(f.valuePos(), f.path, "invalid value %d (too long)", secs)
			return 0, false
		}
		d = time.Duration(secs) * time.Second
	case *ast.StringNode:
		var err error
		if d, err = time.ParseDuration(v.Value); err != nil {
			r.fail(f.valuePos(), f.path, "invalid value %q (want %s)", v.Value, want)
			return 0, false
		}
	default:
		r.bad(f, want)
		return 0, false
	}
	if d < 0 {
		r.fail(f.valuePos(), f.path, "invalid value %s (want 0 or more)", d)
		return 0, false
	}
	return d, true
}
