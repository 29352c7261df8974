package executor

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/poolflow/poolflow/executor/runner"
	"github.com/poolflow/poolflow/internal/procfs"
	"github.com/poolflow/poolflow/owners"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// errSuperseded ends a daemon whose id another process took after its lease lapsed.
var errSuperseded = errors.New("owner id taken by another process")

// register records this owner's start under a new fencing epoch, refusing when a live process
// holds the id (§9: an owner id is held by one live process at a time); again is set when this
// process renews its own registration.
func (l *loop) register(tx store.Tx, now time.Time, again bool) error {
	prev, err := tx.OwnerByID(l.cfg.DaemonID)
	switch {
	case err == nil && !again && prev.Epoch > 0 && owners.Alive(prev, now, l.host, l.localAlive):
		return &owners.LiveError{Owner: prev}
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return err
	}
	kind := vocab.OwnerDaemon
	if l.cfg.Test != nil {
		kind = vocab.OwnerTest
	}
	o := store.Owner{ID: l.cfg.DaemonID, Kind: kind, Host: l.host, PID: os.Getpid(), ProcStart: procfs.SelfStart(),
		StartedAt: now, Heartbeat: now, LeaseUntil: now.Add(l.cfg.Lease), API: l.cfg.API}
	if err := tx.PutOwner(&o); err != nil {
		return err
	}
	l.epoch = o.Epoch
	return nil
}

// renew renews this owner's lease and its claims'. When another daemon handled this owner's
// end while it could not renew (its claims were released, its leader-owned runs moved), the
// daemon starts a new epoch: its running attempts are stopped and memory is loaded again. When
// another process took the id, the daemon must stop (errSuperseded).
func (l *loop) renew(tx store.Tx, now time.Time) error {
	row, err := tx.Heartbeat(l.cfg.DaemonID, l.epoch, now, now.Add(l.cfg.Lease))
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return err
	case row.Epoch != l.epoch:
		return fmt.Errorf("%w: %s now runs as pid %d on host %s", errSuperseded, row.ID, row.PID, row.Host)
	case row.HandledEpoch < l.epoch:
		return nil
	}
	old := l.epoch
	if err := l.register(tx, now, true); err != nil {
		return err
	}
	params, _ := json.Marshal(map[string]any{"old_epoch": old, "epoch": l.epoch, "attempts_stopped": len(l.mem.Running)})
	if err := tx.InsertEvent(&store.Event{At: now, Actor: vocab.ActorScheduler + ":" + l.cfg.DaemonID,
		Action: vocab.ActionLeaseLost, Params: string(params), Outcome: "ok"}); err != nil {
		return err
	}
	owners.SetInProcess(l.st.Path(), l.cfg.DaemonID, l.epoch)
	l.runner.SetEpoch(l.epoch)
	l.log.Warn("this daemon's lease lapsed and its work was taken over; continuing under a new epoch",
		"old_epoch", old, "epoch", l.epoch)
	for id := range l.mem.Running {
		l.runner.Kill(id, runner.StopLeaseLost)
	}
	l.mem.Invalidate()
	return nil
}

// release ends this owner's lease at a clean stop, so live daemons handle what it leaves at
// once; a dags test process whose run ended leaves no row at all.
func (l *loop) release(tx store.Tx, now time.Time) error {
	if l.cfg.Test != nil && l.isTestDone() {
		return tx.DeleteOwner(l.cfg.DaemonID, l.epoch)
	}
	return tx.ReleaseOwner(l.cfg.DaemonID, l.epoch, now)
}

// localAlive is the loop's liveness check of an owner on this host: another process by pid and
// start time, this process by the owners it runs.
func (l *loop) localAlive(o store.Owner) bool { return owners.AliveOn(l.st.Path())(o) }
