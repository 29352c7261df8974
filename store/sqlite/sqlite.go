// Package sqlite is poolflow's embedded store driver: one SQLite file through mattn/go-sqlite3
// in WAL mode with foreign keys, a busy timeout and synchronous=FULL by default (§8). Every
// write transaction is BEGIN IMMEDIATE on the handle's single writer connection, so SQLite's
// write lock orders the writers of every process sharing the file; reads use a pool of their
// own and never wait for the writer. Outside commits are noticed through PRAGMA data_version.
//
// Importing the package registers the "sqlite" driver with store.Open.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the SQLite schema's numbered migrations.
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // embedded: cannot fail
	}
	return sub
}

func init() { store.Register("sqlite", Open) }

// Open opens (creating if needed) the database file at path and migrates it to the newest
// schema. A database whose schema is newer than this binary is refused with ErrSchemaTooNew.
func Open(ctx context.Context, path string, opts store.Options) (store.Store, error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs // attempts carry it so a restarted daemon finds its own orphans (§4.8)
	}
	sync := strings.ToUpper(opts.Synchronous)
	switch sync {
	case "":
		sync = "FULL"
	case "FULL", "NORMAL", "OFF": // OFF syncs nothing: for tests only, not offered by poolflow.yaml
	default:
		return nil, fmt.Errorf("%w: synchronous %q (want full or normal)", store.ErrInvalidOption, opts.Synchronous)
	}
	if opts.ReadOnly {
		return openReadOnly(ctx, path, opts)
	}
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", sync)
	q.Set("_foreign_keys", "on")
	q.Set("_busy_timeout", strconv.Itoa(int(opts.Timeout()/time.Millisecond)))
	q.Set("_txlock", "immediate")
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		if err := create(ctx, path, q); err != nil {
			return nil, err
		}
	}
	w, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// The single writer connection: every state change goes through it, so data_version on it
	// changes only when another connection commits.
	w.SetMaxOpenConns(1)
	w.SetConnMaxLifetime(0)
	q.Set("_txlock", "deferred")
	r, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	return newDB(ctx, w, r, path, opts)
}

// create makes a new database file with auto_vacuum=incremental, which takes effect only before
// the file's first page is written (see Compact), on a connection of its own: the pragma takes
// the write lock, so the pools' connections, which may open while another process writes, do
// not set it. Another process creating the same file at once is harmless: the setting is the
// same, and the migrations that follow take the lock.
func create(ctx context.Context, path string, q url.Values) error {
	cq := url.Values{}
	for k, v := range q {
		cq[k] = v
	}
	cq.Set("_auto_vacuum", "incremental")
	db, err := sql.Open("sqlite3", "file:"+path+"?"+cq.Encode())
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("create %s: %w", path, store.Unavailable(classify(err)))
	}
	return nil
}

func newDB(ctx context.Context, w, r *sql.DB, path string, opts store.Options) (store.Store, error) {
	return sqlstore.New(ctx, sqlstore.Config{
		Dialect: &sqlstore.Dialect{Name: "sqlite", Prepare: true, Uncancelled: true, Migrations: Migrations(),
			Lock:     func(context.Context, *sql.Tx) error { return nil }, // BEGIN IMMEDIATE took it
			Classify: classify, ResetSequences: func(context.Context, *sql.Tx) error { return nil },
			// A database created by this binary has auto_vacuum=incremental (Open): the pages a
			// retention batch freed go back to the file system at its end, so the file shrinks
			// with the history. On an older database (auto_vacuum none) it does nothing: freed
			// pages are reused by later rows (db clean --vacuum rewrites the file).
			Compact: `PRAGMA incremental_vacuum`,
			Vacuum:  []string{`PRAGMA auto_vacuum = INCREMENTAL`, `VACUUM`},
			// dag_runs would hand out MAX(id)+1 again after the newest run was deleted: the
			// tombstone of the highest deleted id is kept (DeleteRun) and counted, so a deleted
			// run's id is never given again. queue_entries (AUTOINCREMENT) never reuses an id.
			NextIDs: `SELECT MAX(COALESCE((SELECT MAX(id) FROM dag_runs), 0), COALESCE((SELECT MAX(run) FROM deleted_runs), 0)) + 1,
				MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'queue_entries'), 0),
					COALESCE((SELECT MAX(id) FROM queue_entries), 0)) + 1`,
			ReserveIDs: reserveIDs},
		Changes: &changes{w: w},
		Writer:  w, Reader: r, Path: path, Options: opts,
		Reopen: func(ctx context.Context) (store.Store, error) { return Open(ctx, path, opts) },
	})
}

