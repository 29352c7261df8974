package dag

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// scalarString returns the text of a scalar: the decoded value of a string, the literal text
// of a number or boolean.
func scalarString(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		if v.Value == nil {
			return "", true
		}
		return v.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return v.GetToken().Value, true
	}
	return "", false
}

// scalarText is the text shown as the offending value; "" for collections.
func scalarText(n ast.Node) string {
	s, _ := scalarString(n)
	return s
}

// describe names what a node holds, for "expected X, got Y" errors.
func describe(n ast.Node) string {
	switch v := n.(type) {
	case nil:
		return "null"
	case *ast.MappingNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode, *ast.LiteralNode:
		return strconv.Quote(scalarText(v))
	default:
		if s, ok := scalarString(v); ok {
			return s
		}
		return v.Type().String()
	}
}

// str reads a string field; other scalars are taken by their text.
func (r *reader) str(n ast.Node, a at) (string, bool) {
	orig := n
	n, ok := r.resolve(n, a)
	if !ok || n == nil {
		return "", false
	}
	s, isScalar := scalarString(n)
	if !isScalar {
		r.fail(orig, a, "", "expected a string, got %s", describe(n))
		return "", false
	}
	return s, true
}

// integer reads an int field. Quoted numbers are refused: they are strings in YAML.
func (r *reader) integer(n ast.Node, a at) (int, bool) {
	orig := n
	n, ok := r.resolve(n, a)
	if !ok || n == nil {
		return 0, false
	}
	in, isInt := n.(*ast.IntegerNode)
	if !isInt {
		r.fail(orig, a, scalarText(n), "expected an integer, got %s", describe(n))
		return 0, false
	}
	switch v := in.Value.(type) {
	case int64:
		if v >= math.MinInt32 && v <= math.MaxInt32 {
			return int(v), true
		}
	case uint64:
		if v <= math.MaxInt32 {
			return int(v), true
		}
	}
	r.fail(orig, a, scalarText(n), "integer %s out of range", scalarText(n))
	return 0, false
}

func (r *reader) boolean(n ast.Node, a at) (bool, bool) {
	orig := n
	n, ok := r.resolve(n, a)
	if !ok || n == nil {
		return false, false
	}
	b, isBool := n.(*ast.BoolNode)
	if !isBool {
		r.fail(orig, a, scalarText(n), "expected true or false, got %s", describe(n))
		return false, false
	}
	return b.Value, true
}

// duration reads a Go duration ("30s", "1h30m") or integer seconds; negative ones are refused.
func (r *reader) duration(n ast.Node, a at) (time.Duration, bool) {
	orig := n
	n, ok := r.resolve(n, a)
	if !ok || n == nil {
		return 0, false
	}
	text, isScalar := scalarString(n)
	if !isScalar {
		r.fail(orig, a, "", "expected a duration, got %s", describe(n))
		return 0, false
	}
	d, err := parseDuration(n, text)
	if err != nil {
		r.fail(orig, a, text, "%v", err)
		return 0, false
	}
	if d < 0 {
		r.fail(orig, a, text, "must not be negative, got %s", text)
		return 0, false
	}
	return d, true
}

// maxSeconds keeps integer seconds inside time.Duration.
const maxSeconds = math.MaxInt64 / int64(time.Second)

func parseDuration(n ast.Node, text string) (time.Duration, error) {
	if in, isInt := n.(*ast.IntegerNode); isInt {
		switch v := in.Value.(type) {
		case int64:
			if v >= -maxSeconds && v <= maxSeconds {
				return time.Duration(v) * time.Second, nil
			}
		case uint64:
			if v <= uint64(maxSeconds) {
				return time.Duration(v) * time.Second, nil
			}
		}
		return 0, fmt.Errorf("duration %s seconds out of range", text)
	}
	d, err := time.ParseDuration(strings.TrimSpace(text))
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: use a Go duration like 30s or 1h30m, or integer seconds", text)
	}
	return d, nil
}

// timestamp reads an RFC 3339 time, or a plain date meaning midnight UTC.
func (r *reader) timestamp(n ast.Node, a at) (time.Time, bool) {
	orig := n
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
	r.fail(orig, a, text, "invalid time %q: use RFC 3339 like 2026-01-01T00:00:00Z", text)
	return time.Time{}, false
}

// strList reads a list of strings, recording each item's position under path[i].
func (r *reader) strList(n ast.Node, a at) ([]string, bool) {
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

// strMap reads a mapping of strings to scalars (env).
func (r *reader) strMap(n ast.Node, a at) (map[string]string, bool) {
	es, ok := r.mapping(n, a)
	if !ok {
		return nil, false
	}
	out := make(map[string]string, len(es))
	for _, e := range es {
		ea := a.child(e.key)
		r.record(ea.key(), e.keyN)
		r.record(ea, e.value)
		s, sok := r.str(e.value, ea)
		if !sok {
			ok = false
			continue
		}
		out[e.key] = s
	}
	return out, ok
}

// intMap reads a mapping of names to integers (pool_requirements), recording the position of
// each key under path.name:key and of each value under path.name.
func (r *reader) intMap(n ast.Node, a at) (map[string]int, bool) {
	es, ok := r.mapping(n, a)
	if !ok {
		return nil, false
	}
	out := make(map[string]int, len(es))
	for _, e := range es {
		ea := a.child(e.key)
		r.record(ea.key(), e.keyN)
		r.record(ea, e.value)
		v, vok := r.integer(e.value, ea)
		if !vok {
			ok = false
			continue
		}
		out[e.key] = v
	}
	return out, ok
}

// value converts any node to plain Go values (params): map[string]any, []any, string, int64
// (uint64 above its range), float64, bool or nil.
func (r *reader) value(n ast.Node, a at) (any, bool) {
	orig := n
	n, ok := r.resolve(n, a)
	if !ok || n == nil {
		return nil, ok
	}
	switch v := n.(type) {
	case *ast.MappingNode:
		es, mok := r.mapping(v, a)
		out := make(map[string]any, len(es))
		for _, e := range es {
			val, vok := r.value(e.value, a.child(e.key))
			mok = mok && vok
			out[e.key] = val
		}
		return out, mok
	case *ast.SequenceNode:
		out := make([]any, 0, len(v.Values))
		sok := true
		for i, it := range v.Values {
			val, vok := r.value(it, a.index(i))
			sok = sok && vok
			out = append(out, val)
		}
		return out, sok
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		return scalarText(v), true
	case *ast.IntegerNode:
		// The parser gives non-negative integers as uint64; one integer type is easier on
		// the code that reads params.
		if u, ok := v.Value.(uint64); ok && u <= math.MaxInt64 {
			return int64(u), true
		}
		return v.Value, true
	case *ast.FloatNode:
		return v.Value, true
	case *ast.BoolNode:
		return v.Value, true
	case *ast.InfinityNode, *ast.NanNode:
		// Params travel as JSON (POOLFLOW_PARAMS), which has no infinities or NaN.
		r.fail(orig, a, scalarText(v), "%s is not a finite number", scalarText(v))
		return nil, false
	}
	r.fail(orig, a, "", "unsupported value %s", describe(n))
	return nil, false
}
