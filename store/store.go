package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-sqlite3" // the SQLite driver
)

//go:embed migrations/*.sql
var migrations embed.FS

// Errors the store's callers act on.
var (
	ErrNotFound      = errors.New("not found")
	ErrSchemaTooNew  = errors.New("database schema is newer than this binary")
	ErrUnavailable   = errors.New("pool state is unavailable")
	ErrConflict      = errors.New("conflict")
	ErrFenced        = errors.New("claim is held under another epoch")
	ErrInvalidOption = errors.New("invalid option")
)

// OpTimeout bounds one store operation (§4.9).
const OpTimeout = 5 * time.Second

// Store is an open poolflow database.
type Store struct {
	path string
	// w is the single writer connection: every state change goes through it, so data_version
	// on it changes only when another process commits.
	w *sql.DB
	// r serves reads (API, UI, CLI) without waiting behind the writer.
	r *sql.DB

	opts Options

	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt
}

// Options tune Open.
type Options struct {
	// Synchronous is SQLite's synchronous pragma, "full" or "normal" (any case; "off" for tests); "" means FULL
	// (§8). FULL syncs every commit; NORMAL in WAL mode syncs at checkpoints only, so a power
	// loss may lose the last commits, never a crash of the process.
	Synchronous string
	// ReadOnly opens the database for reading only (SQLite mode=ro): nothing is created or
	// migrated, and a read works without write access to the file. The schema must be this
	// binary's; an older one is refused until a writer (poolflow serve) migrates it.
	ReadOnly bool
}

// Open opens (creating if needed) the database at path and migrates it to the newest schema.
// A database whose schema is newer than this binary is refused with ErrSchemaTooNew.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs // attempts carry it so a restarted daemon finds its own orphans (§4.8)
	}
	sync := strings.ToUpper(opts.Synchronous)
	switch sync {
	case "":
		sync = "FULL"
	case "FULL", "NORMAL", "OFF": // OFF syncs nothing: for tests only, not offered by poolflow.yaml
	default:
		return nil, fmt.Errorf("%w: synchronous %q (want full or normal)", ErrInvalidOption, opts.Synchronous)
	}
	if opts.ReadOnly {
		return openReadOnly(ctx, path, opts)
	}
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", sync)
	q.Set("_foreign_keys", "on")
	q.Set("_busy_timeout", strconv.Itoa(int(OpTimeout/time.Millisecond)))
	q.Set("_txlock", "immediate")
	w, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxLifetime(0)
	q.Set("_txlock", "deferred")
	r, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	s := &Store{path: path, w: w, r: r, opts: opts}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Options are the options the store was opened with, for a second handle on the same file.
func (s *Store) Options() Options { return s.opts }

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Close closes both connection pools.
func (s *Store) Close() error {
	s.stmtMu.Lock()
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = nil
	s.stmtMu.Unlock()
	return errors.Join(s.w.Close(), s.r.Close())
}

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, f := range files {
		base := strings.TrimPrefix(f, "migrations/")
		v, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("migration %s: bad version prefix", base)
		}
		body, err := migrations.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: base, sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// SchemaVersion is the newest schema this binary knows.
func SchemaVersion() int {
	ms, _ := loadMigrations()
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

func (s *Store) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("migrate %s: %w", s.path, err)
	}
	var have int
	if err := s.w.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("migrate %s: %w", s.path, err)
	}
	if known := ms[len(ms)-1].version; have > known {
		return fmt.Errorf("%s: %w (database at version %d, binary knows up to %d); upgrade poolflow",
			s.path, ErrSchemaTooNew, have, known)
	}
	for _, m := range ms {
		if m.version <= have {
			continue
		}
		// Re-read the version under the write lock: another process may be migrating too.
		err := s.inTx(ctx, func(tx *sql.Tx) error {
			var cur int
			if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&cur); err != nil {
				return err
			}
			if cur >= m.version {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, Micros(time.Now()))
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
	}
	return nil
}

// inTx runs fn in one BEGIN IMMEDIATE transaction on the writer, bounded by OpTimeout.
// The rollback runs without the caller's cancellation so it still happens after ctx ends.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return unavailable(err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return unavailable(err)
	}
	return nil
}

// ioFailure reports whether a driver error is one of §4.9's conditions (an I/O error, a full
// disk, a lock held past the bound, a damaged file) rather than a refused statement: this is
// the one place that knows SQLite's codes.
func ioFailure(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sqlite3.ErrIoErr, sqlite3.ErrFull, sqlite3.ErrBusy, sqlite3.ErrLocked, sqlite3.ErrCorrupt, sqlite3.ErrNotADB,
			sqlite3.ErrCantOpen, sqlite3.ErrProtocol, sqlite3.ErrNomem:
			return true
		}
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, sql.ErrTxDone)
}

// unavailable marks I/O-level failures (locks held past the bound, disk errors, timeouts) as
// ErrUnavailable, the condition of §4.9, keeping the cause.
func unavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// DataVersion returns SQLite's data_version on the writer connection: it changes when another
// connection (another process, or this process's readers) commits.
func (s *Store) DataVersion(ctx context.Context) (int64, error) {
	var v int64
	err := s.w.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v)
	return v, err
}

// Micros converts a time to the stored form.
func Micros(t time.Time) int64 { return t.UnixMicro() }

// FromMicros converts the stored form to a UTC time.
func FromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

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
	return FromMicros(v.Int64)
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