// openReadOnly opens path with mode=ro on both pools: reads never create the file, never run a
// migration and never take the write lock, so `pools list` works on a database the user may
// only read. A missing file is an error matching fs.ErrNotExist.
func openReadOnly(ctx context.Context, path string, opts store.Options) (store.Store, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	s, err := openRO(ctx, path, opts, false)
	if err == nil {
		return s, nil
	}
	// A WAL database needs its -shm file, which a reader without write access to the folder
	// cannot create. When it does not exist no connection is writing, and the file can be read
	// as immutable for this one command.
	var se sqlite3.Error
	if _, serr := os.Stat(path + "-shm"); errors.As(err, &se) && errors.Is(serr, fs.ErrNotExist) &&
		(se.Code == sqlite3.ErrReadonly || se.Code == sqlite3.ErrCantOpen) {
		return openRO(ctx, path, opts, true)
	}
	return nil, err
}

func openRO(ctx context.Context, path string, opts store.Options, immutable bool) (store.Store, error) {
	q := url.Values{}
	q.Set("mode", "ro")
	if immutable {
		q.Set("immutable", "1")
	}
	q.Set("_foreign_keys", "on")
	q.Set("_busy_timeout", strconv.Itoa(int(opts.Timeout()/time.Millisecond)))
	q.Set("_txlock", "deferred")
	dsn := "file:" + path + "?" + q.Encode()
	w, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite3", dsn)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	return newDB(ctx, w, r, path, opts)
}

// classify is the one place that knows SQLite's codes: §4.9's conditions (an I/O error, a full
// disk, a lock held past the bound, a damaged file) are ErrUnavailable; a duplicate key is
// ErrConflict; any other constraint is ErrConstraint.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sqlite3.ErrIoErr, sqlite3.ErrFull, sqlite3.ErrBusy, sqlite3.ErrLocked, sqlite3.ErrCorrupt, sqlite3.ErrNotADB,
			sqlite3.ErrCantOpen, sqlite3.ErrProtocol, sqlite3.ErrNomem:
			return store.Unavailable(err)
		case sqlite3.ErrConstraint:
			switch se.ExtendedCode {
			case sqlite3.ErrConstraintUnique, sqlite3.ErrConstraintPrimaryKey:
				return fmt.Errorf("%w: %w", store.ErrConflict, err)
			}
			return fmt.Errorf("%w: %w", store.ErrConstraint, err)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, sql.ErrTxDone) || errors.Is(err, sql.ErrConnDone) {
		return store.Unavailable(err)
	}
	return err
}

// changes reads PRAGMA data_version, which changes when another connection commits. seen and
// schema are the data_version and schema version of the last Read: Reads run inside write
// transactions, one at a time on the single writer connection.
type changes struct {
	w      *sql.DB
	seen   int64
	schema int
}

func (c *changes) Read(q sqlstore.RowQuerier) (int64, int64, int, error) {
	var v, seq int64
	if err := q.QueryRow(`PRAGMA data_version`).Scan(&v); err != nil {
		return 0, 0, 0, err
	}
	// A migration is a commit of another connection, which changes data_version: while it
	// stays, the schema read last still holds. The change sequence moves with this
	// connection's own commits too, so it is read every time.
	if c.schema > 0 && v == c.seen {
		err := q.QueryRow(`SELECT seq FROM poolflow_changes`).Scan(&seq)
		return v, seq, c.schema, err
	}
	var schema int
	if err := q.QueryRow(`SELECT COALESCE(MAX(version), 0), (SELECT seq FROM poolflow_changes)
		FROM schema_migrations`).Scan(&schema, &seq); err != nil {
		return 0, 0, 0, err
	}
	c.seen, c.schema = v, schema
	return v, seq, schema, nil
}

// Wrote bumps the change sequence (the version stays data_version).
func (c *changes) Wrote(q sqlstore.RowQuerier) (int64, error) {
	var seq int64
	err := q.QueryRow(`UPDATE poolflow_changes SET seq = seq + 1 RETURNING seq`).Scan(&seq)
	return seq, err
}

func (c *changes) Committed(int64)          {}
func (c *changes) Changed() <-chan struct{} { return nil }
func (c *changes) Close() error             { return nil }

// Version reads data_version on the writer connection. A migration by a newer binary is a
// commit of another connection: the pass it causes finds the schema in Begin.
func (c *changes) Version(ctx context.Context) (int64, int, error) {
	var v int64
	err := c.w.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v)
	return v, 0, err
}

// reserveIDs moves an AUTOINCREMENT table's sequence (sqlite_sequence, which NextIDs reads) past
// max, making its row when the table has had no insert yet.
func reserveIDs(q sqlstore.RowQuerier, table string, max int64) error {
	var n int64
	err := q.QueryRow(`UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = ? RETURNING seq`, max, table).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		err = q.QueryRow(`INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?) RETURNING seq`, table, max).Scan(&n)
	}
	return err
}
