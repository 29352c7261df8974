// Package apply writes a pass's plan (package decide) to the store, in the pass's one
// transaction: the only place the scheduler writes during a pass. Every op is one store call,
// in the order the decision made it. An op whose precondition the decision checked against
// what the pass read — a claim still held, an entry still waiting, a run id still free — and
// that the store refuses is ErrStale: memory was behind the store, the transaction is rolled
// back and the next pass loads memory again.
package apply

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/executor/decide"
	"github.com/poolflow/poolflow/owners"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// ErrStale is a write the store refused because memory was behind it.
var ErrStale = errors.New("memory is behind the store")

// Outcome is what the store reported while a plan was written, for the daemon to log and
// for memory to take once the pass committed.
type Outcome struct {
	Drained   []string // pools whose drain ended: their new capacity is in force
	Orphans   int      // waiting entries of ended runs retired
	Takeovers []TakenOver
	Warnings  []string
}

// TakenOver is what the takeover of one dead owner did.
type TakenOver struct {
	Owner    store.Owner
	Released []int64     // entries whose claims were released
	Failed   []store.Run // dead dags test processes' runs that failed
	Adopted  int         // leader-owned runs moved to this daemon
}

// Plan writes p in tx.
func Plan(tx store.Tx, p *decide.Plan) (Outcome, error) {
	var out Outcome
	for _, op := range p.Ops {
		if err := write(tx, p, op, &out); err != nil {
			return out, err
		}
	}
	return out, nil
}

func write(tx store.Tx, p *decide.Plan, op decide.Op, out *Outcome) error {
	now := p.Now
	switch op := op.(type) {
	case decide.SyncDAGs:
		for _, d := range op.DAGs {
			if err := tx.UpsertDAG(d.ID, d.File, d.Schedule, now); err != nil {
				return err
			}
		}
		for _, v := range op.Versions {
			sv := store.DAGVersion{DAGID: v.DAG.ID, Version: v.Version, Hash: v.DAG.SourceHash(), File: v.DAG.File}
			if v.New {
				sv.Format, sv.Source = v.DAG.Source()
			}
			// Numbered from what this pass read under the lock: a refusal is memory behind.
			if err := stale(tx.PutDAGVersion(&sv, now), store.ErrConflict); err != nil {
				return err
			}
		}
		return tx.SetImportErrors(op.ImportErrors, now)
	case decide.Notify:
		// An occurrence stored already (its key) is dropped: never produced twice.
		_, err := tx.InsertNotifications(op.Rows)
		return err
	case decide.RetireOrphans:
		n, err := tx.RetireOrphans(now)
		out.Orphans += n
		return err
	case decide.SyncPools:
		var err error
		if op.Test {
			err = config.AddMissingPools(tx, op.Settings, now)
		} else {
			err = config.SyncPools(tx, op.Settings, now)
		}
		if errors.Is(err, config.ErrInvalid) {
			// Reported by the registry (health, UI); the pools that do hold were written.
			out.Warnings = append(out.Warnings, "file pools synced with problems: "+err.Error())
			return nil
		}
		return err
	case decide.SetImplicitLimit:
		return tx.SetImplicitLimit(op.Entries, op.Pool, op.Capacity)
	case decide.Takeover:
		t, err := takeOver(tx, p, op.T)
		out.Takeovers = append(out.Takeovers, t)
		if err != nil {
			return err
		}
		params, _ := json.Marshal(map[string]any{"owner": t.Owner.ID, "epoch": t.Owner.Epoch, "host": t.Owner.Host,
			"claims_released": len(t.Released), "test_runs_failed": len(t.Failed), "runs_taken_over": t.Adopted})
		return tx.InsertEvent(&store.Event{At: now, Actor: vocab.ActorScheduler + ":" + p.Daemon, Action: vocab.ActionTakeover,
			Params: string(params), Outcome: "ok"})
	case decide.InsertRun:
		return stale(tx.InsertRun(op.Run), store.ErrConflict)
	case decide.PutRuns:
		for _, r := range op.Runs {
			if err := tx.UpdateRun(r); err != nil {
				return err
			}
		}
		return nil
	case decide.SetCheckpoint:
		return tx.SetCheckpoint(op.DAGID, op.At)
	case decide.EnsureCommand:
		sent, err := tx.HasPendingCommand(op.Command.Run, op.Command.Kind)
		if err != nil || sent {
			return err
		}
		c := op.Command
		return tx.InsertCommand(&c, now)
	case decide.DoneCommand:
		return tx.DoneCommand(op.ID, now, op.Refused)
	case decide.InsertEntries:
		return tx.InsertEntries(op.Entries)
	case decide.ReserveEntryIDs:
		return tx.ReserveEntryIDs(op.Last)
	case decide.EndEntry:
		return stale(tx.EndEntry(op.ID, op.State, op.Code, op.Reason, now), store.ErrEntryState)
	case decide.SetForce:
		return tx.SetForce(op.ID)
	case decide.RequestStop:
		return stale(tx.RequestStop(op.ID, op.Code, op.Reason), store.ErrEntryState)
	case decide.Event:
		e := op.E
		return tx.InsertEvent(&e)
	case decide.DeleteRun:
		return stale(tx.DeleteRun(op.PK), store.ErrConflict)
	case decide.Admit:
		e := op.Entry
		return stale(tx.Admit(&e, p.Daemon, p.Epoch, now, op.LeaseUntil), store.ErrEntryState)
	case decide.SetPGIDs:
		return tx.SetPGIDs(op.PGIDs, p.Daemon, p.Epoch)
	case decide.ReleaseHeld:
		return held(tx.ReleaseHeld(op.ID, p.Daemon, p.Epoch, now))
	case decide.RequeueHeld:
		return held(tx.RequeueHeld(op.ID, p.Daemon, p.Epoch))
	case decide.ReleaseEntry:
		_, err := tx.ReleaseEntry(op.ID)
		return err
	case decide.Reschedule:
		return stale(tx.Reschedule(op.ID, op.Keep, op.NotBefore), store.ErrEntryState)
	case decide.RecordEnd:
		return tx.RecordEnd(op.ID, op.Attempt)
	case decide.FinishDrains:
		for _, name := range op.Pools {
			done, err := tx.FinishDrain(name, now)
			if err != nil {
				return err
			}
			if done {
				out.Drained = append(out.Drained, name)
			}
		}
		return nil
	case decide.PutAttempts:
		return tx.PutAttempts(op.Attempts)
	case decide.PutTIs:
		return tx.PutTIs(op.TIs)
	case decide.BackfillStep:
		return stale(tx.StepBackfill(op.Step, now), store.ErrConflict)
	}
	return fmt.Errorf("apply: unknown op %T", op)
}

