package rules

import (
	"time"

	"github.com/expr-lang/expr/types"
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
	"item":         map[string]any(nil), // a task that is not mapped; see compileTypes
	"map_index":    0,
}

// compileTypes are the types conditions are checked against: envTypes', but `item` is of any
// type, as a mapped task's items are (§14): `item.shard` for a list of objects, `item == "eu"`
// or `item in [...]` for a list of strings or numbers. A condition that reads a field of a
// scalar item fails for that instance (its error is in the trace) and does not match; for a task
// that is not mapped, item is an empty object, so `item.shard` is nil there.
var compileTypes = func() types.Map {
	m := make(types.Map, len(envTypes))
	for name, sample := range envTypes {
		m[name] = types.TypeOf(sample)
	}
	m["item"] = types.Any
	return m
}()

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
	if a.Item != nil {
		env["item"] = a.Item
	} else {
		env["item"] = map[string]any(nil)
	}
	env["map_index"] = a.MapIndex
}

// release drops references to the caller's slices and maps so a pooled environment does not
// keep them alive.
func (e *evaluator) release() {
	e.env["tags"] = nil
	e.env["params"] = nil
	e.env["item"] = map[string]any(nil)
}
