package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/executor/decide"
)

// Live configuration. The registry (registry.go) watches poolflow.yaml and learns of stored
// pool changes from the loop; it builds the new config.Effective configuration and re-validates the
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
func (d *Daemon) Reload(ctx context.Context) error { return d.loop.reload(ctx) }

func (l *loop) reload(ctx context.Context) error {
	if !l.reg.request(ctx, &refreshReq{rereadFile: true}, 30*time.Second) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return errors.New("reload: the configuration watcher did not answer")
	}
	l.wake()
	if st := l.reg.configStatus(); st.Error != "" {
		return fmt.Errorf("%w: %s", config.ErrInvalid, st.Error)
	}
	return nil
}

// ConfigStatus says which configuration is in force and what is wrong with the newest one.
func (d *Daemon) ConfigStatus() ConfigStatus { return d.loop.reg.configStatus() }

// Settings is the poolflow.yaml in force (it changes on reload).
func (d *Daemon) Settings() *config.Config {
	eff, _ := d.loop.reg.effective()
	return eff.Settings
}

// Effective is the configuration in force: file pools, stored pools and rules.
func (d *Daemon) Effective() *config.Effective {
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
		if _, ok := ev.(*decide.Trigger); ok {
			return true
		}
	}
	return false
}
