package config

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/rules"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// ErrPoolInUse refuses deleting or shrinking a pool that a loaded DAG, a pool rule or a held
// claim needs (§4.1).
var ErrPoolInUse = errors.New("pool is in use")

// ErrFilePool refuses changing a pool defined in poolflow.yaml from the CLI or API.
var ErrFilePool = errors.New("pool is defined in the configuration file")

// SetPool creates or changes a stored pool in tx, and writes nothing else: the daemon that owns
// poolflow.yaml re-syncs its file pools (a remainder default pool) when it sees the change. A
// pool of poolflow.yaml — in cfg, or synced into the store by a daemon — is refused; shrinking
// below what a loaded DAG or a rule requires, or below the slots held now, or a change of its
// teams that turns away a loaded DAG requiring it (§15), is refused unless force; so is a change that would make the configuration invalid (a remainder below 1).
func SetPool(tx store.Tx, cfg *Config, dags []*dag.DAG, spec pools.Spec, force bool, now time.Time) error {
	prev, err := tx.PoolByName(spec.Name)
	exists := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if err := checkStoredName(cfg, spec.Name, prev, exists); err != nil {
		return err
	}
	if _, err := pools.Resolve(0, []pools.Spec{spec}); err != nil {
		return err
	}
	if !force && exists {
		if users := lockedOut(dags, spec.Name, prev.Teams, spec.Teams); len(users) > 0 {
			return fmt.Errorf("%w: %s", ErrPoolInUse, lockout(spec.Name, spec.Teams, users, ", or use --force"))
		}
	}
	if !force && spec.Slots != pools.Unlimited {
		if users := needers(cfg, dags, spec.Name, spec.Slots); len(users) > 0 {
			return fmt.Errorf("%w: pool %s: %d slots are fewer than %s needs; use --force", ErrPoolInUse, spec.Name,
				spec.Slots, strings.Join(users, ", "))
		}
		held, _, err := tx.PoolHeld(spec.Name)
		if err != nil {
			return err
		}
		if held > spec.Slots {
			return fmt.Errorf("%w: pool %s: %d slots are held now, more than %d; use --force", ErrPoolInUse, spec.Name,
				held, spec.Slots)
		}
	}
	row := store.Pool{Name: spec.Name, Slots: spec.Slots, TargetSlots: store.NoTarget, Ordering: spec.Ordering,
		MaxQueued: spec.MaxQueued, StarvationAfter: spec.StarvationAfter, IncludeDeferred: spec.IncludeDeferred,
		OnResize: orDefault(spec.OnResize, vocab.ResizeImmediate), Description: spec.Description, Teams: spec.Teams,
		Source: "store"}
	if row.Ordering == "" {
		row.Ordering = vocab.Backfill
	}
	if exists && row.OnResize == vocab.ResizeDrain && prev.Slots != spec.Slots {
		if _, waiting, err := tx.PoolHeld(spec.Name); err != nil {
			return err
		} else if waiting > 0 {
			row.Slots, row.TargetSlots = prev.Slots, spec.Slots
		}
	}
	if err := checkStillValid(tx, cfg, spec.Name, &row, force); err != nil {
		return err
	}
	return tx.PutPool(&row, now)
}

// DeletePool deletes a stored pool in tx, refused while a loaded DAG, a pool rule or a claim
// needs it unless force. It writes nothing else (see SetPool).
func DeletePool(tx store.Tx, cfg *Config, dags []*dag.DAG, name string, force bool, now time.Time) error {
	prev, err := tx.PoolByName(name)
	exists := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if name == pools.DefaultPool {
		return &defaultPoolError{fmt.Sprintf("pool default cannot be deleted: it is the default pool, which tasks with no "+
			"pool_requirements and no matching rule use (%s)", defaultWhere(cfg))}
	}
	if err := checkStoredName(cfg, name, prev, exists); err != nil {
		return err
	}
	if !exists {
		return store.ErrNotFound
	}
	if !force {
		if users := needers(cfg, dags, name, 0); len(users) > 0 {
			return fmt.Errorf("%w: pool %s is required by %s; use --force", ErrPoolInUse, name, strings.Join(users, ", "))
		}
		held, _, err := tx.PoolHeld(name)
		if err != nil {
			return err
		}
		if held > 0 {
			return fmt.Errorf("%w: pool %s holds %d slots now; use --force", ErrPoolInUse, name, held)
		}
	}
	if err := checkStillValid(tx, cfg, name, nil, force); err != nil {
		return err
	}
	return tx.DeletePool(name, now)
}

