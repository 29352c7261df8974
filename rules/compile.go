package rules

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
)

// DefaultPool is the pool used when Compile is given no default pool name.
const DefaultPool = "default"

// Set is a compiled, immutable list of rules, ordered by priority. It is safe for concurrent
// use.
type Set struct {
	defaultPool string
	rules       []*rule // ascending priority
	logger      atomic.Pointer[slog.Logger]
	evaluators  sync.Pool // *evaluator
	// refuse says why a DAG of a team may not use a pool (§15), "" when it may; nil lets
	// every team use every pool. Set by CheckTeams before the Set is shared.
	refuse func(pool, team string) string
}

type rule struct {
	name     string
	priority int
	pool     string
	slots    int
	program  *vm.Program
	warned   atomic.Bool // the first runtime error is logged, later ones only traced
	skipped  atomic.Bool // the first skip for a team is logged, later ones only traced
}

// CheckTeams makes Assign skip a matching rule whose pool refuse turns away for the attempt's
// team (§15): refuse(pool, team) says why, "" when the team may use the pool. Call it once,
// before the Set is used; the pools' teams are part of the configuration a Set is compiled
// for, and a change of them compiles a new Set.
func (s *Set) CheckTeams(refuse func(pool, team string) string) { s.refuse = refuse }

// ConfigError is one invalid rule. File, Line and Column locate it (zero when unknown);
// Field is the rule key at fault: name, priority, when, pool or slots.
type ConfigError struct {
	File         string
	Line, Column int
	Rule         string // the rule's name, or "#N" (1-based) when it has none
	Field        string
	Msg          string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	switch {
	case e.Line > 0 && e.File != "":
		fmt.Fprintf(&b, "%s:%d:%d: ", e.File, e.Line, e.Column)
	case e.Line > 0:
		fmt.Fprintf(&b, "%d:%d: ", e.Line, e.Column)
	case e.File != "":
		fmt.Fprintf(&b, "%s: ", e.File)
	}
	fmt.Fprintf(&b, "rule %s: %s: %s", e.Rule, e.Field, e.Msg)
	return b.String()
}

// Position locates the error in the file, for a report that joins it with other errors.
func (e *ConfigError) Position() (line, column int) { return e.Line, e.Column }

// Compile compiles specs; see CompileFile. Errors carry no file name.
func Compile(specs []Spec, poolExists func(name string) bool, defaultPool string) (*Set, error) {
	return CompileFile("", specs, poolExists, defaultPool)
}

// CompileFile compiles the rules read from file (used only in error messages). poolExists
// reports whether a pool is configured; nil skips the check (e.g. a `rules test` without pools).
// An empty defaultPool means DefaultPool. Every invalid rule is reported, one *ConfigError per
// problem, joined with errors.Join so each is on its own line.
func CompileFile(file string, specs []Spec, poolExists func(name string) bool, defaultPool string) (*Set, error) {
	if defaultPool == "" {
		defaultPool = DefaultPool
	}
	s := &Set{defaultPool: defaultPool}
	var errs []error
	fail := func(sp Spec, label, field string, line, col int, format string, args ...any) {
		if line == 0 {
			line, col = sp.Line, sp.Column
		}
		errs = append(errs, &ConfigError{File: file, Line: line, Column: col, Rule: label, Field: field, Msg: fmt.Sprintf(format, args...)})
	}

	byName := make(map[string]int, len(specs))
	byPriority := make(map[int]int, len(specs))
	for i, sp := range specs {
		label := sp.Name
		if label == "" {
			label = fmt.Sprintf("#%d", i+1)
			fail(sp, label, "name", 0, 0, "must not be empty")
		} else if j, dup := byName[sp.Name]; dup {
			fail(sp, label, "name", 0, 0, "duplicate; first used by %s", firstRef(specs[j], j))
		} else {
			byName[sp.Name] = i
		}
		if j, dup := byPriority[sp.Priority]; dup {
			fail(sp, label, "priority", 0, 0, "%d is also the priority of rule %s", sp.Priority, labelOf(specs[j], j))
		} else {
			byPriority[sp.Priority] = i
		}
		slots := sp.Slots
		if slots == 0 {
			slots = 1
		}
		if slots < 1 {
			fail(sp, label, "slots", 0, 0, "must be at least 1, got %d", sp.Slots)
		}
		if sp.Pool == "" {
			fail(sp, label, "pool", 0, 0, "must not be empty")
		} else if poolExists != nil && !poolExists(sp.Pool) {
			fail(sp, label, "pool", 0, 0, "unknown pool %q", sp.Pool)
		}
		program, err := compileWhen(sp.When)
		if err != nil {
			fail(sp, label, "when", sp.WhenLine, sp.WhenColumn, "%s", err)
		}
		s.rules = append(s.rules, &rule{
			name: sp.Name, priority: sp.Priority, pool: sp.Pool, slots: slots, program: program,
		})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortStableFunc(s.rules, func(a, b *rule) int { return cmp.Compare(a.priority, b.priority) })
	return s, nil
}

// compileWhen compiles one condition against the typed environment. Its error is one line:
// expr's own message carries a source snippet over several lines, which would break the
// one-error-per-line contract.
func compileWhen(when string) (program *vm.Program, err error) {
	if strings.TrimSpace(when) == "" {
		return nil, errors.New("must not be empty")
	}
	defer func() {
		// expr's compiler is not expected to panic, but a configuration file must never be
		// able to crash the daemon.
		if r := recover(); r != nil {
			program, err = nil, fmt.Errorf("cannot compile: %v", r)
		}
	}()
	// now() and a host-dependent time zone would make Assign depend on when and where it runs.
	program, err = expr.Compile(when, expr.Env(compileTypes), expr.AsBool(),
		expr.DisableBuiltin("now"), expr.Timezone("UTC"))
	if err != nil {
		return nil, errors.New(oneLine(err))
	}
	return program, nil
}

// oneLine renders an expr error as "message (line:column)" without the snippet.
func oneLine(err error) string {
	var fe *file.Error
	if errors.As(err, &fe) {
		msg := strings.ReplaceAll(fe.Message, "\n", " ")
		if fe.Line > 0 {
			return fmt.Sprintf("%s (%d:%d)", msg, fe.Line, fe.Column+1)
		}
		return msg
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

func labelOf(sp Spec, i int) string {
	if sp.Name == "" {
		return fmt.Sprintf("#%d", i+1)
	}
	return sp.Name
}

func firstRef(sp Spec, i int) string {
	if sp.Line > 0 {
		return fmt.Sprintf("the rule at %d:%d", sp.Line, sp.Column)
	}
	return fmt.Sprintf("rule #%d", i+1)
}

// DefaultPool returns the pool an attempt gets when no rule matches.
func (s *Set) DefaultPool() string { return s.defaultPool }

// Len returns the number of rules.
func (s *Set) Len() int { return len(s.rules) }

// SetLogger sets where the first runtime error of each rule is reported; nil means
// slog.Default().
func (s *Set) SetLogger(l *slog.Logger) { s.logger.Store(l) }

func (s *Set) log() *slog.Logger {
	if l := s.logger.Load(); l != nil {
		return l
	}
	return slog.Default()
}

// Pools lists the pools an attempt can get from the set: every rule's pool, then the default
// pool, each once. A nil set gives the default pool only.
func (s *Set) Pools() []string {
	if s == nil {
		return []string{DefaultPool}
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range s.rules {
		if !seen[r.pool] {
			seen[r.pool] = true
			out = append(out, r.pool)
		}
	}
	if !seen[s.defaultPool] {
		out = append(out, s.defaultPool)
	}
	return out
}
