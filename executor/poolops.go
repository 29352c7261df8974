package executor

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
)

// ErrPoolInUse refuses deleting or shrinking a pool a loaded DAG or a held claim needs (§4.1).
var ErrPoolInUse = errors.New("pool is in use")

// ErrFilePool refuses changing a pool defined in poolflow.yaml from the CLI or API.
var ErrFilePool = errors.New("pool is defined in the configuration file")

// SetPool creates or changes a stored pool in tx. A pool of poolflow.yaml is refused; shrinking
// below what a loaded DAG requires, or below the slots held now, is refused unless force.
func SetPool(tx store.Tx, cfg *config.Config, dags []*dag.DAG, spec pools.Spec, force bool, now time.Time) error {
	if err := checkStoredName(cfg, spec.Name); err != nil {
		return err
	}
	if _, err := pools.Resolve(cfg.MaxRunning, append(otherSpecs(cfg, spec.Name), spec)); err != nil {
		return err
	}
	if !force && spec.Slots != pools.Unlimited {
		if users := needers(dags, spec.Name, spec.Slots); len(users) > 0 {
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
	row := store.Pool{Name: spec.Name, Slots: spec.Slots, TargetSlots: store.NoTarget, Ordering: string(spec.Ordering),
		MaxQueued: spec.MaxQueued, StarvationAfter: spec.StarvationAfter, IncludeDeferred: spec.IncludeDeferred,
		OnResize: orDefault(spec.OnResize, "immediate"), Description: spec.Description, Source: "store"}
	if row.Ordering == "" {
		row.Ordering = string(pools.Backfill)
	}
	if prev, err := tx.PoolByName(spec.Name); err == nil && row.OnResize == "drain" && prev.Slots != spec.Slots {
		if _, waiting, err := tx.PoolHeld(spec.Name); err != nil {
			return err
		} else if waiting > 0 {
			row.Slots, row.TargetSlots = prev.Slots, spec.Slots
		}
	}
	if err := tx.PutPool(&row, now); err != nil {
		return err
	}
	return SyncPools(tx, cfg, now)
}

// DeletePool deletes a stored pool in tx, refused while a loaded DAG or a claim needs it unless force.
func DeletePool(tx store.Tx, cfg *config.Config, dags []*dag.DAG, name string, force bool, now time.Time) error {
	if err := checkStoredName(cfg, name); err != nil {
		return err
	}
	if _, err := tx.PoolByName(name); err != nil {
		return err
	}
	if !force {
		if users := needers(dags, name, 0); len(users) > 0 {
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
	if err := tx.DeletePool(name); err != nil {
		return err
	}
	return SyncPools(tx, cfg, now)
}

func checkStoredName(cfg *config.Config, name string) error {
	for _, p := range cfg.Pools {
		if p.Name == name {
			return fmt.Errorf("%w: pool %s is defined in %s; change it there", ErrFilePool, name, orDefault(cfg.File, "poolflow.yaml"))
		}
	}
	return nil
}

func otherSpecs(cfg *config.Config, name string) []pools.Spec {
	var out []pools.Spec
	for _, p := range cfg.Pools {
		if p.Name != name && p.Name != "default" {
			out = append(out, p)
		}
	}
	return out
}

// needers lists "dag.task" of loaded DAGs needing more than capacity slots of pool (any slots
// when capacity is 0).
func needers(dags []*dag.DAG, pool string, capacity int) []string {
	var out []string
	for _, d := range dags {
		for _, t := range d.Tasks {
			if n, ok := t.PoolRequirements[pool]; ok && (capacity == 0 || n > capacity) {
				out = append(out, d.ID+"."+t.ID)
			}
		}
	}
	sort.Strings(out)
	return out
}
