package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/poolflow/poolflow/store"
)

// Dialect is what the SQL of one driver needs beyond the shared statements.
type Dialect struct {
	Name string // "sqlite" or "postgres"
	// Numbered placeholders: $1, $2, … (PostgreSQL) instead of ?.
	Numbered bool
	// Prepare statements once on the writer and bind them to each transaction (SQLite, whose
	// writer is one connection; pgx caches prepared statements per connection by itself).
	Prepare bool
	// Uncancelled: the statements of a write transaction run with a context that is never
	// cancelled (SQLite: go-sqlite3 runs each statement of a cancellable context in a goroutine
	// of its own, and a pass makes a dozen). The operation bound stays: BEGIN waits at most the
	// busy timeout, and database/sql rolls the transaction back when its bound passes, so the
	// next statement fails; SQLite could interrupt a statement only between its steps anyway.
	Uncancelled bool
	// WritingWith: data-modifying statements in WITH (PostgreSQL). An entry's admission and
	// its release then cost one round trip each under the writers' lock instead of two;
	// SQLite, in-process, does not need it.
	WritingWith bool
	// Migrations holds NNNN_name.sql files at its root.
	Migrations fs.FS
	// Lock runs first in every write transaction and in each migration: it takes the lock that
	// serializes the writers of every process, unless BEGIN took it already (SQLite).
	Lock func(ctx context.Context, tx *sql.Tx) error
	// Classify turns a driver error into a domain error (store.ErrConflict, ErrConstraint,
	// ErrUnavailable) wrapping it, or returns it unchanged.
	Classify func(err error) error
	// Snapshot are the options of a read transaction that sees one snapshot (Copy's source);
	// nil: a deferred transaction (SQLite, whose WAL readers see one snapshot).
	Snapshot *sql.TxOptions
	// ResetSequences makes the id generators follow the ids a copy inserted.
	ResetSequences func(ctx context.Context, tx *sql.Tx) error
	// NextIDs is the statement that reads the ids the next run and the next queue entry
	// inserted get (Tx.NextIDs); IDsTaken, when set, runs after rows of table were inserted
	// with ids of their own, up to max, so the id generator goes on after them (PostgreSQL's
	// sequences; SQLite's follow by themselves).
	NextIDs  string
	IDsTaken func(q RowQuerier, table string, max int64) error
	// ReserveIDs, when set, moves table's id generator past max for Tx.ReserveEntryIDs where
	// IDsTaken does not (SQLite's sqlite_sequence); unset, IDsTaken does it.
	ReserveIDs func(q RowQuerier, table string, max int64) error
	// Compact, when set, runs at the end of a transaction that pruned history (retention.go):
	// it gives the pages the deletes freed back to the file system (SQLite's
	// incremental_vacuum). PostgreSQL reuses its dead rows' space after autovacuum instead.
	Compact string
	// Vacuum are the statements that rewrite the whole database outside a transaction (db
	// clean --vacuum): SQLite's switch to auto_vacuum=incremental with the VACUUM that makes it
	// hold; PostgreSQL's plain VACUUM (the space is reused, the files keep their size).
	Vacuum []string
}

// Changes is how a driver tells outside commits from a handle's own (store.Store.DataVersion).
type Changes interface {
	// Read runs in a write transaction after Lock: the change version as of now, exact, the
	// change sequence (poolflow_changes.seq: the number of the last committed write
	// transaction) and the schema version.
	Read(q RowQuerier) (version, seq int64, schema int, err error)
	// Wrote runs just before the commit of a transaction that changed rows: it bumps the
	// change sequence and returns the new number, which is handed to Committed once the commit
	// succeeded.
	Wrote(q RowQuerier) (seq int64, err error)
	Committed(mark int64)
	// Version is the change version outside any transaction; schema is the schema version
	// when the driver read it (0 = not read).
	Version(ctx context.Context) (version int64, schema int, err error)
	// Changed is store.Store.Changed.
	Changed() <-chan struct{}
	Close() error
}

