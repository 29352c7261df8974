package store

import (
	"context"
	"fmt"
	"time"

	"github.com/poolflow/poolflow/vocab"
)

// Store is an open poolflow database: the reads of the CLI, the API and the UI, and write
// transactions (Begin, WithTx). Every method returns the typed errors of errors.go, never a
// driver's. A Store is safe for concurrent use; its transactions are not.
type Store interface {
	Reader

	// Begin starts a write transaction bounded by OpTimeout. Write transactions of every
	// process sharing the database are serialized (SQLite's BEGIN IMMEDIATE; PostgreSQL's
	// advisory lock of the installation), so a transaction reads what it writes under.
	Begin(ctx context.Context) (Tx, error)
	// WithTx runs fn in one transaction and commits it, or rolls back on any error.
	WithTx(ctx context.Context, fn func(Tx) error) error

	// DataVersion changes when another handle (another process, or another Store of this
	// process) has committed a change since the last look; this handle's own commits leave it
	// as it is. It is cheap enough to call every poll tick.
	DataVersion(ctx context.Context) (int64, error)
	// Changed, when not nil, receives a value soon after another handle commits (PostgreSQL's
	// LISTEN/NOTIFY), so a loop need not wait for its poll tick. nil: poll DataVersion.
	Changed() <-chan struct{}

	// Driver names the driver: "sqlite" or "postgres".
	Driver() string
	// Path identifies the database without secrets: the SQLite file, or the PostgreSQL DSN
	// without its password. Attempts carry it so a restarted daemon finds its own orphans.
	Path() string
	// Options are the options the store was opened with.
	Options() Options
	// Reopen opens a second handle on the same database with the same options: its commits
	// are outside changes to this one.
	Reopen(ctx context.Context) (Store, error)
	// Close closes the handle's connections.
	Close() error
}