// stale turns the store's refusal of a write memory thought valid into ErrStale.
func stale(err error, refusal error) error {
	if errors.Is(err, refusal) {
		return fmt.Errorf("%w: %w", ErrStale, err)
	}
	return err
}

// held is ErrStale when the claims memory thought held were not.
func held(ok bool, err error) error {
	if err == nil && !ok {
		return fmt.Errorf("%w: the claims are no longer held", ErrStale)
	}
	return err
}

// takeOver handles the end of a dead owner whose processes are gone: its claims are released
// (their entries back in the queue with their try number, to be replayed), a dead dags test
// process's runs fail with "test process gone", and a serve daemon moves the leader-owned runs
// (scheduled, catch-up, backfill) and the backfills it drove to itself and marks the end handled. Bound work (manual runs) stays the
// owner's and waits node_unavailable until it returns.
func takeOver(tx store.Tx, p *decide.Plan, t owners.Takeover) (TakenOver, error) {
	o := t.Owner
	res := TakenOver{Owner: o}
	var err error
	if res.Released, err = tx.ReleaseOwnerClaims(o.ID, o.Epoch); err != nil {
		return res, err
	}
	var skipped int
	if res.Failed, skipped, err = tx.FailOwnerRuns(o.ID, "test", "test process gone", p.Now); err != nil {
		return res, err
	}
	if t.Adopt {
		if res.Adopted, err = tx.AdoptRuns(o.ID, p.Daemon, owners.LeaderOwned...); err != nil {
			return res, err
		}
		if _, err = tx.AdoptBackfills(o.ID, p.Daemon); err != nil {
			return res, err
		}
	}
	if skipped == 0 && (t.Adopt || o.Kind == vocab.OwnerTest) {
		if o.Kind == vocab.OwnerTest {
			err = tx.DeleteOwner(o.ID, o.Epoch) // a test process never comes back
		} else {
			err = tx.MarkOwnerHandled(o.ID, o.Epoch)
		}
	}
	return res, err
}
