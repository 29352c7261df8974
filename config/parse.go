package config

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/poolflow/poolflow/internal/yamlfile"
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
	r := &reader{file: path, data: data, poolPos: map[string]map[string]pos{}}
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
	data []byte
	// unknown are the aliases that name no anchor (yamlfile.File.Unknown), read as scalars.
	unknown map[yamlfile.Pos]string
	errs    []*Error
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
func (r *reader) document(data []byte) (*yaml.Node, error) {
	f, err := yamlfile.Parse(data)
	if err != nil {
		e := err.(*yamlfile.Error)
		return nil, joinErrors([]*Error{{File: r.file, Line: e.Line, Column: e.Column, Msg: e.Msg}})
	}
	r.unknown = f.Unknown
	switch len(f.Docs) {
	case 0:
		return nil, nil
	case 1:
		return f.Docs[0], nil
	}
	r.fail(position(f.Docs[1], pos{}), "", "only one YAML document is allowed")
	return nil, joinErrors(r.errs)
}

// unwrap returns n, nil for no value, and an alias node for an alias that names no anchor
// (aliases are not supported here, known or not).
func (r *reader) unwrap(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.ScalarNode && r.unknown != nil {
		if name, ok := r.unknown[yamlfile.At(n)]; ok {
			return &yaml.Node{Kind: yaml.AliasNode, Value: name, Line: n.Line, Column: n.Column}
		}
	}
	return n
}

func position(n *yaml.Node, fallback pos) pos {
	if n == nil || n.Line <= 0 {
		return fallback
	}
	return pos{n.Line, n.Column}
}

// field is one key: value of a mapping being read.
type field struct {
	key   string
	path  string // dotted path for messages
	at    pos    // the key
	value *yaml.Node
}

func (f field) valuePos() pos { return position(f.value, f.at) }

// fields lists a mapping's entries; a missing or null value is an empty mapping. Unknown
// keys are reported against allowed and left out.
func (r *reader) fields(n *yaml.Node, path string, fallback pos, allowed ...string) []field {
	n = r.unwrap(n)
	switch {
	case yamlfile.IsNull(n):
		return nil
	case n.Kind != yaml.MappingNode:
		r.bad(field{path: path, at: position(n, fallback), value: n}, "a mapping")
		return nil
	}
	out := make([]field, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := r.unwrap(n.Content[i])
		f := field{key: k.Value, at: position(k, fallback), value: r.unwrap(n.Content[i+1])}
		f.path = f.key
		if path != "" {
			f.path = path + "." + f.key
		}
		if allowed != nil && !slices.Contains(allowed, f.key) {
			r.fail(f.at, f.path, "unknown field (want one of %s)", strings.Join(allowed, ", "))
			continue
		}
		out = append(out, f)
	}
	return out
}

// tag is the type of a scalar (!!str, !!int, ...); "" for anything else.
func tag(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return yamlfile.Tag(n)
}

// describe names a node's kind for "want X, got Y" messages.
func describe(n *yaml.Node) string {
	switch {
	case yamlfile.IsNull(n):
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.AliasNode:
		return "an alias (not supported)"
	}
	switch tag(n) {
	case "!!str", "!!timestamp", "!!binary":
		return strconv.Quote(n.Value)
	}
	return n.Value
}

// bad reports a value of the wrong kind.
func (r *reader) bad(f field, want string) {
	switch {
	case yamlfile.IsNull(f.value):
		r.fail(f.valuePos(), f.path, "missing value (want %s)", want)
	case f.value.Kind != yaml.ScalarNode:
		r.fail(f.valuePos(), f.path, "want %s, got %s", want, describe(f.value))
	default:
		r.fail(f.valuePos(), f.path, "invalid value %s (want %s)", describe(f.value), want)
	}
}

func (r *reader) int(f field, want string) (int, bool) {
	var v int
	if tag(f.value) == "!!int" && f.value.Decode(&v) == nil {
		return v, true
	}
	r.bad(f, want)
	return 0, false
}

// str reads a scalar as text: a number or boolean where text is wanted (an API token, a pool
// named 2024) is taken as written; a null is "".
func (r *reader) str(f field) (string, bool) {
	switch {
	case yamlfile.IsNull(f.value):
		return "", true
	case f.value.Kind == yaml.ScalarNode:
		return f.value.Value, true
	}
	r.bad(f, "a string")
	return "", false
}

func (r *reader) bool(f field) (bool, bool) {
	var b bool
	if tag(f.value) == "!!bool" && f.value.Decode(&b) == nil {
		return b, true
	}
	r.bad(f, "true or false")
	return false, false
}

// duration reads a Go duration ("10m") or integer seconds.
func (r *reader) duration(f field) (time.Duration, bool) {
	const want = "a duration such as 30s or 10m, or integer seconds"
	var d time.Duration
	switch tag(f.value) {
	case "!!int":
		secs, ok := r.int(f, want)
		if !ok {
			return 0, false
		}
		if secs > int(time.Duration(1<<63-1)/time.Second) {
			r.fail(f.valuePos(), f.path, "invalid value %d (too long)", secs)
			return 0, false
		}
		d = time.Duration(secs) * time.Second
	case "!!str", "!!timestamp":
		var err error
		if d, err = time.ParseDuration(f.value.Value); err != nil {
			r.fail(f.valuePos(), f.path, "invalid value %q (want %s)", f.value.Value, want)
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

// age reads how long history is kept (retention): days ("90d"), or a Go duration with its unit
// ("36h", "90m"); null or 0 keeps it for good. A bare number is refused: days or seconds?
func (r *reader) age(f field) (time.Duration, bool) {
	const want = "an age such as 90d, 36h or 30m; 0 keeps everything"
	if yamlfile.IsNull(f.value) {
		return 0, true
	}
	v := f.value.Value
	if tag(f.value) == "!!int" && v == "0" {
		return 0, true
	}
	if tag(f.value) != "!!str" {
		r.fail(f.valuePos(), f.path, "invalid value %s (want %s)", v, want)
		return 0, false
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 100*365 {
			r.fail(f.valuePos(), f.path, "invalid value %q (want %s)", v, want)
			return 0, false
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d < 0 {
			r.fail(f.valuePos(), f.path, "invalid value %q (want %s)", v, want)
			return 0, false
		}
	}
	return d, true
}

// blockStart is where the text of a literal or folded scalar (`|`, `>`) begins: the first
// line after its indicator that holds something, at its indentation.
func (r *reader) blockStart(n *yaml.Node) pos {
	line, off := 1, 0
	for off < len(r.data) {
		end := len(r.data)
		if i := bytes.IndexByte(r.data[off:], '\n'); i >= 0 {
			end = off + i
		}
		if text := r.data[off:end]; line > n.Line && len(bytes.TrimSpace(text)) > 0 {
			return pos{line, len(text) - len(bytes.TrimLeft(text, " ")) + 1}
		}
		off, line = end+1, line+1
	}
	return pos{n.Line, n.Column}
}