// RowQuerier runs a one-row statement in a write transaction, for Changes. A pass's Tx runs it
// on a statement prepared once per store: the three statements every pass makes (version,
// sequence, its bump) are not parsed again each time.
type RowQuerier interface {
	QueryRow(query string, args ...any) RowScanner
}

// RowScanner is a *sql.Row, or the error preparing its statement.
type RowScanner interface{ Scan(dest ...any) error }

// rawRows is a RowQuerier over a bare transaction (store copy).
type rawRows struct {
	ctx context.Context
	tx  *sql.Tx
}

func (r rawRows) QueryRow(query string, args ...any) RowScanner {
	return r.tx.QueryRowContext(r.ctx, query, args...)
}

// Config is what a driver hands to New.
type Config struct {
	Dialect *Dialect
	Changes Changes
	// Writer serves write transactions; Reader serves reads (they may be the same pool).
	Writer, Reader *sql.DB
	Path           string // store.Store.Path
	Options        store.Options
	Reopen         func(ctx context.Context) (store.Store, error)
	// Close runs after the pools are closed (a driver's listener, say).
	Close func() error
}

// DB implements store.Store.
type DB struct {
	d      *Dialect
	ch     Changes
	w, r   *sql.DB
	path   string
	opts   store.Options
	reopen func(ctx context.Context) (store.Store, error)
	close  func() error
	known  int // the newest migration of the dialect

	// tooNew is the newer schema version seen, 0 while the schema is one the binary knows.
	// While it is set every operation is unavailable, and the version is read again at most
	// every schemaRecheck (checked): a newer row that is gone again (an upgrade rolled back)
	// makes the handle usable again without a restart.
	tooNew    atomic.Int64
	checked   atomic.Int64 // unix nanoseconds of the last read of the version while tooNew
	binds     sync.Map     // query → rebound query
	stmtMu    sync.Mutex
	stmts     map[string]*sql.Stmt
	closeOnce sync.Once
	use       useBacklog // pool_use slices marked and not recomputed yet (pool_use.go)
}

var _ store.Store = (*DB)(nil)

// New migrates the database to the dialect's newest schema and returns the store. A schema
// newer than the dialect knows is ErrSchemaTooNew. On error the pools are closed.
func New(ctx context.Context, c Config) (*DB, error) {
	s := &DB{d: c.Dialect, ch: c.Changes, w: c.Writer, r: c.Reader, path: c.Path, opts: c.Options,
		reopen: c.Reopen, close: c.Close}
	check := s.migrate
	if c.Options.ReadOnly {
		check = s.checkReadOnly
	}
	if err := check(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Driver names the dialect.
func (s *DB) Driver() string { return s.d.Name }

// Options are the options the store was opened with.
func (s *DB) Options() store.Options { return s.opts }

// Path identifies the database without secrets.
func (s *DB) Path() string { return s.path }

// Reopen opens a second handle on the same database.
func (s *DB) Reopen(ctx context.Context) (store.Store, error) { return s.reopen(ctx) }

// Changed is the driver's wake-up channel, nil when it has none.
func (s *DB) Changed() <-chan struct{} { return s.ch.Changed() }

// Close closes the connection pools and the driver's listener. It is safe to call twice.
func (s *DB) Close() error {
	var err error
	s.closeOnce.Do(func() {
		// The timeline's last marks, so that a clean stop leaves pool_use exact.
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout())
		_ = s.flushUseBacklog(ctx) // a store that cannot be written now keeps its history exact
		cancel()
		s.stmtMu.Lock()
		for _, st := range s.stmts {
			st.Close()
		}
		s.stmts = nil
		s.stmtMu.Unlock()
		errs := []error{s.ch.Close(), s.w.Close()}
		if s.r != s.w {
			errs = append(errs, s.r.Close())
		}
		if s.close != nil {
			errs = append(errs, s.close())
		}
		err = errors.Join(errs...)
	})
	return err
}

// DataVersion changes when another handle commits.
func (s *DB) DataVersion(ctx context.Context) (int64, error) {
	if err := s.schemaErr(ctx); err != nil {
		return 0, err
	}
	v, schema, err := s.ch.Version(ctx)
	if err != nil {
		return 0, unavailable(err)
	}
	if err := s.checkSchema(schema); err != nil {
		return 0, err
	}
	return v, nil
}

// checkSchema records the schema version read while running (0: not read): one newer than the
// binary's makes the handle unavailable, one it knows makes it available again.
func (s *DB) checkSchema(schema int) error {
	switch {
	case schema > s.known:
		s.tooNew.Store(int64(schema))
		s.checked.Store(time.Now().UnixNano())
	case schema > 0:
		s.tooNew.Store(0)
	}
	return s.schemaVerdict()
}

// schemaRecheck is how often a handle that saw a newer schema reads the version again.
const schemaRecheck = 500 * time.Millisecond

// schemaErr is the refusal of every operation while the schema is newer than the binary's. It
// reads the version again first when the last read is schemaRecheck old, so the refusal ends
// once the newer version row is gone, whichever operation comes first (a daemon's poll, an API
// read).
func (s *DB) schemaErr(ctx context.Context) error {
	if s.tooNew.Load() == 0 {
		return nil
	}
	now := time.Now().UnixNano()
	if last := s.checked.Load(); now-last >= int64(schemaRecheck) && s.checked.CompareAndSwap(last, now) {
		ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout())
		var schema int
		err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&schema)
		cancel()
		if err == nil {
			return s.checkSchema(schema)
		}
	}
	return s.schemaVerdict()
}

