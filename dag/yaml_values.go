package dag

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/poolflow/poolflow/internal/yamlfile"
)

// scalarText is the text of a scalar as written (a string's decoded value); "" for
// collections and null.
func scalarText(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// describe names what a node holds, for "expected X, got Y" errors.
func describe(n *yaml.Node) string { return yamlfile.Describe(n) }

// tagOf is the resolved type of a scalar ("!!int", "!!str", ...); "" for anything else.
func tagOf(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return yamlfile.Tag(n)
}

// str reads a string field; other scalars are taken by their text.
func (r *reader) str(n *yaml.Node, a at) (string, bool) {
	orig := n
	n, ok := r.resolve(n, a)
	if !ok || n == nil {
		return "", false
	}
	if n.Kind != yaml.ScalarNode {
		r.fail(orig, a, "", "expected a string, got %s", describe(n))
		return "", false
	}
	return n.Value, true
}

// integer reads an int field. Quoted numbers are refused: they are strings in YAML.
func (r *reader) integer(n *yaml.Node, a at) (int, bool) {
	orig := n
	n, ok := r.resolve(n, a)
	if !ok || n == nil {
		return 0, false
	}
	if tagOf(n) != "!!int" {
		r.fail(orig, a, scalarText(n), "expected an integer, got %s", describe(n))
		return 0, false
	}
	var v int64
	if err := n.Decode(&v); err == nil && v >= math.MinInt32 && v <= math.MaxInt32 {
		return int(v), true
	}
	r.fail(orig, a, n.Value, "integer %s out of range", n.Value)
	return 0, false
}

func (r *reader) boolean(n *yaml.Node, a at) (bool, bool) {
	orig := n
	n, ok := r.resolve(n, a)
	if !ok || n == nil {
		return false, false
	}
	var b bool
	if tagOf(n) != "!!bool" || n.Decode(&b) != nil {
		r.fail(orig, a, scalarText(n), "expected true or false, got %s", describe(n))
		return false, false
	}
	return b, true
}

// duration reads a Go duration ("30s", "1h30m") or integer seconds; negative ones are refused.
func (r *reader) duration(n *yaml.Node, a at) (time.Duration, bool) {
	orig := n
	n, ok := r.resolve(n, a)
	if !ok || n == nil {
		return 0, false
	}
	if n.Kind != yaml.ScalarNode {
		r.fail(orig, a, "", "expected a duration, got %s", describe(n))
		return 0, false
	}
	d, err := parseDuration(n)
	if err != nil {
		r.fail(orig, a, n.Value, "%v", err)
		return 0, false
	}
	if d < 0 {
		r.fail(orig, a, n.Value, "must not be negative, got %s", n.Value)
		return 0, false
	}
	return d, true
}

// maxSeconds keeps integer seconds inside time.Duration.
const maxSeconds = math.MaxInt64 / int64(time.Second)

func parseDuration(n *yaml.Node) (time.Duration, error) {
	if tagOf(n) == "!!int" {
		var v int64
		if err := n.Decode(&v); err != nil || v < -maxSeconds || v > maxSeconds {
			return 0, fmt.Errorf("duration %s seconds out of range", n.Value)
		}
		return time.Duration(v) * time.Second, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: use a Go duration like 30s or 1h30m, or integer seconds", n.Value)
	}
	return d, nil
}

// positiveDuration reads a duration whose zero would silently mean the default.
func (r *reader) positiveDuration(n *yaml.Node, a at) (time.Duration, bool) {
	d, ok := r.duration(n, a)
	if ok && d == 0 {
		r.fail(n, a, "0", "must be positive")
		return 0, false
	}
	return d, ok
}

// atLeastOne reads a limit whose zero would silently mean the default.
func (r *reader) atLeastOne(n *yaml.Node, a at) (int, bool) {
	v, ok := r.integer(n, a)
	if ok && v < 1 {
		r.fail(n, a, scalarText(r.peek(n)), "must be at least 1, got %d", v)
	}
	return v, ok
}

// timestamp reads an RFC 3339 time, or a plain date meaning midnight UTC.
func (r *reader) timestamp(n *yaml.Node, a at) (time.Time, bool) {
	text, ok := r.str(n, a)
	if !ok {
		return time.Time{}, false
	}
	text = strings.TrimSpace(text)
	if t, err := time.Parse(time.RFC3339Nano, text); err == nil {
		return t, true
	}
	if t, err := time.Parse(time.DateOnly, text); err == nil {
		return t, true
	}
	r.fail(n, a, text, "invalid time %q: use RFC 3339 like 2026-01-01T00:00:00Z", text)
	return time.Time{}, false
}

// strList reads a list of strings, recording each item's position under path[i].
func (r *reader) strList(n *yaml.Node, a at) ([]string, bool) {
	items, ok := r.sequence(n, a)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		ia := a.index(i)
		s, sok := r.str(it, ia)
		if !sok {
			ok = false
			continue
		}
		r.record(ia, it)
		out = append(out, s)
	}
	return out, ok
}