// Reader is what the CLI, the API and the UI read. Reads never wait for a write transaction.
type Reader interface {
	ListPools(ctx context.Context) ([]Pool, error)
	ListClaims(ctx context.Context) ([]Claim, error)
	ListEntries(ctx context.Context, states ...vocab.EntryState) ([]Entry, error)
	EntryByID(ctx context.Context, id int64) (Entry, error)
	LatestEntry(ctx context.Context, run int64, taskID string) (Entry, error)
	LatestEntries(ctx context.Context, run int64) (map[string]Entry, error)
	// RunEntries returns every queue entry of a run, every try of every task, in queue order,
	// with its requirements: the waits of its history (the Gantt's wait bars).
	RunEntries(ctx context.Context, run int64) ([]Entry, error)
	RecentEntries(ctx context.Context, perPool int) (map[string][]Entry, error)
	// EntriesByID reads the entries of ids with their requirements, by queue ID; an ID with no
	// entry is left out.
	EntriesByID(ctx context.Context, ids []int64) ([]Entry, error)
	// QueueSeq is the newest change stamp of the queue entries (the number of the last write
	// transaction that put or changed one, of any process): unchanged, no entry was put, admitted,
	// ended or changed since it was read. A read model kept in memory (the pools page's waiting
	// lines) knows by it whether it is current; it reads one index entry.
	QueueSeq(ctx context.Context) (int64, error)
	// ClaimEntries lists the entries holding claims (admitted, or sensors keeping theirs).
	ClaimEntries(ctx context.Context) ([]Entry, error)
	GetRun(ctx context.Context, dagID, runID string) (Run, error)
	GetRunByPK(ctx context.Context, pk int64) (Run, error)
	ListRuns(ctx context.Context, dagID string, limit, offset int) ([]Run, int, error)
	// ListRunsWhere lists the runs f selects in f's order, and how many it selects in all.
	ListRunsWhere(ctx context.Context, f RunFilter) ([]Run, int, error)
	LatestRunsByDAG(ctx context.Context, dagIDs []string, perDAG int) (map[string][]Run, error)
	// OpenRunWaits counts, per DAG, the open runs that wait for a person (a task awaiting
	// approval) and those that wait for a pool (a task scheduled, its entry not yet admitted).
	OpenRunWaits(ctx context.Context) (map[string]RunWaits, error)
	ListTaskInstances(ctx context.Context, run int64) ([]TaskInstance, error)
	TaskInstancesOfRuns(ctx context.Context, runs []int64) (map[int64][]TaskInstance, error)
	// TaskCellsOfRuns lists several runs' task instances by run key, each as its state and try
	// only: the DAG page's grid, thousands of cells whose every column would cost a scan.
	TaskCellsOfRuns(ctx context.Context, runs []int64) (map[int64][]TaskCell, error)
	ListAttempts(ctx context.Context, run int64, taskID string) ([]Attempt, error)
	RunAttempts(ctx context.Context, run int64) ([]Attempt, error)
	PoolHoldings(ctx context.Context, since time.Time) ([]Holding, error)
	// PoolHistory lists the admissions that held slots of named pool at some time within
	// [from, to], by admission time: the claim history the pool timeline draws.
	PoolHistory(ctx context.Context, pool string, from, to time.Time) ([]Holding, error)
	// PoolHoldersAt lists the admissions that held slots of named pool at instant at (admitted
	// at or before it, not ended by then), with the attempt each was for, by admission time.
	PoolHoldersAt(ctx context.Context, pool string, at time.Time) ([]HolderAt, error)
	// PoolUse is named pool's use over [from, to) in buckets of width, aggregated by the store
	// (its cost follows the buckets, not the admissions): from and width are multiples of 15 s,
	// to − from a multiple of width; a bucket now falls in is measured up to now.
	PoolUse(ctx context.Context, pool string, from, to time.Time, width time.Duration, now time.Time) ([]UseBucket, error)
	// PoolCapacity lists named pool's capacity changes a window [from, to] draws: the last at
	// or before from, then those within it, in order.
	PoolCapacity(ctx context.Context, pool string, from, to time.Time) ([]CapacityChange, error)
	ListDAGStates(ctx context.Context) (map[string]DAGState, error)
	ListDAGRows(ctx context.Context) ([]DAGRow, error)
	ImportErrors(ctx context.Context) (map[string]string, error)
	ListImportErrors(ctx context.Context) ([]ImportErrorRow, error)
	CommandOutcome(ctx context.Context, id int64) (done bool, refused string, err error)
	ListOwners(ctx context.Context) ([]Owner, error)
	GetOwner(ctx context.Context, id string) (Owner, error)
	DaemonHeartbeat(ctx context.Context, id string) (time.Time, error)
	// ListEvents lists the audit events f selects, newest first, and how many it selects in all.
	ListEvents(ctx context.Context, f EventFilter) ([]Event, int, error)
	// ListDAGVersions lists a DAG's versions (§12), newest first, without their texts, and how
	// many it has; GetDAGVersion reads one with its text (n 0: the current one), ErrNotFound
	// when it is not stored.
	ListDAGVersions(ctx context.Context, dagID string, limit, offset int) ([]DAGVersion, int, error)
	GetDAGVersion(ctx context.Context, dagID string, n int) (DAGVersion, error)
	// CountPrunable counts what retention with these cutoffs would delete (zero: nothing of
	// that kind); PrunableRuns lists up to limit of the runs, oldest first (Tx.PruneRuns).
	CountPrunable(ctx context.Context, runsBefore, eventsBefore time.Time) (PruneCounts, error)
	PrunableRuns(ctx context.Context, before time.Time, limit int) ([]PrunedRun, error)
	// RunEnds says, of the runs of dagID named, which exist and when each ended (zero: open):
	// a run missing from the answer is not in the store.
	RunEnds(ctx context.Context, dagID string, runIDs []string) (map[string]time.Time, error)
	// ListNotifications lists the outbox rows f selects (§13), newest first, and how many it
	// selects in all.
	ListNotifications(ctx context.Context, f NotificationFilter) ([]Notification, int, error)
	// NextNotification is when the outbox next has a row to send: the earliest next try of a
	// pending row or lease end of a sending one; ok is false when nothing is left to send.
	NextNotification(ctx context.Context) (at time.Time, ok bool, err error)

	// Users and API tokens (§15). HasUsers says whether any user exists: the first one turns
	// authentication on. GetUser and TokenByHash are ErrNotFound when there is none; ListTokens
	// lists a user's tokens (every user's for ""), newest first.
	HasUsers(ctx context.Context) (bool, error)
	ListUsers(ctx context.Context) ([]User, error)
	GetUser(ctx context.Context, name string) (User, error)
	TokenByHash(ctx context.Context, hash string) (Token, error)
	ListTokens(ctx context.Context, user string) ([]Token, error)
	// FindSession reads a UI session's data (ErrNotFound when there is none or it expired at now).
	FindSession(ctx context.Context, token string, now time.Time) ([]byte, error)
	// ListBackfills lists the backfills of a DAG ("" for every DAG), newest first, with their
	// progress, and how many there are; GetBackfill reads one (ErrNotFound for none);
	// ListBackfillDates lists a backfill's dates in the order it takes them, with their runs.
	ListBackfills(ctx context.Context, dagID string, limit, offset int) ([]Backfill, int, error)
	GetBackfill(ctx context.Context, id int64) (Backfill, error)
	ListBackfillDates(ctx context.Context, id int64, limit, offset int) ([]BackfillDate, int, error)
	// ListRunsBetween lists a DAG's runs that are unique per logical date (scheduled, catch-up,
	// backfill) whose logical date is in [from, to], by logical date.
	ListRunsBetween(ctx context.Context, dagID string, from, to time.Time) ([]Run, error)
}

