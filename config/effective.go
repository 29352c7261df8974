package config

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/rules"
	"github.com/poolflow/poolflow/store"
)

// Effective is the configuration DAGs are validated and attempts are assigned against: the
// pools, rules and max_running of poolflow.yaml plus the pools kept in the store (pools set,
// the API). The daemon, `dags validate`, `dags trigger`, `rules test`, the API and the UI all
// build it the same way (NewEffective, ReadEffective), so they agree on what is valid.
//
// File pools come from the configuration, never from the rows a daemon synced into the store:
// those are that daemon's copy and may lag behind its file. Stored pools are the rows with
// source "store". The default pool's `slots: remainder` is max_running minus every other
// finite pool, file-defined or stored.
type Effective struct {
	Settings *Config
	// Stored are the store's own pools (source "store"), by name.
	Stored []store.Pool
	// Rules assign a pool to tasks that declare none; nil when the file has no rules. They are
	// compiled without the pool check, so a rule whose pool went missing is reported (Problems)
	// while the others keep working.
	Rules *rules.Set

	caps     map[string]int
	teams    map[string][]string // the pools open to some teams only (§15)
	order    []string            // pool names, file pools first
	problems []error
}

// NewEffective builds the effective configuration of cfg (nil = Default()) and the
// store's pools. It never fails: what is wrong is in Problems.
func NewEffective(cfg *Config, stored []store.Pool) *Effective {
	if cfg == nil {
		cfg = Default()
	}
	e := &Effective{Settings: cfg, caps: map[string]int{}, teams: map[string][]string{}}
	file := orDefault(cfg.File, "poolflow.yaml")
	remainder := false
	for _, p := range cfg.Pools {
		e.caps[p.Name] = p.Slots
		e.teams[p.Name] = p.Teams
		e.order = append(e.order, p.Name)
		remainder = remainder || (p.Name == pools.DefaultPool && p.Remainder)
	}
	for _, p := range stored {
		if p.Source != "store" {
			continue
		}
		if _, clash := e.caps[p.Name]; clash {
			e.problems = append(e.problems, fmt.Errorf("pool %s is defined in %s and also stored; delete the stored one (poolflow pools delete %s)",
				p.Name, file, p.Name))
			continue
		}
		slots := p.Slots
		if p.TargetSlots != store.NoTarget {
			slots = p.TargetSlots // validation checks against the capacity the drain heads to
		}
		e.caps[p.Name] = slots
		e.teams[p.Name] = p.Teams
		e.order = append(e.order, p.Name)
		e.Stored = append(e.Stored, p)
	}
	if remainder {
		finite := 0
		for name, c := range e.caps {
			if name != pools.DefaultPool && c > 0 {
				finite += c
			}
		}
		slots := cfg.MaxRunning - finite
		e.caps[pools.DefaultPool] = slots
		if slots < 1 {
			e.problems = append(e.problems, remainderError(cfg, slots, finite))
		}
	}
	e.compileRules(file)
	return e
}

func remainderError(cfg *Config, slots, finite int) error {
	def, _ := cfg.Pool(pools.DefaultPool)
	return &Error{File: cfg.File, Line: def.Line, Column: def.Column, Field: "pools.default.slots",
		Msg: fmt.Sprintf("remainder is %d (max_running %d minus %d slots of the other pools, file-defined and stored); it must be at least 1",
			slots, cfg.MaxRunning, finite)}
}

// compileRules compiles the rules, then checks each rule's pool and slots against the pools.
func (e *Effective) compileRules(file string) {
	specs := e.Settings.Rules
	if len(specs) == 0 {
		return
	}
	set, err := rules.CompileFile(e.Settings.File, specs, nil, rules.DefaultPool)
	if err != nil {
		e.problems = append(e.problems, splitJoined(err)...)
	} else {
		// A rule that assigns a pool the attempt's team may not use is skipped (§15).
		set.CheckTeams(func(pool, team string) string { return dag.TeamRefusal(pool, e.teams[pool], team) })
		e.Rules = set
	}
	for i, sp := range specs {
		name := sp.Name
		if name == "" {
			name = fmt.Sprintf("#%d", i+1)
		}
		c, ok := e.caps[sp.Pool]
		slots := max(sp.Slots, 1)
		switch {
		case sp.Pool == "":
		case !ok:
			e.problems = append(e.problems, &rules.ConfigError{File: e.Settings.File, Line: sp.Line, Column: sp.Column,
				Rule: name, Field: "pool", Msg: fmt.Sprintf("unknown pool %q (neither in %s nor stored)", sp.Pool, file)})
		case c != pools.Unlimited && slots > c:
			e.problems = append(e.problems, &rules.ConfigError{File: e.Settings.File, Line: sp.Line, Column: sp.Column,
				Rule: name, Field: "slots", Msg: fmt.Sprintf("%d slots exceed capacity %d of pool %s", slots, c, sp.Pool)})
		}
	}
}

func splitJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// ReadEffective builds the effective configuration of cfg with the pools st holds now; st nil
// means no stored pools (no database yet).
func ReadEffective(ctx context.Context, st store.Store, cfg *Config) (*Effective, error) {
	if st == nil {
		return NewEffective(cfg, nil), nil
	}
	stored, err := st.ListPools(ctx)
	if err != nil {
		return nil, err
	}
	return NewEffective(cfg, stored), nil
}

