// Package postgres is poolflow's store driver for several machines: one PostgreSQL database
// (github.com/jackc/pgx/v5 through its database/sql adapter, so the statements are the ones
// store/internal/sqlstore shares with SQLite) that every daemon points at.
//
// An installation is a database and a schema (the first of the DSN's search_path); several
// installations may share a database in different schemas. Every write transaction first takes
// the installation's transaction-level advisory lock, which orders the writers of every host as
// SQLite's BEGIN IMMEDIATE orders those of one file: a pass reads pools and claims after every
// earlier writer committed and before any later one starts, so the debit of an admission is
// all-or-nothing and no pool is exceeded under any interleaving (docs/design.md says why this and
// not SERIALIZABLE). Every committing write transaction bumps poolflow_changes and NOTIFYs; a
// listener connection per handle turns that into a wake-up (changes.go).
//
// Importing the package registers the "postgres" driver with store.Open.
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the PostgreSQL schema's numbered migrations.
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // embedded: cannot fail
	}
	return sub
}

func init() { store.Register("postgres", Open) }

// maxConns bounds a handle's connections: the loop's transaction, the API's and UI's reads,
// and one more for the poll of DataVersion. The listener has its own.
const maxConns = 8

// Open connects to the database of dsn (postgres://user:password@host:port/db?…), creates and
// migrates the installation's tables in the DSN's schema, and starts the handle's listener.
// An unreachable server is ErrUnavailable; a schema newer than the binary is ErrSchemaTooNew.
func Open(ctx context.Context, dsn string, opts store.Options) (store.Store, error) {
	if opts.Synchronous != "" {
		return nil, fmt.Errorf("%w: synchronous applies to the sqlite driver only (PostgreSQL's durability is the server's)",
			store.ErrInvalidOption)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: postgres dsn %s: %v", store.ErrInvalidOption, Redact(dsn), err)
	}
	if cfg.ConnectTimeout == 0 || cfg.ConnectTimeout > opts.Timeout() {
		cfg.ConnectTimeout = opts.Timeout()
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "poolflow"
	}
	path := Redact(dsn)
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	schema, err := currentSchema(ctx, db, opts.Timeout())
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	key := lockKey(schema)
	ch := newChanges(cfg, db, channelName(schema), opts.Timeout())
	s, err := sqlstore.New(ctx, sqlstore.Config{
		Dialect: &sqlstore.Dialect{Name: "postgres", Numbered: true, WritingWith: true, Migrations: Migrations(),
			Lock: func(ctx context.Context, tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, key)
				return err
			},
			Classify: classify, ResetSequences: resetSequences, NextIDs: nextIDs, IDsTaken: idsTaken,
			Vacuum:   []string{`VACUUM`},
			Snapshot: &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}},
		Changes: ch,
		Writer:  db, Reader: db, Path: path, Options: opts,
		Reopen: func(ctx context.Context) (store.Store, error) { return Open(ctx, dsn, opts) },
	})
	if err != nil {
		return nil, err
	}
	ch.start()
	return s, nil
}

// currentSchema is the schema the installation's tables live in.
func currentSchema(ctx context.Context, db *sql.DB, bound time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	var schema sql.NullString
	if err := db.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return "", store.Unavailable(classify(err))
	}
	if !schema.Valid {
		return "", fmt.Errorf("%w: no schema of the search_path exists to hold poolflow's tables", store.ErrInvalidOption)
	}
	return schema.String, nil
}

// WriterLock is the advisory lock key that serializes the writers of the installation in
// schema: a test holding it (pg_advisory_lock) stops every writer, as a held SQLite write lock.
func WriterLock(schema string) int64 { return lockKey(schema) }

// lockKey is the installation's advisory lock: advisory locks are per database, so the schema
// tells installations sharing a database apart.
func lockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("poolflow writers\x00" + schema))
	return int64(h.Sum64())
}

// channelName is the installation's NOTIFY channel (channels are per database too).
func channelName(schema string) string {
	h := fnv.New32a()
	h.Write([]byte(schema))
	return fmt.Sprintf("poolflow_changes_%08x", h.Sum32())
}

// Redact is dsn without its password, for logs, Path and process tags.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		// A key=value DSN: drop the password=… pair.
		var kept []string
		for _, f := range strings.Fields(dsn) {
			if !strings.HasPrefix(strings.ToLower(f), "password=") {
				kept = append(kept, f)
			}
		}
		return strings.Join(kept, " ")
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	q := u.Query()
	if q.Has("password") {
		q.Del("password")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// resetSequences makes each identity column continue after the largest id a copy inserted.
// nextIDs reads the next values of the identity sequences without taking them (a pass that
// inserts nothing leaves no gap), or past the highest id when rows were inserted around them,
// and past the highest deleted run's (its tombstone names it to other daemons).
const nextIDs = `SELECT
	GREATEST((SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM dag_runs_id_seq),
		COALESCE((SELECT MAX(id) FROM dag_runs), 0) + 1, COALESCE((SELECT MAX(run) FROM deleted_runs), 0) + 1),
	GREATEST((SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM queue_entries_id_seq),
		COALESCE((SELECT MAX(id) FROM queue_entries), 0) + 1)`

// idsTaken moves table's identity sequence past max, the highest id a pass inserted itself.
func idsTaken(q sqlstore.RowQuerier, table string, max int64) error {
	var v int64
	return q.QueryRow(`SELECT setval(pg_get_serial_sequence($1, 'id'), GREATEST($2::bigint,
		(SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM `+table+`_id_seq)))`, table, max).Scan(&v)
}

func resetSequences(ctx context.Context, tx *sql.Tx) error {
	for _, table := range []string{"backfills", "dag_runs", "queue_entries", "commands", "events", "api_tokens", "pool_capacity"} {
		if _, err := tx.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence($1, 'id'),
			COALESCE((SELECT MAX(id) FROM `+table+`), 0) + 1, false)`, table); err != nil {
			return err
		}
	}
	return nil
}
