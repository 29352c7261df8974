package decide

import (
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/owners"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Op is one write of a plan. Package apply runs them in order in the pass's transaction; each
// names the store call it is. An op whose precondition the decision checked against what the
// pass read (a claim still held, an entry still waiting) and that the store refuses makes the
// pass fail and memory load again: memory was behind the store.
type Op interface{ op() }

// The ops, one per kind of write.
type (
	// SyncDAGs records the loaded DAGs, their versions (§12) and the current import errors.
	SyncDAGs struct {
		DAGs         []*dag.DAG
		ImportErrors map[string]string
		Versions     []Version
	}
	// RetireOrphans retires the waiting entries of runs that have ended (§4.6).
	RetireOrphans struct{}
	// SyncPools writes the file pools of Settings (a dags test process only adds missing ones).
	SyncPools struct {
		Settings *config.Config
		Test     bool
	}
	// SetImplicitLimit gives entries an implicit pool's capacity (max_running on reload).
	SetImplicitLimit struct {
		Entries  []int64
		Pool     string
		Capacity int
	}
	// Takeover handles the end of a dead owner (§9): its claims released, a dead dags test
	// process's runs failed, its leader-owned runs adopted when Adopt, its end marked handled.
	Takeover struct{ T owners.Takeover }
	// InsertRun inserts a run with the PK the decision gave it.
	InsertRun struct{ Run *store.Run }
	// PutRuns writes runs the pass changed.
	PutRuns struct{ Runs []*store.Run }
	// SetCheckpoint advances a DAG's scheduling checkpoint.
	SetCheckpoint struct {
		DAGID string
		At    time.Time
	}
	// EnsureCommand queues a command for a run's owner unless one of its kind is pending.
	EnsureCommand struct{ Command store.Command }
	// DoneCommand marks a stored command applied, or refused with the reason.
	DoneCommand struct {
		ID      int64
		Refused error
	}
	// InsertEntries queues entries with the ids the decision gave them.
	InsertEntries struct{ Entries []*store.Entry }
	// ReserveEntryIDs takes the queue IDs up to Last for a mapped task's line (§14).
	ReserveEntryIDs struct{ Last int64 }
	// EndEntry gives a waiting entry a terminal state.
	EndEntry struct {
		ID     int64
		State  vocab.EntryState
		Code   vocab.ReasonCode
		Reason string
	}
	// SetForce moves a waiting entry to the front (a force start).
	SetForce struct{ ID int64 }
	// RequestStop asks the daemon running an admitted entry's attempt to stop it, for a task
	// that becomes what Code says (vocab.ReasonCode.StopsTo).
	RequestStop struct {
		ID     int64
		Code   vocab.ReasonCode
		Reason string
	}
	// Event writes an audit event (§10.4) with the change it records.
	Event struct{ E store.Event }
	// DeleteRun deletes a run with everything it holds (§10.3).
	DeleteRun struct{ PK int64 }
	// Admit debits every pool of Entry (its remaining needs) under this daemon's claims.
	Admit struct {
		Entry      store.Entry
		LeaseUntil time.Time
	}
	// SetPGIDs records the process groups of attempts that started.
	SetPGIDs struct{ PGIDs map[int64]int }
	// ReleaseHeld ends an attempt whose claims this daemon holds: entry done, claims released.
	ReleaseHeld struct{ ID int64 }
	// RequeueHeld puts an admitted entry back in the queue with its try number (shutdown, lost
	// lease), releasing the claims this daemon holds.
	RequeueHeld struct{ ID int64 }
	// ReleaseEntry releases an entry's claims whose lease lapsed: back to the queue.
	ReleaseEntry struct{ ID int64 }
	// Reschedule puts a reschedule sensor back in the queue until NotBefore, keeping its
	// claims in Keep.
	Reschedule struct {
		ID        int64
		Keep      []string
		NotBefore time.Time
	}
	// RecordEnd writes the end of an attempt whose entry was not in memory.
	RecordEnd struct {
		ID      int64
		Attempt *store.Attempt
	}
	// FinishDrains switches draining pools whose old queue is empty to their new capacity.
	FinishDrains struct{ Pools []string }
	// PutAttempts writes attempts that ended.
	PutAttempts struct{ Attempts []*store.Attempt }
	// PutTIs writes the task instances the pass changed.
	PutTIs struct{ TIs []*store.TaskInstance }
	// BackfillStep writes what the pass did with a backfill (§11): the dates it took, its
	// owner and state. The store refuses it (ErrStale) when the backfill changed since it was
	// read: another daemon took a date, or a person cancelled it.
	BackfillStep struct{ Step store.BackfillStep }
)

func (SyncDAGs) op()         {}
func (RetireOrphans) op()    {}
func (SyncPools) op()        {}
func (SetImplicitLimit) op() {}
func (Takeover) op()         {}
func (InsertRun) op()        {}
func (PutRuns) op()          {}
func (SetCheckpoint) op()    {}
func (EnsureCommand) op()    {}
func (DoneCommand) op()      {}
func (InsertEntries) op()    {}
func (ReserveEntryIDs) op()  {}
func (EndEntry) op()         {}
func (SetForce) op()         {}
func (RequestStop) op()      {}
func (Admit) op()            {}
func (SetPGIDs) op()         {}
func (ReleaseHeld) op()      {}
func (RequeueHeld) op()      {}
func (ReleaseEntry) op()     {}
func (Reschedule) op()       {}
func (RecordEnd) op()        {}
func (FinishDrains) op()     {}
func (PutAttempts) op()      {}
func (PutTIs) op()           {}
func (Event) op()            {}
func (DeleteRun) op()        {}
func (BackfillStep) op()     {}