// Problems is every problem of the configuration with these pools, joined one per line; nil
// when it is valid. A daemon refuses to start with problems and keeps its previous
// configuration when a reload has some.
func (e *Effective) Problems() error { return errors.Join(e.problems...) }

// Pool is the capacity of the pool name (pools.Unlimited for unlimited) and whether it exists.
func (e *Effective) Pool(name string) (int, bool) {
	c, ok := e.caps[name]
	return c, ok
}

// PoolTeams are the teams whose DAGs may use pool name (§15); none = every team.
func (e *Effective) PoolTeams(name string) []string { return e.teams[name] }

// PoolNames lists the pools, file-defined first in file order, then the stored ones by name.
func (e *Effective) PoolNames() []string { return slices.Clone(e.order) }

// Options are the DAG validation options of these pools (§2.3).
func (e *Effective) Options() dag.LoadOptions {
	return dag.LoadOptions{Pools: e.Pool, Notifiers: e.HasNotifier, PoolTeams: e.PoolTeams}
}

// HasNotifier reports whether poolflow.yaml defines the notifier name (§13): a handler naming
// another is a load-time error of its DAG.
func (e *Effective) HasNotifier(name string) bool {
	_, ok := e.Settings.Notifier(name)
	return ok
}

// Sources names what Validate checks: the DAGs folder, or only the given files, and the DAGs
// registered from Go.
type Sources struct {
	Dir    string
	Files  []string // when set, only these files, checked as in Dir (no Go DAGs)
	GoDAGs []*dag.DAG
	// Loader keeps decoded files between calls (the daemon's); nil decodes every file.
	Loader *dag.Loader
}

// Validation is what Validate found.
type Validation struct {
	DAGs   []*dag.DAG         // the valid DAGs, by id
	Errors []*dag.ImportError // the import errors, in file order
	Config error              // Effective.Problems
}

// Validate is the one DAG validation (§2.3): every DAG of src against the pools of eff. The
// daemon runs it on every change of a DAG file, poolflow.yaml or a stored pool; `dags
// validate`, `dags trigger` and `pools set`/`delete` run it from the CLI.
func Validate(src Sources, eff *Effective) Validation {
	opts := eff.Options()
	out := Validation{Config: eff.Problems()}
	loader := src.Loader
	if loader == nil {
		loader = &dag.Loader{}
	}
	if len(src.Files) > 0 {
		out.DAGs, out.Errors = loader.LoadFiles(src.Dir, src.Files, opts)
		return out
	}
	byID := map[string]bool{}
	if src.Dir != "" {
		out.DAGs, out.Errors = loader.LoadDir(src.Dir, opts)
		for _, d := range out.DAGs {
			byID[d.ID] = true
		}
	}
	for _, d := range src.GoDAGs {
		if verrs := dag.Validate(d, opts); len(verrs) > 0 {
			out.Errors = append(out.Errors, verrs...)
			continue
		}
		if byID[d.ID] {
			out.Errors = append(out.Errors, &dag.ImportError{DAGID: d.ID, Msg: "dag id already defined by a YAML file"})
			continue
		}
		byID[d.ID] = true
		out.DAGs = append(out.DAGs, d)
	}
	slices.SortFunc(out.DAGs, func(a, b *dag.DAG) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// ValidDAG returns the valid DAG id of v, or an error that says why it is not valid: its
// import errors, or that no DAG has this id.
func (v Validation) ValidDAG(id string) (*dag.DAG, error) {
	for _, d := range v.DAGs {
		if d.ID == id {
			return d, nil
		}
	}
	var msgs []string
	for _, ie := range v.Errors {
		if ie.DAGID == id {
			msgs = append(msgs, ie.Error())
		}
	}
	if len(msgs) > 0 {
		return nil, fmt.Errorf("%w: dag %s is invalid:\n%s", ErrInvalidDAG, id, strings.Join(msgs, "\n"))
	}
	return nil, fmt.Errorf("%w: dag %s", store.ErrNotFound, id)
}

// ErrInvalidDAG is a DAG that exists but failed validation.
var ErrInvalidDAG = errors.New("invalid dag")

// LoadChecked reads poolflow.yaml and reports every problem of the file in one report, in file
// order: unknown or invalid fields, pool resolution (remainder, strict pools) and the rules'
// expressions, names and priorities. Whether a rule's pool exists depends on the stored pools
// too, so that is checked by NewEffective. The daemon, the CLI and the API read it this way.
func LoadChecked(path string) (*Config, error) {
	return LoadWith(path, Options{CheckRules: checkRules})
}

// ParseChecked is LoadChecked on contents read from path.
func ParseChecked(path string, data []byte) (*Config, error) {
	return ParseWith(path, data, Options{CheckRules: checkRules})
}

// checkRules compiles the rules of a file so that their errors come in the file's own report.
func checkRules(file string, specs []RuleSpec) []error {
	if _, err := rules.CompileFile(file, specs, nil, rules.DefaultPool); err != nil {
		return splitJoined(err)
	}
	return nil
}

// ErrInvalid is a configuration whose problems keep it from being used.
var ErrInvalid = errors.New("invalid configuration")

func orDefault[T ~string](s, def T) T {
	if s == "" {
		return def
	}
	return s
}