// ids reads a list of task ids; a single id may be written without brackets (depends_on).
func (r *reader) ids(n *yaml.Node, a at) ([]string, bool) {
	if v, ok := r.resolve(n, a); !ok {
		return nil, false
	} else if v != nil && v.Kind == yaml.ScalarNode {
		r.record(a.index(0), n)
		return []string{v.Value}, true
	}
	return r.strList(n, a)
}

// argv reads a command line as a list; a string is refused because poolflow never splits a
// command line itself (that is what bash: is for).
func (r *reader) argv(n *yaml.Node, a at) ([]string, bool) {
	if v, ok := r.resolve(n, a); !ok {
		return nil, false
	} else if v != nil && v.Kind == yaml.ScalarNode {
		r.fail(n, a, v.Value, "expected a list of strings (argv); use bash: for a shell command line")
		return nil, false
	}
	l, ok := r.strList(n, a)
	if ok && l == nil {
		l = []string{}
	}
	return l, ok
}

// strMap reads a mapping of strings to scalars (env), recording the position of each key
// under path.name:key and of each value under path.name.
func (r *reader) strMap(n *yaml.Node, a at) (map[string]string, bool) {
	return readMap(r, n, a, "a string", r.str)
}

// intMap reads a mapping of names to integers (pool_requirements), recorded as strMap.
func (r *reader) intMap(n *yaml.Node, a at) (map[string]int, bool) {
	return readMap(r, n, a, "an integer", r.integer)
}

// A key without a value is refused rather than left out: in a flow mapping, {db:1} is the
// key "db:1" with no value, not db: 1.
func readMap[V any](r *reader, n *yaml.Node, a at, want string, read func(*yaml.Node, at) (V, bool)) (map[string]V, bool) {
	es, ok := r.mapping(n, a)
	if !ok {
		return nil, false
	}
	out := make(map[string]V, len(es))
	for _, e := range es {
		ea := a.child(e.key)
		r.recordKey(ea, e.keyN)
		r.record(ea, e.value)
		if r.peek(e.value) == nil {
			r.fail(e.value, ea, "", "expected %s, got null", want)
			ok = false
			continue
		}
		v, vok := read(e.value, ea)
		if !vok {
			ok = false
			continue
		}
		out[e.key] = v
	}
	return out, ok
}

// params reads the DAG's params: a mapping of plain values.
func (r *reader) params(n *yaml.Node, a at) (map[string]any, bool) {
	v, ok := r.value(n, a)
	if !ok || v == nil {
		return nil, ok
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		r.fail(n, a, "", "expected a mapping, got %s", describe(r.peek(n)))
		return nil, false
	}
	return m, true
}

// value converts any node to plain Go values (params): map[string]any, []any, string, int64
// (uint64 above its range), float64, bool or nil.
func (r *reader) value(n *yaml.Node, a at) (any, bool) {
	orig := n
	n, ok := r.resolve(n, a)
	if !ok || n == nil {
		return nil, ok
	}
	switch n.Kind {
	case yaml.MappingNode:
		es, mok := r.mapping(n, a)
		out := make(map[string]any, len(es))
		for _, e := range es {
			val, vok := r.value(e.value, a.child(e.key))
			mok = mok && vok
			out[e.key] = val
		}
		return out, mok
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		sok := true
		for i, it := range n.Content {
			val, vok := r.value(it, a.index(i))
			sok = sok && vok
			out = append(out, val)
		}
		return out, sok
	}
	switch tagOf(n) {
	case "!!int":
		if i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64); err == nil {
			return i, true
		}
		var v any
		if err := n.Decode(&v); err == nil {
			switch x := v.(type) {
			case int:
				return int64(x), true
			case int64, uint64:
				return x, true
			}
		}
	case "!!float":
		var f float64
		if err := n.Decode(&f); err == nil {
			if math.IsInf(f, 0) || math.IsNaN(f) {
				// Params travel as JSON (POOLFLOW_PARAMS), which has no infinities or NaN.
				r.fail(orig, a, n.Value, "%s is not a finite number", n.Value)
				return nil, false
			}
			return f, true
		}
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err == nil {
			return b, true
		}
	default:
		return n.Value, true
	}
	r.fail(orig, a, "", "unsupported value %s", describe(n))
	return nil, false
}