// schemaVerdict is ErrSchemaTooNew (as ErrUnavailable) while a newer schema is recorded.
func (s *DB) schemaVerdict() error {
	if v := s.tooNew.Load(); v > 0 {
		return fmt.Errorf("%w: %w (database at version %d, binary knows up to %d); upgrade poolflow",
			store.ErrUnavailable, store.ErrSchemaTooNew, v, s.known)
	}
	return nil
}

// bind rewrites ? placeholders for the dialect, once per query text.
func (s *DB) bind(q string) string {
	if !s.d.Numbered {
		return q
	}
	if b, ok := s.binds.Load(q); ok {
		return b.(string)
	}
	b := numbered(q)
	s.binds.Store(q, b)
	return b
}

// numbered turns each ? outside a quoted string into $1, $2, ….
func numbered(q string) string {
	var b strings.Builder
	n, quoted := 0, false
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'':
			quoted = !quoted
		case c == '?' && !quoted:
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// readers is the reader pool with the dialect's placeholders.
func (s *DB) readers() querier { return bound{s, s.r} }

// query runs a read on the reader pool; a read refused after a newer schema was seen is
// unavailable.
func (s *DB) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if err := s.schemaErr(ctx); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, s.bind(q), args...)
	return rows, unavailable(err)
}

// queryRow is query for one row; its error comes with Scan.
func (s *DB) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	return s.r.QueryRowContext(ctx, s.bind(q), args...)
}

// querier is what *sql.Tx and *sql.DB share, so one query serves the loop and the readers.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

type bound struct {
	s *DB
	q querier
}

func (b bound) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := b.s.schemaErr(ctx); err != nil {
		return nil, err
	}
	return b.q.QueryContext(ctx, b.s.bind(query), args...)
}

// unavailable marks a failed read (or a failed commit) as ErrUnavailable, keeping the cause:
// §4.9's condition. sql.ErrNoRows is for the caller to turn into ErrNotFound first.
func unavailable(err error) error { return store.Unavailable(err) }

func nullMicros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

func timeOf(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return store.FromMicros(v.Int64)
}

// nullInt is a number whose 0 means none (a version not known).
func nullInt(v int) any {
	if v == 0 {
		return nil
	}
	return v
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nullInt64 is an id whose 0 means none.
func nullInt64(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}
