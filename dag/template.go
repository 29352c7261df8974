package dag

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
)

// Templates (§14): a string of a command item, an env value, a sensor field, a params default
// or a pool requirement may hold ${{ expression }} parts, written in expr-lang (the language of
// the pool rules). They are compiled when the DAG is validated and evaluated when the task is
// queued, over TemplateVars.

// TemplateVars are the values a template reads.
type TemplateVars struct {
	DAGID       string         `expr:"dag_id"`
	RunID       string         `expr:"run_id"`
	LogicalDate time.Time      `expr:"logical_date"`
	DS          string         `expr:"ds"`        // the logical date as 2006-01-02 (Airflow's ds)
	DSNoDash    string         `expr:"ds_nodash"` // as 20060102
	Params      map[string]any `expr:"params"`
	Conf        map[string]any `expr:"conf"`
	TryNumber   int            `expr:"try_number"`
	// Item and MapIndex are a mapped task instance's item and index (MapIndex -1 otherwise).
	Item     any `expr:"item"`
	MapIndex int `expr:"map_index"`
	// Tasks are the outputs of the upstream tasks the templates read, by task id.
	Tasks map[string]TaskOutputs `expr:"tasks"`
}

// TaskOutputs is what a template reads of an upstream task: its output, and for a mapped task
// the outputs of all its instances in map_index order.
type TaskOutputs struct {
	Output  map[string]any `expr:"output"`
	Outputs []any          `expr:"outputs"`
}

// paramsVars are the values a params default's template reads: the run, not its tasks.
type paramsVars struct {
	DAGID       string         `expr:"dag_id"`
	RunID       string         `expr:"run_id"`
	LogicalDate time.Time      `expr:"logical_date"`
	DS          string         `expr:"ds"`
	DSNoDash    string         `expr:"ds_nodash"`
	Conf        map[string]any `expr:"conf"`
}

const (
	tmplOpen  = "${{"
	tmplClose = "}}"
)

// HasTemplate reports whether s holds a ${{ part.
func HasTemplate(s string) bool { return strings.Contains(s, tmplOpen) }

// want is the kind of value a templated field takes.
type want uint8

const (
	wantString want = iota // a command item, env value, sensor field, pool name: text
	wantAmount             // a pool requirement's slots: an integer of at least 1
	wantValue              // a params default written as one whole ${{ }}: any value
	wantList               // expand: one whole ${{ }} giving a list
)

// tmplString is one compiled templated string: literal text and expressions in turn.
type tmplString struct {
	raw   string
	parts []tmplPart
}

type tmplPart struct {
	lit  string
	src  string // the expression, as written between ${{ and }}
	prog *vm.Program
}

// whole reports whether the string is one expression and nothing else.
func (t *tmplString) whole() bool {
	return len(t.parts) == 1 && t.parts[0].prog != nil
}

// templateFuncs are the date functions of §14 beside expr's own builtins.
var templateFuncs = []expr.Option{
	expr.Function("format", func(p ...any) (any, error) {
		return p[0].(time.Time).Format(p[1].(string)), nil
	}, new(func(time.Time, string) string)),
	expr.Function("add", func(p ...any) (any, error) {
		d, err := parseSpan(p[1])
		if err != nil {
			return nil, err
		}
		return p[0].(time.Time).Add(d), nil
	}, new(func(time.Time, string) time.Time), new(func(time.Time, time.Duration) time.Time)),
	expr.Function("truncate_day", func(p ...any) (any, error) {
		t := p[0].(time.Time).UTC()
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC), nil
	}, new(func(time.Time) time.Time)),
}

// parseSpan reads add's span: a duration, or a Go duration text, or N days as "Nd".
func parseSpan(v any) (time.Duration, error) {
	switch x := v.(type) {
	case time.Duration:
		return x, nil
	case string:
		if n, ok := strings.CutSuffix(x, "d"); ok {
			days, err := strconv.Atoi(n)
			if err != nil {
				return 0, fmt.Errorf("add: bad number of days %q", x)
			}
			return time.Duration(days) * 24 * time.Hour, nil
		}
		d, err := time.ParseDuration(x)
		if err != nil {
			return 0, fmt.Errorf("add: %q is not a duration (like 24h, -30m or 7d)", x)
		}
		return d, nil
	}
	return 0, fmt.Errorf("add: %T is not a duration", v)
}

