package rules

import (
	"fmt"

	"github.com/expr-lang/expr/vm"
)

// Assign picks the pool and slots for an attempt with attributes a: the first rule, lowest
// priority first, whose condition holds and whose pool the attempt's team may use; otherwise
// the default pool with one slot. A condition that fails to evaluate counts as not matching; a
// rule that matches but assigns another team's pool is skipped, and its trace says why (§15).
// Assign never panics and is deterministic.
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
		tr := Trace{Name: r.name, Priority: r.priority, Matched: matched, Error: errText}
		if matched && s.refuse != nil {
			tr.Skipped = s.refuse(r.pool, a.Team)
		}
		res.Rules = append(res.Rules, tr)
		if errText != "" {
			s.warnOnce(r, a, errText)
		}
		if tr.Skipped != "" {
			s.warnSkipOnce(r, a, tr.Skipped)
			continue
		}
		if matched {
			res.Rule, res.Pool, res.Slots = r.name, r.pool, r.slots
			res.Why = fmt.Sprintf("rule %s (priority %d) matched", r.name, r.priority)
			return res
		}
	}
	res.Pool, res.Slots = s.defaultPool, 1
	switch {
	case len(s.rules) == 0:
		res.Why = "no rules configured: default pool"
	case res.Skipped() != "":
		res.Why = "no rule matched for team " + teamWord(a.Team) + ": default pool"
	default:
		res.Why = "no rule matched: default pool"
	}
	return res
}

// teamWord names a team in an explanation.
func teamWord(team string) string {
	if team == "" {
		return "(none)"
	}
	return team
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

// warnSkipOnce logs the first time a rule is skipped for a team: the configuration routes some
// team's work to a pool it may not use, which its author wants to hear about once.
func (s *Set) warnSkipOnce(r *rule, a Attrs, why string) {
	if !r.skipped.CompareAndSwap(false, true) {
		return
	}
	s.log().Warn("pool rule matched but assigns a pool the DAG's team may not use; skipped (further skips of this rule are not logged)",
		"rule", r.name, "priority", r.priority, "pool", r.pool, "reason", why,
		"dag_id", a.DAGID, "task_id", a.TaskID, "team", a.Team)
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
