package rules

import (
	"fmt"

	"github.com/expr-lang/expr/vm"
)

// Assign picks the pool and slots for an attempt with attributes a: the first rule, lowest
// priority first, whose condition holds; otherwise the default pool with one slot. A condition
// that fails to evaluate counts as not matching. Assign never panics and is deterministic.
func (s *Set) Assign(a Attrs) Result {
	ev, _ := s.evaluators.Get().(*evaluator)
	if ev == nil {
		ev = newEvaluator()
	}
	ev.load(a)
	defer func() {
		ev.release()
		s.evaluators.Put(ev)
	}()

	res := Result{Rules: make([]Trace, 0, len(s.rules))}
	for _, r := range s.rules {
		matched, errText, ok := r.eval(&ev.machine, ev.env)
		if !ok {
			// The machine may be mid-instruction after a panic; a fresh one is cheaper than
			// reasoning about its state.
			ev.machine = vm.VM{}
		}
		res.Rules = append(res.Rules, Trace{Name: r.name, Priority: r.priority, Matched: matched, Error: errText})
		if errText != "" {
			s.warnOnce(r, a, errText)
		}
		if matched {
			res.Rule, res.Pool, res.Slots = r.name, r.pool, r.slots
			res.Why = fmt.Sprintf("rule %s (priority %d) matched", r.name, r.priority)
			return res
		}
	}
	res.Pool, res.Slots = s.defaultPool, 1
	if len(s.rules) == 0 {
		res.Why = "no rules configured: default pool"
	} else {
		res.Why = "no rule matched: default pool"
	}
	return res
}

// eval runs one condition. ok is false when it panicked past expr's own recovery.
func (r *rule) eval(machine *vm.VM, env map[string]any) (matched bool, errText string, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			matched, errText, ok = false, fmt.Sprintf("panic: %v", p), false
		}
	}()
	out, err := machine.Run(r.program, env)
	if err != nil {
		return false, oneLine(err), true
	}
	b, isBool := out.(bool)
	if !isBool {
		return false, fmt.Sprintf("condition gave %T, not bool", out), true
	}
	return b, "", true
}

// warnOnce logs a rule's first runtime error. One line per rule is enough to notice a broken
// rule; logging every attempt would bury everything else.
func (s *Set) warnOnce(r *rule, a Attrs, errText string) {
	if !r.warned.CompareAndSwap(false, true) {
		return
	}
	s.log().Warn("pool rule failed to evaluate and does not match; further failures of this rule are not logged",
		"rule", r.name, "priority", r.priority, "error", errText,
		"dag_id", a.DAGID, "task_id", a.TaskID, "run_id", a.RunID, "try_number", a.TryNumber)
}