// compileTemplate compiles s against env (TemplateVars or paramsVars). uses receives every task
// id a tasks.<id> reads. A string without ${{ gives nil.
func compileTemplate(s string, env any, w want, uses func(id string)) (*tmplString, error) {
	if !HasTemplate(s) {
		return nil, nil
	}
	t := &tmplString{raw: s}
	rest := s
	for {
		i := strings.Index(rest, tmplOpen)
		if i < 0 {
			if rest != "" {
				t.parts = append(t.parts, tmplPart{lit: rest})
			}
			break
		}
		if i > 0 {
			t.parts = append(t.parts, tmplPart{lit: rest[:i]})
		}
		rest = rest[i+len(tmplOpen):]
		j := strings.Index(rest, tmplClose)
		if j < 0 {
			return nil, fmt.Errorf("%s%s: unclosed %s (end it with %s)", tmplOpen, clip(rest), tmplOpen, tmplClose)
		}
		src := strings.TrimSpace(rest[:j])
		rest = rest[j+len(tmplClose):]
		if src == "" {
			return nil, fmt.Errorf("%s %s: empty expression", tmplOpen, tmplClose)
		}
		prog, err := compileExpr(src, env, uses)
		if err != nil {
			return nil, fmt.Errorf("${{ %s }}: %s", src, oneLine(err))
		}
		t.parts = append(t.parts, tmplPart{src: src, prog: prog})
	}
	if err := t.checkType(w); err != nil {
		return nil, err
	}
	return t, nil
}

func compileExpr(src string, env any, uses func(id string)) (*vm.Program, error) {
	opts := append([]expr.Option{expr.Env(env)}, templateFuncs...)
	prog, err := expr.Compile(src, opts...)
	if err != nil {
		return nil, err
	}
	var bad error
	node := prog.Node()
	ast.Walk(&node, visitor(func(n ast.Node) {
		m, ok := n.(*ast.MemberNode)
		if !ok || bad != nil {
			return
		}
		if id, ok := m.Node.(*ast.IdentifierNode); !ok || id.Value != "tasks" {
			return
		}
		s, ok := m.Property.(*ast.StringNode)
		if !ok {
			bad = errors.New("tasks must be followed by a task id written out (tasks.<id>.output)")
			return
		}
		if uses != nil {
			uses(s.Value)
		}
	}))
	if bad != nil {
		return nil, bad
	}
	return prog, nil
}

type visitor func(ast.Node)

func (v visitor) Visit(n *ast.Node) { v(*n) }

// checkType refuses, at load, an expression whose type is known to be wrong for the field.
func (t *tmplString) checkType(w want) error {
	for _, p := range t.parts {
		if p.prog == nil {
			continue
		}
		typ := p.prog.Node().Type()
		if typ == nil || typ.Kind() == reflect.Interface {
			continue // known only when it runs
		}
		switch {
		case w == wantList && t.whole():
			if k := typ.Kind(); k != reflect.Slice && k != reflect.Array {
				return fmt.Errorf("${{ %s }}: gives %s; expand needs a list", p.src, typeWords(typ))
			}
		case w == wantList:
			return fmt.Errorf("${{ %s }}: expand must be one ${{ }} giving a list, with no text around it", p.src)
		case w == wantValue && t.whole():
		case w == wantAmount && t.whole():
			if k := typ.Kind(); k < reflect.Int || k > reflect.Uint64 {
				return fmt.Errorf("${{ %s }}: gives %s; slots need an integer", p.src, typeWords(typ))
			}
		case isCollection(typ):
			return fmt.Errorf("${{ %s }}: gives %s, not a single value; write one element, or join the list (join(list, \",\"))",
				p.src, typeWords(typ))
		case w == wantAmount:
			return fmt.Errorf("${{ %s }}: slots must be one expression giving an integer, not text around it", p.src)
		}
	}
	return nil
}

