package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/poolflow/poolflow/owners"
)

// What the HTTP probes (/livez, /readyz) ask of the daemon. Both read the real time: a probe is
// about this process, whatever clock its decisions run on.

// LoopTurned is when the scheduler loop last came round its wait: every poll period (50 ms) while
// it is idle, and between passes, each bounded by the store's operation timeout. Zero before
// Start. A loop that has not come round for much longer than a pass can take is wedged.
func (d *Daemon) LoopTurned() time.Time {
	n := d.loop.turned.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// HoldsLease is nil when the store's owner row for this daemon's id is this start's (this
// process, this epoch), its lease has not run out and no other daemon has handled its end;
// otherwise it says why not. It reads the store, so an unavailable store is its error.
func (d *Daemon) HoldsLease(ctx context.Context) error {
	o, err := d.cfg.Store.GetOwner(ctx, d.cfg.DaemonID)
	if err != nil {
		return fmt.Errorf("read owner %s: %w", d.cfg.DaemonID, err)
	}
	switch {
	case !owners.AliveOn(d.cfg.Store.Path())(o):
		return errors.New("the owner row is not this process's current start")
	case o.HandledEpoch >= o.Epoch:
		return errors.New("another daemon handled this daemon's end (its lease lapsed)")
	case !o.LeaseUntil.After(d.cfg.Clock.Now()):
		return fmt.Errorf("the owner lease ran out at %s", o.LeaseUntil.UTC().Format(time.RFC3339))
	}
	return nil
}
