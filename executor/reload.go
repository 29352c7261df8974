package executor

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Live configuration. The registry (registry.go) watches poolflow.yaml and learns of stored
// pool changes from the loop; it builds the new Effective configuration and re-validates the
// DAGs off the loop. The loop then applies a new configuration generation inside its next pass
// (applyConfig): it syncs the file pools into the store (on_resize: drain keeps the old capacity
// while the queue drains, §4.7), takes the new rules (waiting entries keep the pools they were
// assigned: the assignment is stored with the entry) and the new max_running (the _global limit
// of this daemon's waiting entries follows it). Running attempts are never touched.

// storedWait bounds how long a pass waits for the registry to re-validate against pools that
// another process just changed, so that a run triggered right after `pools set` finds its DAG.
const storedWait = 2 * time.Second

// Reload re-reads poolflow.yaml now (on SIGHUP) and waits for the outcome: nil when the file is
// in force, else why the previous configuration stays in force.
func (d *Daemon) Reload(ctx context.Context) error {
	if !d.loop.reg.request(ctx, &refreshReq{rereadFile: true}, 30*time.Second) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return errors.New("reload: the configuration watcher did not answer")
	}
	d.loop.wake()
	if st := d.loop.reg.configStatus(); st.Error != "" {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, st.Error)
	}
	return nil
}

// ErrInvalidConfig is a configuration whose problems keep it from being used.
var ErrInvalidConfig = errors.New("invalid configuration")

// ConfigStatus says which configuration is in force and what is wrong with the newest one.
func (d *Daemon) ConfigStatus() ConfigStatus { return d.loop.reg.configStatus() }

// Settings is the poolflow.yaml in force (it changes on reload).
func (d *Daemon) Settings() *config.Config {
	eff, _ := d.loop.reg.effective()
	return eff.Settings
}

// Effective is the configuration in force: file pools, stored pools and rules.
func (d *Daemon) Effective() *Effective {
	eff, _ := d.loop.reg.effective()
	return eff
}

// syncStored runs on the loop when another process committed: if the stored pools changed, the
// registry re-validates the DAGs against them before the pass that may load a run of a DAG they
// just made valid.
func (l *loop) syncStored(ctx context.Context, dv int64) {
	if dv == l.seenDV {
		return
	}
	l.seenDV = dv
	ps, err := l.st.ListPools(ctx)
	if err != nil || !l.reg.storedStale(ps) {
		return
	}
	l.reg.request(ctx, &refreshReq{stored: ps, haveStored: true}, storedWait)
}

// triggerPending reports whether the pass has a trigger to answer.
func (l *loop) triggerPending() bool {
	for _, ev := range l.pending {
		if _, ok := ev.(*evTrigger); ok {
			return true
		}
	}
	return false
}

// applyConfig applies a new configuration generation of the registry in the pass's transaction,
// after load: file pools synced, l.pools re-read, rules and max_running taken. A pass that read
// stored pools the registry has not validated against (another process committed after
// syncStored looked) hands them over; the registry re-validates off the loop, or, when the
// pass answers a trigger, before it: a DAG that a pool just created makes valid must be found
// by a trigger sent right after the pool (the API's create wakes the loop, and the trigger may
// join the pass that wake began).
func (l *loop) applyConfig(ctx context.Context, tx store.Tx, now time.Time) error {
	if l.dv != l.seenDV {
		l.seenDV = l.dv
		ps := make([]store.Pool, 0, len(l.pools))
		for _, p := range l.pools {
			ps = append(ps, p)
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
		switch {
		case !l.reg.storedStale(ps):
		case l.triggerPending():
			l.reg.request(ctx, &refreshReq{stored: ps, haveStored: true, skipDir: true}, storedWait)
		default:
			l.reg.offer(ps)
		}
	}
	eff, gen := l.reg.effective()
	if gen == l.cfgGen {
		return nil
	}
	prev := l.cfg.Settings
	l.cfg.Settings = eff.Settings
	if err := l.syncPools(tx, now); err != nil {
		if !errors.Is(err, ErrInvalidConfig) {
			return err
		}
		// Reported by the registry (health, UI); the pools that do hold were written.
		l.log.Warn("file pools synced with problems", "err", err)
	}
	ps, err := tx.Pools()
	if err != nil {
		return err
	}
	l.pools = poolsByName(ps)
	l.ruleSet = eff.Rules
	clear(l.ruleCache) // evaluated before this pass under the old rules
	if prev.MaxRunning != eff.Settings.MaxRunning {
		if err := l.setGlobalLimit(tx, eff.Settings.MaxRunning); err != nil {
			return err
		}
	}
	l.cfgGen = gen
	return nil
}

// setGlobalLimit gives this daemon's waiting entries the new max_running as their _global
// limit (none when 0); new entries get it from requirements.
func (l *loop) setGlobalLimit(tx store.Tx, maxRunning int) error {
	var ids []int64
	for id, le := range l.entries {
		if le.State != vocab.EntryWaiting {
			continue
		}
		ids = append(ids, id)
		needs := le.Needs[:0:0]
		for _, n := range le.Needs {
			if n.Pool != pools.GlobalPool {
				needs = append(needs, n)
			}
		}
		if maxRunning > 0 {
			needs = append(needs, store.Requirement{Pool: pools.GlobalPool, Slots: 1, Implicit: true, Capacity: maxRunning})
			sort.Slice(needs, func(i, j int) bool { return needs[i].Pool < needs[j].Pool })
		}
		le.Needs = needs
		le.reason = nil
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return tx.SetImplicitLimit(ids, pools.GlobalPool, maxRunning)
}