func isCollection(typ reflect.Type) bool {
	switch typ.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return true
	case reflect.Struct:
		return typ != reflect.TypeOf(time.Time{})
	}
	return false
}

func typeWords(typ reflect.Type) string {
	switch typ.Kind() {
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a map"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return typ.String()
}

// TemplateError is a template that failed when it was evaluated: the field, the expression and
// what went wrong.
type TemplateError struct {
	Field string
	Expr  string
	Msg   string
}

func (e *TemplateError) Error() string {
	return fmt.Sprintf("template %s: ${{ %s }}: %s", e.Field, e.Expr, e.Msg)
}

// evalString evaluates a templated string to its text.
func (t *tmplString) evalString(env any, field string) (string, error) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.prog == nil {
			b.WriteString(p.lit)
			continue
		}
		v, err := runExpr(p.prog, env)
		if err != nil {
			return "", &TemplateError{field, p.src, err.Error()}
		}
		s, err := valueText(v)
		if err != nil {
			return "", &TemplateError{field, p.src, err.Error()}
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

// evalValue evaluates a templated string that may be one whole expression to its value, any
// type; otherwise to its text.
func (t *tmplString) evalValue(env any, field string) (any, error) {
	if !t.whole() {
		return t.evalString(env, field)
	}
	v, err := runExpr(t.parts[0].prog, env)
	if err != nil {
		return nil, &TemplateError{field, t.parts[0].src, err.Error()}
	}
	return v, nil
}

// evalAmount evaluates a pool requirement's slots.
func (t *tmplString) evalAmount(env any, field string) (int, error) {
	if !t.whole() {
		return 0, &TemplateError{field, t.parts[0].src, "slots must be one expression"}
	}
	v, err := runExpr(t.parts[0].prog, env)
	if err != nil {
		return 0, &TemplateError{field, t.parts[0].src, err.Error()}
	}
	n, ok := intOf(v)
	switch {
	case !ok:
		return 0, &TemplateError{field, t.parts[0].src, fmt.Sprintf("gives %s, slots need an integer", valueWords(v))}
	case n < 1:
		return 0, &TemplateError{field, t.parts[0].src, fmt.Sprintf("slots must be at least 1, got %d", n)}
	}
	return n, nil
}

func runExpr(prog *vm.Program, env any) (v any, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("panic: %v", p)
		}
	}()
	v, err = expr.Run(prog, env)
	if err != nil {
		return nil, errors.New(oneLine(err))
	}
	return v, nil
}

// valueText is how a value is written into a string: strings as they are, numbers in their
// shortest form, a time in RFC 3339. A list, a map or nothing is an error.
func valueText(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case time.Time:
		return x.UTC().Format(time.RFC3339), nil
	case time.Duration:
		return x.String(), nil
	case fmt.Stringer:
		return x.String(), nil
	}
	rv := reflect.ValueOf(v)
	switch {
	case v == nil:
		return "", errors.New("gives nil (a missing key?), not a value")
	case rv.CanInt():
		return strconv.FormatInt(rv.Int(), 10), nil
	case rv.CanUint():
		return strconv.FormatUint(rv.Uint(), 10), nil
	case rv.CanFloat():
		return strconv.FormatFloat(rv.Float(), 'f', -1, 64), nil
	}
	return "", fmt.Errorf("gives %s, not a single value", valueWords(v))
}

func intOf(v any) (int, bool) {
	rv := reflect.ValueOf(v)
	switch {
	case v == nil:
		return 0, false
	case rv.CanInt():
		return int(rv.Int()), true
	case rv.CanUint():
		return int(rv.Uint()), true
	case rv.CanFloat() && rv.Float() == float64(int(rv.Float())):
		return int(rv.Float()), true
	}
	if s, ok := v.(string); ok {
		n, err := strconv.Atoi(s)
		return n, err == nil
	}
	return 0, false
}

func valueWords(v any) string {
	if v == nil {
		return "nil"
	}
	return typeWords(reflect.TypeOf(v))
}

func oneLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