// defaultPoolError refuses storing or deleting the default pool. It counts as ErrFilePool (a
// 409): the default pool belongs to the configuration, whether or not the file names it.
type defaultPoolError struct{ msg string }

func (e *defaultPoolError) Error() string        { return e.msg }
func (e *defaultPoolError) Is(target error) bool { return target == ErrFilePool }

// defaultWhere says where the default pool's capacity comes from.
func defaultWhere(cfg *Config) string {
	file := orDefault(cfg.File, "poolflow.yaml")
	if def, ok := cfg.Pool(pools.DefaultPool); ok && def.Line > 0 {
		return fmt.Sprintf("its capacity is set in %s:%d under pools.default", file, def.Line)
	}
	return fmt.Sprintf("%s does not define it, so it has %d slots; set pools.default there to change that",
		file, pools.DefaultPoolSlots)
}

// checkStoredName refuses a name that belongs to poolflow.yaml: in cfg, the default pool, or a
// pool a daemon synced from its file (which cfg, the CLI's own copy, may not know).
func checkStoredName(cfg *Config, name string, prev store.Pool, exists bool) error {
	if name == pools.DefaultPool {
		return &defaultPoolError{fmt.Sprintf("pool default cannot be stored: it is the default pool; %s", defaultWhere(cfg))}
	}
	for _, p := range cfg.Pools {
		if p.Name == name {
			return fmt.Errorf("%w: pool %s is defined in %s; change it there", ErrFilePool, name, orDefault(cfg.File, "poolflow.yaml"))
		}
	}
	if exists && prev.Source == "file" {
		return fmt.Errorf("%w: pool %s is defined in the poolflow.yaml of the daemon that synced it; change it there", ErrFilePool, name)
	}
	return nil
}

// checkStillValid refuses a change (row nil: a deletion) that gives the configuration a problem
// it did not have, such as a remainder default pool below 1. Problems it already had do not
// stop unrelated changes. With force, a rule left without its pool (or with too few slots) is
// accepted, as a DAG left without its pool is: the daemon then reports it.
func checkStillValid(tx store.Tx, cfg *Config, name string, row *store.Pool, force bool) error {
	all, err := tx.Pools()
	if err != nil {
		return err
	}
	before := problemSet(NewEffective(cfg, all))
	after := slices.DeleteFunc(slices.Clone(all), func(p store.Pool) bool { return p.Name == name })
	if row != nil {
		after = append(after, *row)
	}
	var added []string
	for _, p := range NewEffective(cfg, after).problems {
		var re *rules.ConfigError
		if !before[p.Error()] && !(force && errors.As(p, &re)) {
			added = append(added, p.Error())
		}
	}
	if len(added) > 0 {
		return fmt.Errorf("%w: pool %s: the configuration would become invalid:\n%s", ErrPoolInUse, name, strings.Join(added, "\n"))
	}
	return nil
}

func problemSet(e *Effective) map[string]bool {
	out := map[string]bool{}
	for _, p := range e.problems {
		out[p.Error()] = true
	}
	return out
}

// needers lists what needs more than capacity slots of pool (any slots when capacity is 0):
// "dag.task" of loaded DAGs, and "rule <name>" of the pool rules naming it.
func needers(cfg *Config, dags []*dag.DAG, pool string, capacity int) []string {
	var out []string
	for _, d := range dags {
		for _, t := range d.Tasks {
			if n, ok := t.PoolRequirements[pool]; ok && (capacity == 0 || n > capacity) {
				out = append(out, d.ID+"."+t.ID)
			}
		}
	}
	for _, r := range cfg.Rules {
		if r.Pool == pool && (capacity == 0 || max(r.Slots, 1) > capacity) {
			out = append(out, "rule "+r.Name)
		}
	}
	sort.Strings(out)
	return out
}
