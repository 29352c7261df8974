package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// SyncPools makes the store's pools table agree with poolflow.yaml: file pools are written
// (a capacity change of a pool with on_resize: drain keeps the stored capacity while its queue
// drains, §4.7), file pools removed from the file are dropped once nothing holds them, and a
// default pool with slots: remainder is recomputed from every other finite pool, file-defined or
// stored. Only the daemon that owns the configuration calls it, at start and when its
// configuration or a stored pool changed; commands never do ("reads never write").
//
// A file pool whose name is also a stored pool, and a remainder below 1, are configuration
// problems: the rest is still written, and the problems come back wrapped in ErrInvalid.
func SyncPools(tx store.Tx, cfg *Config, now time.Time) error {
	var problems []error
	inFile := map[string]bool{}
	remainder := false
	for _, sp := range cfg.Pools {
		inFile[sp.Name] = true
		remainder = remainder || (sp.Name == "default" && sp.Remainder)
		row := store.Pool{Name: sp.Name, Slots: sp.Slots, TargetSlots: store.NoTarget, Ordering: orDefault(sp.Ordering, vocab.Backfill),
			MaxQueued: sp.MaxQueued, StarvationAfter: sp.StarvationAfter, IncludeDeferred: sp.IncludeDeferred,
			OnResize: orDefault(sp.OnResize, vocab.ResizeImmediate), Description: sp.Description, Teams: sp.Teams,
			Source: "file"}
		prev, err := tx.PoolByName(sp.Name)
		switch {
		case err == nil && prev.Source == "store":
			problems = append(problems, fmt.Errorf("pool %s is defined in %s and also stored; delete the stored one (poolflow pools delete %s)",
				sp.Name, orDefault(cfg.File, "poolflow.yaml"), sp.Name))
			continue
		case err == nil && sp.Remainder:
			row.Slots = prev.Slots // recomputed below
		case err == nil && row.OnResize == vocab.ResizeDrain && prev.TargetSlots != store.NoTarget && prev.TargetSlots == sp.Slots:
			row.Slots, row.TargetSlots = prev.Slots, prev.TargetSlots // still draining toward the same capacity
		case err == nil && row.OnResize == vocab.ResizeDrain && prev.Slots != sp.Slots:
			_, waiting, err := tx.PoolHeld(sp.Name)
			if err != nil {
				return err
			}
			if waiting > 0 {
				row.Slots, row.TargetSlots = prev.Slots, sp.Slots
			}
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return err
		}
		if err := tx.PutPool(&row, now); err != nil {
			return err
		}
	}
	all, err := tx.Pools()
	if err != nil {
		return err
	}
	for _, p := range all {
		if p.Source != "file" || inFile[p.Name] {
			continue
		}
		if held, waiting, err := tx.PoolHeld(p.Name); err != nil {
			return err
		} else if held == 0 && waiting == 0 {
			if err := tx.DeletePool(p.Name, now); err != nil {
				return err
			}
		}
	}
	if remainder {
		if err := syncRemainder(tx, cfg, all, inFile, now); err != nil {
			problems = append(problems, err)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalid, errors.Join(problems...))
	}
	return nil
}

// syncRemainder sets the default pool to max_running minus the other finite pools; below 1 it
// keeps its previous capacity and reports the problem.
func syncRemainder(tx store.Tx, cfg *Config, all []store.Pool, inFile map[string]bool, now time.Time) error {
	finite := 0
	for _, p := range all {
		slots := p.Slots
		if p.TargetSlots != store.NoTarget {
			slots = p.TargetSlots
		}
		if p.Name != "default" && slots >= 0 && (p.Source == "store" || inFile[p.Name]) {
			finite += slots
		}
	}
	def, err := tx.PoolByName("default")
	if err != nil {
		return err
	}
	slots := cfg.MaxRunning - finite
	if slots < 1 {
		return fmt.Errorf("pool default: slots: remainder is %d (max_running %d minus %d slots of the other pools); it must be at least 1",
			slots, cfg.MaxRunning, finite)
	}
	if def.Slots == slots && def.TargetSlots == store.NoTarget {
		return nil
	}
	def.Slots, def.TargetSlots = slots, store.NoTarget
	return tx.PutPool(&def, now)
}

// AddMissingPools writes the file pools of cfg that the store lacks (a remainder default pool
// gets what the others leave, at least 1), and nothing else.
func AddMissingPools(tx store.Tx, cfg *Config, now time.Time) error {
	all, err := tx.Pools()
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, p := range all {
		have[p.Name] = true
	}
	for _, sp := range cfg.Pools {
		if have[sp.Name] {
			continue
		}
		slots := sp.Slots
		if sp.Remainder {
			if c, ok := NewEffective(cfg, all).Pool(sp.Name); ok {
				slots = max(c, 1)
			}
		}
		row := store.Pool{Name: sp.Name, Slots: slots, TargetSlots: store.NoTarget, Ordering: orDefault(sp.Ordering, vocab.Backfill),
			MaxQueued: sp.MaxQueued, StarvationAfter: sp.StarvationAfter, IncludeDeferred: sp.IncludeDeferred,
			OnResize: orDefault(sp.OnResize, vocab.ResizeImmediate), Description: sp.Description, Teams: sp.Teams,
			Source: "file"}
		if err := tx.PutPool(&row, now); err != nil {
			return err
		}
	}
	return nil
}
