package decide

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pureImports are the packages the decision (this package) and memory (executor/state) may
// import: computation over values, no store handle, no clock, no OS. The store, pools, owners,
// explain, backfill and config packages are there for their types and pure functions; what of them does
// I/O (a Store's methods, owners.ProcessAlive, explain.Reasons, config.SyncPools, a notify.Sender) takes an
// argument neither package can make.
var pureImports = map[string]bool{
	"encoding/json": true, "errors": true, "fmt": true, "log/slog": true, "slices": true, "sort": true,
	"strings": true, "time": true, "maps": true, "iter": true, "math": true, "hash/fnv": true,
	"github.com/robfig/cron/v3": true,
}

var pureProject = []string{"dag", "pools", "rules", "store", "vocab", "owners", "explain", "backfill", "config", "notify",
	"executor/attempt", "executor/state"}

// impure are the calls that read a clock, the OS or chance: the pass's time comes in Input.Now.
var impure = map[string]map[string]bool{
	"time": {"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "AfterFunc": true,
		"NewTimer": true, "NewTicker": true, "Tick": true},
}

// TestDecisionIsPure: package decide and package state import nothing that does I/O and call
// no clock. Issue 22 asks that decide be pure (no store, no clock, no OS), so a pass's plan is
// a function of memory, its input and its time, testable without a daemon.
func TestDecisionIsPure(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{".", "../state"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			names := map[string]string{} // local name → import path
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if !allowed(p) {
					t.Errorf("%s imports %s: the decision and memory do no I/O", fset.Position(imp.Pos()), p)
				}
				name := filepath.Base(p)
				if imp.Name != nil {
					name = imp.Name.Name
				}
				names[name] = p
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && impure[names[x.Name]][sel.Sel.Name] {
					t.Errorf("%s calls %s.%s: the pass's time comes in Input.Now", fset.Position(sel.Pos()), x.Name, sel.Sel.Name)
				}
				return true
			})
		}
	}
}

func allowed(p string) bool {
	if pureImports[p] {
		return true
	}
	for _, q := range pureProject {
		if p == "github.com/poolflow/poolflow/"+q {
			return true
		}
	}
	return false
}