// Tx is one write transaction: an admission pass, a CLI command, or a daemon's recovery. Every
// method returns the first error; the caller rolls back on any error so no partial claim is
// ever committed. The refusals a pass acts on and goes on — InsertRun's ErrConflict (a fire
// another daemon created), ErrEntryState, ErrNotFound, FailRun's ErrConflict — leave the
// transaction usable; after any other error it may be over (PostgreSQL ends a transaction at a
// failed statement): roll back.
type Tx interface {
	// Commit commits; a failed commit is ErrUnavailable.
	Commit() error
	// Rollback abandons the transaction; it is safe after Commit.
	Rollback()
	// DataVersion is Store.DataVersion as of this transaction's start, exact: what the
	// transaction reads includes every change the value counts.
	DataVersion() (int64, error)
	// FailClaimAfter makes the n-th claim insert of this transaction fail (tests only).
	FailClaimAfter(n int)
	// Seq is the installation's change number: every write transaction that changes a row
	// commits the next one and stamps the runs, task instances and queue entries it writes
	// with it. Before Commit it is the number of the last transaction committed when this one
	// started; after a Commit that changed rows, this transaction's own.
	Seq() int64
	// ChangesSince reads the runs, task instances and queue entries stamped after seq: with
	// seq the Seq of an earlier transaction, exactly what every later commit wrote.
	ChangesSince(seq int64) (Changes, error)

	// NextIDs are the ids the next run and the next queue entry inserted get: exact under the
	// writers' lock, so a pass gives its new rows their ids itself (InsertRun and
	// InsertEntries keep an id that is set).
	NextIDs() (run, entry int64, err error)
	// RunExists reports whether dag dagID has a run runID.
	RunExists(dagID, runID string) (bool, error)

	// Runs, task instances, attempts, DAGs, commands.
	InsertRun(r *Run) error
	UpdateRun(r *Run) error
	OpenRuns() ([]Run, error)
	RunByPK(pk int64) (Run, error)
	InsertTI(ti *TaskInstance) error
	UpdateTI(ti *TaskInstance) error
	// PutTIs writes task instances, inserting the missing ones, in few statements.
	PutTIs(tis []*TaskInstance) error
	// ReserveEntryIDs takes the queue IDs up to last: no entry inserted later gets one (a
	// mapped task's line queues its instances with the IDs its expansion reserved, §14).
	ReserveEntryIDs(last int64) error
	TaskInstances(run int64) ([]TaskInstance, error)
	InsertAttempt(a *Attempt) error
	// PutAttempts is InsertAttempt for many, in a few statements; of two with the same
	// (run, task, try) the later wins.
	PutAttempts(as []*Attempt) error
	UpsertDAG(dagID, file, schedule string, now time.Time) error
	// VersionKeys lists every stored DAG version's number and hash (§12); VersionOf is the
	// number of a DAG's version with a hash, 0 for none.
	VersionKeys() ([]VersionKey, error)
	VersionOf(dagID, hash string) (int, error)
	// PutDAGVersion records v as its DAG's current version: inserted when v.Source is set (a
	// new version), else seen again. The DAG's row must exist (UpsertDAG). A number or hash
	// another version of the DAG holds is ErrConflict.
	PutDAGVersion(v *DAGVersion, now time.Time) error
	DAGStates() (map[string]DAGState, error)
	SetCheckpoint(dagID string, at time.Time) error
	SetPaused(dagID string, paused bool, now time.Time) error
	SetImportErrors(errs map[string]string, now time.Time) error
	InsertCommand(c *Command, now time.Time) error
	// InsertEvent writes an audit event (§10.4), in the transaction of the change it records.
	InsertEvent(e *Event) error
	// InsertNotifications puts events in the outbox (§13), in the transaction of the change
	// that causes them, and sets the IDs of those inserted; one whose Key is stored already is
	// dropped (ID 0), so an event is never produced twice. It returns how many were inserted.
	InsertNotifications(ns []*Notification) (int, error)
	// ClaimNotifications claims up to limit rows to send for sender until leaseUntil: pending
	// rows due at now, oldest first, and sending rows whose sender's lease lapsed (a sender that
	// died). Each claim begins a try (Tries + 1).
	ClaimNotifications(sender string, now, leaseUntil time.Time, limit int) ([]Notification, error)
	// SettleNotification records the outcome of the try a claim began (the row's Tries then);
	// false, and nothing written, when the row is no longer sender's under that try (its lease
	// lapsed and another daemon took it).
	SettleNotification(id int64, sender string, tries int, o NotificationOutcome) (bool, error)
	// SetNote writes the note of a run (taskID "") or of one of its task instances, with who
	// wrote it and when; nothing else writes these columns.
	SetNote(run int64, taskID, note, by string, at time.Time) error
	// DeleteRun deletes a run with its task instances, attempts, queue entries (their
	// requirement rows and claims) and commands, and leaves a tombstone ChangesSince reports.
	// A run with an admitted entry is ErrConflict: its attempt must end first.
	DeleteRun(pk int64) error
	// PruneRuns deletes up to limit runs that ended before `before`, oldest first, with
	// everything they hold (as DeleteRun), and returns them (§12). It never deletes an open
	// run, a run with a waiting or admitted entry, the newest run of a DAG, or the highest run
	// id. A run that ended less than an hour before now leaves a tombstone ChangesSince reports.
	PruneRuns(before, now time.Time, limit int) ([]PrunedRun, error)
	// PruneEvents deletes up to limit audit events older than before, oldest first, and up to
	// limit settled notifications (delivered or failed) created before it (§13).
	PruneEvents(before time.Time, limit int) (int, error)
	// PruneVersions deletes up to limit DAG versions last seen before `before` that are
	// neither their DAG's current nor its highest and that no run, entry or attempt records.
	PruneVersions(before time.Time, limit int) (int, error)
	// PrunePoolHistory deletes the capacity changes before `before` except each pool's last
	// one at or before it (the capacity a window starting there begins with), and the pool use
	// slices before it, and says how many capacity changes it deleted.
	PrunePoolHistory(before time.Time) (int, error)
	PendingCommands(owners []string) ([]Command, error)
	HasPendingCommand(run int64, kind vocab.CommandKind) (bool, error)
	DoneCommand(id int64, now time.Time, refused error) error

	// Queue entries and claims.
	InsertEntry(e *Entry) error
	// InsertEntries queues entries in the order given (their queue IDs follow it) with their
	// requirement rows, in a few statements; no two may share (run, task, try).
	InsertEntries(es []*Entry) error
	Entries(states ...vocab.EntryState) ([]Entry, error)
	EndEntry(id int64, state vocab.EntryState, code vocab.ReasonCode, reason string, now time.Time) error
	// SetImplicitLimit sets an implicit pool's capacity on entries' requirement rows (adding
	// the row where missing; capacity 0 removes it): a reload of max_running (§4.2).
	SetImplicitLimit(entries []int64, pool string, capacity int) error
	SetForce(id int64) error
	// RequestStop asks the daemon running an admitted entry's attempt to stop it: the entry
	// gets the stop request's code (vocab.ReasonCode.StopsTo: what the task becomes once the
	// attempt ended) and the reason; ErrEntryState unless it is
	// admitted.
	RequestStop(id int64, code vocab.ReasonCode, reason string) error
	Admit(e *Entry, daemon string, epoch int64, now, leaseUntil time.Time) error
	// SetPGIDs records the process groups of admitted entries' attempts (entry → pgid) on the
	// claims daemon holds under epoch, in one statement.
	SetPGIDs(pgids map[int64]int, daemon string, epoch int64) error
	HoldsClaim(entry int64, daemon string, epoch int64) (bool, error)
	Claims() ([]Claim, error)
	QueuedCount(pool string) (int, error)
	RequeueEntry(id int64) error
	ReleaseEntry(id int64) (vocab.EntryState, error)
	ReleaseHeld(id int64, daemon string, epoch int64, now time.Time) (bool, error)
	RequeueHeld(id int64, daemon string, epoch int64) (bool, error)
	RetireOrphans(now time.Time) (int, error)
	FinishDrain(name string, now time.Time) (bool, error)
	Reschedule(id int64, keep []string, notBefore time.Time) error
	RecordEnd(id int64, a *Attempt) error

	// Users, tokens and sessions (§15). InsertUser is ErrConflict for a name taken; UpdateUser
	// writes the hash and roles of an existing user (ErrNotFound); DeleteUser deletes a user
	// with its tokens. RevokeToken is ErrNotFound for an unknown id (of user, unless user is "").
	InsertUser(u *User, now time.Time) error
	UpdateUser(u *User, now time.Time) error
	DeleteUser(name string) error
	InsertToken(tk *Token) error
	RevokeToken(id int64, user string, now time.Time) (Token, error)
	// DeleteExpiredTokens deletes the tokens named name (every user's) expired at now: the
	// short-lived tokens the server makes for itself, which nobody revokes.
	DeleteExpiredTokens(name string, now time.Time) (int, error)
	// PutSession writes a session, DeleteSession removes one, PruneSessions those expired at now.
	PutSession(token string, data []byte, expiry time.Time) error
	DeleteSession(token string) error
	PruneSessions(now time.Time) (int, error)

	// Pools.
	Pools() ([]Pool, error)
	PoolByName(name string) (Pool, error)
	PutPool(p *Pool, now time.Time) error
	DeletePool(name string, now time.Time) error
	PoolHeld(name string) (held, waiting int, err error)

	// Owners and takeover (§9).
	Owners() ([]Owner, error)
	OwnerByID(id string) (Owner, error)
	PutOwner(o *Owner) error
	Heartbeat(id string, epoch int64, now, leaseUntil time.Time) (Owner, error)
	ReleaseOwner(id string, epoch int64, now time.Time) error
	DeleteOwner(id string, epoch int64) error
	MarkOwnerHandled(id string, epoch int64) error
	ClaimsOf(owner string, maxEpoch int64) ([]Claim, error)
	ReleaseOwnerClaims(owner string, maxEpoch int64) ([]int64, error)
	AdoptRuns(from, to string, runTypes ...vocab.RunType) (int, error)
	FailOwnerRuns(owner string, runType vocab.RunType, reason string, now time.Time) (ended []Run, skipped int, err error)
	FailRun(r *Run, reason string, now time.Time) error

	// Backfills (§11). InsertBackfill creates one with its dates, in the order given, pending;
	// OpenBackfills lists the running and cancelling ones of a DAG ("" for all); BackfillWork
	// reads each open backfill with its next pending dates (at most limit) and the runs at
	// their logical dates; StepBackfill writes what a pass did with one (ErrConflict when it
	// changed since it was read); SetBackfillPaused and CancelBackfill are a person's
	// (ErrConflict once it is over); AdoptBackfills moves a dead daemon's open backfills to a
	// live one; RunsBetween is Reader.ListRunsBetween in the transaction.
	InsertBackfill(b *Backfill, dates []time.Time) error
	BackfillByID(id int64) (Backfill, error)
	OpenBackfills(dagID string) ([]Backfill, error)
	BackfillWork(limit int) ([]BackfillWork, error)
	StepBackfill(s BackfillStep, now time.Time) error
	SetBackfillPaused(id int64, paused bool, now time.Time) error
	CancelBackfill(id int64, now time.Time) error
	AdoptBackfills(from, to string) (int, error)
	RunsBetween(dagID string, from, to time.Time) ([]Run, error)
}

