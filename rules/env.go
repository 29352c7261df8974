package rules

import (
	"time"

	"github.com/expr-lang/expr/vm"
)

// envTypes declares the names a condition may use and their types. Compiling against a map
// (rather than a struct) keeps the check strict and typed while letting the VM read a name
// with one map lookup; reading a struct field through reflection allocates on every access
// (twice the allocations per 50-rule Assign).
var envTypes = map[string]any{
	"dag_id":       "",
	"task_id":      "",
	"run_id":       "",
	"owner":        "",
	"team":         "",
	"tags":         []string(nil),
	"trigger":      "",
	"params":       map[string]any(nil),
	"try_number":   0,
	"kind":         "",
	"logical_date": time.Time{},
	"item":         map[string]any(nil),
	"map_index":    0,
}

// evaluator is what one Assign needs: a VM and an environment map, both reused through the
// Set's pool so that an evaluation allocates only the boxed attribute values.
type evaluator struct {
	machine vm.VM
	env     map[string]any
}

func newEvaluator() *evaluator {
	return &evaluator{env: make(map[string]any, len(envTypes))}
}

// load writes every name of envTypes; TestEnvCoversEveryName keeps the two in step.
func (e *evaluator) load(a Attrs) {
	env := e.env
	env["dag_id"] = a.DAGID
	env["task_id"] = a.TaskID
	env["run_id"] = a.RunID
	env["owner"] = a.Owner
	env["team"] = a.Team
	env["tags"] = a.Tags
	env["trigger"] = a.Trigger
	env["params"] = a.Params
	env["try_number"] = a.TryNumber
	env["kind"] = a.Kind
	env["logical_date"] = a.LogicalDate
	env["item"] = a.Item
	env["map_index"] = a.MapIndex
}

// release drops references to the caller's slices and maps so a pooled environment does not
// keep them alive.
func (e *evaluator) release() {
	e.env["tags"] = nil
	e.env["params"] = nil
	e.env["item"] = map[string]any(nil)
}
