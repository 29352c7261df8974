package vocab

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestNoRawStateLiterals keeps the vocabulary in this package: it parses every non-test .go
// file of the module outside vocab/ (and testdata/) with go/parser, and the UI's templates, and
// fails naming file:line for each raw state literal. What counts:
//
//   - A Go string literal whose whole value is a task, run or entry state ("running", "queued",
//     "waiting", …), wherever it is: those words mean a state in this code base, so they are
//     spelled with this package's constants (vocab.TaskRunning), even in a list, a map key or a
//     const of another package.
//   - A Go string literal whose whole value is a run type (and the API's words for them), a
//     command kind, an ordering, a resize policy, an owner kind or a reason code, where it is
//     used as one: compared (== or !=) with, or a case of a switch on, something named for one
//     (a variable or field whose name ends in State, RunType, Kind, Ordering, OnResize,
//     ReasonCode or Code, possibly through string(…)); the argument of a call of this package
//     (vocab.RunType("manual")); or the value given to such a field or variable (in a composite
//     literal or an assignment). Elsewhere those words are ordinary ones: "test" and "force"
//     name a CLI command and a flag, "schedule" and "timeout" are YAML keys a parser switches on.
//   - In a template action of ui/templates ({{ … }}), a quoted string whose value is any of
//     the words above (a template compares states with eq/ne).
//
// What does not count: literals inside a longer string (SQL such as state = 'waiting' is the
// drivers' business, guarded by the schema's CHECK constraints; messages), struct tags, import
// paths, and test files, which pin the values as they are stored and shown. The allowlist
// below names each remaining exception with its reason.
func TestNoRawStateLiterals(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found above vocab/: %v", err)
	}
	found, err := rawStateLiterals(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: raw %s literal %q: use the vocab constant", f.at, f.kind, f.value)
	}
	t.Logf("%d raw state literals outside vocab/", len(found))
}

// allowed are the literals the check lets through, by file (relative to the module root) and
// value, each with why it is not a state.
var allowed = map[string]string{
	// The list of registered store drivers when there is none, in an error message.
	"store/open.go \"none\"": "not a state: no driver registered",
	// poolflow.yaml's words (§13): an e-mail notifier's starttls: none, a deadline counted from
	// when its run was queued.
	"config/notifiers.go \"none\"": "not a state: starttls none",
	"dag/handlers.go \"queued\"":   "not a state: deadline.from queued",
}

// finding is one raw state literal.
type finding struct {
	at    string // file:line, the file relative to the module root
	value string
	kind  string // what the value is in the vocabulary
}

// vocabulary returns the words that are states (counted anywhere) and the other words (counted
// where used as one), each with what it is.
func vocabulary() (states, words map[string]string) {
	states, words = map[string]string{}, map[string]string{}
	add := func(m map[string]string, kind string, vs []string) {
		for _, v := range vs {
			switch k, ok := m[v]; {
			case !ok:
				m[v] = kind
			case !strings.Contains(k, kind):
				m[v] = k + " or " + kind
			}
		}
	}
	add(states, "task state", Strings(TaskStates()))
	add(states, "run state", Strings(RunStates()))
	add(states, "entry state", Strings(EntryStates()))
	add(words, "run type", Strings(RunTypes()))
	add(words, "run type", RunTypeWords())
	add(words, "command kind", Strings(CommandKinds()))
	add(words, "ordering", Strings(Orderings()))
	add(words, "resize policy", Strings(OnResizes()))
	add(words, "owner kind", Strings(OwnerKinds()))
	add(words, "reason code", Strings(ReasonCodes()))
	add(words, "backfill state", Strings(BackfillStates()))
	add(words, "reprocess behaviour", Strings(Reprocesses()))
	add(words, "backfill action", Strings(BackfillActions()))
	for v := range states {
		delete(words, v) // counted everywhere already
	}
	return states, words
}

// stateFields are the names of fields and variables a vocabulary value is given to.
var stateFields = []string{"State", "RunType", "Kind", "Ordering", "OnResize", "ReasonCode", "Code"}

func rawStateLiterals(root string) ([]finding, error) {
	states, words := vocabulary()
	var found []finding
	keep := func(rel string, line int, value, kind string) {
		if _, ok := allowed[rel+" "+strconv.Quote(value)]; ok {
			return
		}
		found = append(found, finding{at: fmt.Sprintf("%s:%d", rel, line), value: value, kind: kind})
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel == "vocab" || name == "testdata" || (strings.HasPrefix(name, ".") && rel != ".") {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go"):
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			for _, l := range goLiterals(f, states, words) {
				keep(rel, fset.Position(l.lit.Pos()).Line, l.value, l.kind)
			}
		case strings.HasPrefix(rel, "ui/templates/") && strings.HasSuffix(rel, ".html"):
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, l := range templateLiterals(string(b), states, words) {
				keep(rel, l.line, l.value, l.kind)
			}
		}
		return nil
	})
	return found, err
}

type goLiteral struct {
	lit         *ast.BasicLit
	value, kind string
}

// goLiterals finds the raw state literals of one file.
func goLiterals(f *ast.File, states, words map[string]string) []goLiteral {
	skip := map[*ast.BasicLit]bool{}
	for _, imp := range f.Imports {
		skip[imp.Path] = true
	}
	var out []goLiteral
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		if fl, ok := n.(*ast.Field); ok && fl.Tag != nil {
			skip[fl.Tag] = true
		}
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && !skip[lit] {
			if v, err := strconv.Unquote(lit.Value); err == nil {
				if kind, ok := states[v]; ok {
					out = append(out, goLiteral{lit, v, kind})
				} else if kind, ok := words[v]; ok && usedAsWord(lit, stack) {
					out = append(out, goLiteral{lit, v, kind})
				}
			}
		}
		stack = append(stack, n)
		return true
	})
	return out
}