// Options tune Open.
type Options struct {
	// Synchronous is SQLite's synchronous pragma, "full" or "normal" (any case; "off" for
	// tests); "" means FULL (§8). FULL syncs every commit; NORMAL in WAL mode syncs at
	// checkpoints only, so a power loss may lose the last commits, never a crash of the
	// process. PostgreSQL refuses it: its durability is the server's.
	Synchronous string
	// ReadOnly opens the database for reading only (SQLite mode=ro): nothing is created or
	// migrated, and a read works without write access to the file. The schema must be this
	// binary's; an older one is refused (ErrSchemaTooOld) until a writer (poolflow serve)
	// migrates it, and a missing SQLite file is an error matching fs.ErrNotExist (IsMissing).
	ReadOnly bool
	// OpTimeout bounds one operation; 0 means OpTimeout (§4.9). For tests.
	OpTimeout time.Duration
}

// Timeout is the bound of one operation under these options.
func (o Options) Timeout() time.Duration {
	if o.OpTimeout > 0 {
		return o.OpTimeout
	}
	return OpTimeout
}

// OpTimeout bounds one store operation (§4.9).
const OpTimeout = 5 * time.Second

// SchemaVersion is the newest schema this binary knows; every driver's migrations reach it.
func SchemaVersion() int { return schemaVersion }