// usedAsWord reports whether lit, whose parents are stack, is used as a vocabulary value:
// compared, a switch case, converted to a vocab type, or given to a state-named field or
// variable.
func usedAsWord(lit *ast.BasicLit, stack []ast.Node) bool {
	if len(stack) == 0 {
		return false
	}
	switch p := stack[len(stack)-1].(type) {
	case *ast.BinaryExpr:
		other := p.X
		if other == ast.Expr(lit) {
			other = p.Y
		}
		return (p.Op == token.EQL || p.Op == token.NEQ) && namesState(other)
	case *ast.CaseClause:
		if len(stack) < 3 || !slices.Contains(p.List, ast.Expr(lit)) {
			return false
		}
		sw, ok := stack[len(stack)-3].(*ast.SwitchStmt) // the clause's parents: a block, then the switch
		return ok && sw.Tag != nil && namesState(sw.Tag)
	case *ast.CallExpr:
		sel, ok := p.Fun.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		pkg, ok := sel.X.(*ast.Ident)
		return ok && pkg.Name == "vocab"
	case *ast.KeyValueExpr:
		key, ok := p.Key.(*ast.Ident)
		return ok && p.Value == ast.Expr(lit) && slices.Contains(stateFields, key.Name)
	case *ast.AssignStmt:
		for i, r := range p.Rhs {
			if r != ast.Expr(lit) || i >= len(p.Lhs) {
				continue
			}
			return namesState(p.Lhs[i])
		}
	}
	return false
}

// namesState reports whether e is a variable or field named for a vocabulary value (its name
// ends in one of stateFields: state, ti.State, run.RunType, v.QueueState), possibly converted
// with string(…).
func namesState(e ast.Expr) bool {
	for {
		switch x := e.(type) {
		case *ast.ParenExpr:
			e = x.X
			continue
		case *ast.CallExpr:
			if fn, ok := x.Fun.(*ast.Ident); ok && fn.Name == "string" && len(x.Args) == 1 {
				e = x.Args[0]
				continue
			}
			return false
		case *ast.SelectorExpr:
			return stateName(x.Sel.Name)
		case *ast.Ident:
			return stateName(x.Name)
		}
		return false
	}
}

func stateName(name string) bool {
	if name == "" {
		return false
	}
	name = strings.ToUpper(name[:1]) + name[1:]
	for _, f := range stateFields {
		if strings.HasSuffix(name, f) {
			return true
		}
	}
	return false
}

type templateLiteral struct {
	line        int
	value, kind string
}

var (
	templateAction = regexp.MustCompile(`(?s)\{\{.*?\}\}`)
	templateString = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"|` + "`([^`]*)`")
)

// templateLiterals finds the vocabulary words quoted inside the template actions of one file.
func templateLiterals(src string, states, words map[string]string) []templateLiteral {
	var out []templateLiteral
	for _, a := range templateAction.FindAllStringIndex(src, -1) {
		action := src[a[0]:a[1]]
		for _, s := range templateString.FindAllStringSubmatchIndex(action, -1) {
			v := action[s[0]+1 : s[1]-1]
			kind, ok := states[v]
			if !ok {
				kind, ok = words[v]
			}
			if ok {
				out = append(out, templateLiteral{line: 1 + strings.Count(src[:a[0]+s[0]], "\n"), value: v, kind: kind})
			}
		}
	}
	return out
}

// TestRawStateLiteralRules pins what the check counts on a small source.
func TestRawStateLiteralRules(t *testing.T) {
	t.Parallel()
	src := `package p

import "github.com/poolflow/poolflow/vocab"

type row struct {
	State string ` + "`json:\"running\"`" + `
}

const mine = "success" // 1: a state, anywhere

func f(r row, kind, key string) {
	_ = r.State == "failed"        // 2
	_ = []string{"waiting"}        // 3: a state in a list
	_ = "state = 'waiting'"        // not the whole value
	_ = kind == "force"            // 4: a command kind compared
	_ = "force"                    // an ordinary word
	_ = key == "schedule"          // a YAML key, say
	_ = vocab.RunType("manual")    // 5
	_ = row{State: "queued"}       // 6
	switch string(r.State) {
	case "strict":                 // 7
	}
	switch key {
	case "timeout":                // a YAML key
	}
	var o struct{ Kind string }
	o.Kind = "test"                // 8
	use("test", "manual")          // ordinary words
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	states, words := vocabulary()
	var got []string
	for _, l := range goLiterals(f, states, words) {
		got = append(got, fmt.Sprintf("%d:%s", fset.Position(l.lit.Pos()).Line, l.value))
	}
	want := []string{"9:success", "12:failed", "13:waiting", "15:force", "18:manual", "19:queued", "21:strict", "27:test"}
	if !slices.Equal(got, want) {
		t.Errorf("found %v, want %v", got, want)
	}
	tpl := "<p id=\"approve\">{{if eq .State \"running\"}}x{{end}}</p>\n{{if eq .Ordering `strict`}}{{.Name}}{{end}}"
	var tgot []string
	for _, l := range templateLiterals(tpl, states, words) {
		tgot = append(tgot, fmt.Sprintf("%d:%s", l.line, l.value))
	}
	if want := []string{"1:running", "2:strict"}; !slices.Equal(tgot, want) {
		t.Errorf("template: found %v, want %v", tgot, want)
	}
}