// schemaVersion is raised with a migration of every driver (their tests check they agree).
const schemaVersion = 21

// Micros converts a time to the stored form: microseconds since the Unix epoch, UTC.
func Micros(t time.Time) int64 { return t.UnixMicro() }

// FromMicros converts the stored form to a UTC time.
func FromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

// Vacuum gives the space deleted rows left back (db clean --vacuum): SQLite rewrites the file,
// and a database created before auto_vacuum was set becomes incremental, so that retention
// shrinks it from then on; PostgreSQL runs a plain VACUUM. It holds the writers' lock for as
// long as it takes.
func Vacuum(ctx context.Context, st Store) error {
	v, ok := st.(interface {
		Vacuum(ctx context.Context) error
	})
	if !ok {
		return fmt.Errorf("%w: a %s store cannot be vacuumed", ErrInvalidOption, st.Driver())
	}
	return v.Vacuum(ctx)
}

// TableCount is how many rows Copy moved into one table.
type TableCount struct {
	Table string
	Rows  int
}

// Copy copies every table of an installation from one store into another (SQLite to
// PostgreSQL, say), keeping ids, so that runs, entries and commands keep their keys and new
// ones continue after them. The target must be empty unless replace, which deletes its rows
// first; a failed copy changes nothing. Stop the daemons of the source first.
func Copy(ctx context.Context, from, to Store, replace bool) ([]TableCount, error) {
	c, ok := from.(interface {
		CopyTo(ctx context.Context, to Store, replace bool) ([]TableCount, error)
	})
	if !ok {
		return nil, fmt.Errorf("%w: a %s store cannot be copied", ErrInvalidOption, from.Driver())
	}
	return c.CopyTo(ctx, to, replace)
}
