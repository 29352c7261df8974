// Package storetest is the conformance suite every store driver passes (Run) and the helpers
// that give tests a real, throw-away store of either driver: a SQLite file in t.TempDir(), or a
// schema of its own in the PostgreSQL server named by POOLFLOW_TEST_POSTGRES, so tests run in
// parallel. Without that variable the PostgreSQL half is skipped and says so; with CI=true it is
// required.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/postgres"
	"github.com/poolflow/poolflow/store/sqlite"
)

// EnvPostgres names the PostgreSQL server the tests may use: a DSN of a superuser (databases and
// schemas are created and dropped), e.g. what scripts/pg-test-server start prints.
const EnvPostgres = "POOLFLOW_TEST_POSTGRES"

// EnvStore selects the driver of Open: "postgres" runs a package's whole suite on PostgreSQL.
const EnvStore = "POOLFLOW_TEST_STORE"

// Harness is what the suite needs of one driver.
type Harness struct {
	Driver string
	// Target returns a fresh, empty database's store target, removed at the test's end.
	Target func(t testing.TB) string
	// Exec runs SQL on target outside any store handle: a newer binary's change, an old schema.
	Exec func(t testing.TB, target, query string, args ...any)
	// Migrations are the driver's numbered migrations.
	Migrations fs.FS
	// Options are the options the suite opens stores with.
	Options store.Options
}

// Open opens target with the harness's options (opts, when given, replaces them) and closes it
// at the test's end.
func (h Harness) Open(t testing.TB, target string, opts ...store.Options) store.Store {
	t.Helper()
	o := h.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	st, err := store.Open(context.Background(), target, o)
	if err != nil {
		t.Fatalf("open %s store: %v", h.Driver, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// New opens a store on a fresh database.
func (h Harness) New(t testing.TB) store.Store { return h.Open(t, h.Target(t)) }

// SQLite is the harness of the sqlite driver: a file in t.TempDir().
func SQLite() Harness {
	return Harness{Driver: "sqlite", Migrations: sqlite.Migrations(), Options: store.Options{Synchronous: "off"},
		Target: func(t testing.TB) string { return "sqlite:" + filepath.Join(t.TempDir(), "poolflow.db") },
		Exec: func(t testing.TB, target, query string, args ...any) {
			t.Helper()
			tg, err := store.ParseTarget(target)
			if err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open("sqlite3", "file:"+tg.DSN+"?_busy_timeout=5000")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(query, args...); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
		}}
}

// Postgres is the harness of the postgres driver: a schema of its own per target in the server
// of POOLFLOW_TEST_POSTGRES. Without the variable the test is skipped, loudly; with CI=true it
// fails instead.
func Postgres(t testing.TB) Harness {
	t.Helper()
	base := PostgresDSN(t)
	return Harness{Driver: "postgres", Migrations: postgres.Migrations(),
		Target: func(t testing.TB) string { return PostgresSchema(t, base) },
		Exec: func(t testing.TB, target, query string, args ...any) {
			t.Helper()
			db := rawPostgres(t, target)
			defer db.Close()
			if _, err := db.Exec(query, args...); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
		}}
}

// PostgresDSN is POOLFLOW_TEST_POSTGRES, or a skip (a failure in CI) when it is not set.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvPostgres)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: CI runs the PostgreSQL half of the store tests (see scripts/pg-test-server)", EnvPostgres)
		}
		t.Skipf("SKIPPED the PostgreSQL half: %s is not set (scripts/pg-test-server start DIR prints one)", EnvPostgres)
	}
	return dsn
}

func rawPostgres(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

var _ = stdlib.GetDefaultDriver // registers "pgx" with database/sql

func randomName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// PostgresSchema creates a schema of its own in base's database, dropped at the test's end,
// and returns a DSN whose search_path is it.
func PostgresSchema(t testing.TB, base string) string {
	t.Helper()
	name := randomName("t_")
	admin := rawPostgres(t, base)
	defer admin.Close()
	if _, err := admin.Exec(`CREATE SCHEMA ` + name); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		db := rawPostgres(t, base)
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, `DROP SCHEMA `+name+` CASCADE`); err != nil {
			t.Logf("drop schema %s: %v", name, err)
		}
	})
	return withParam(t, base, "search_path", name)
}

// PostgresDatabase creates a database of its own, dropped at the test's end (its connections
// are ended first), and returns its DSN: for tests that make the database unreachable.
func PostgresDatabase(t testing.TB) string {
	t.Helper()
	base := PostgresDSN(t)
	name := randomName("t_")
	admin := rawPostgres(t, base)
	defer admin.Close()
	if _, err := admin.Exec(`CREATE DATABASE ` + name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		db := rawPostgres(t, base)
		defer db.Close()
		if _, err := db.Exec(`DROP DATABASE ` + name + ` WITH (FORCE)`); err != nil {
			t.Logf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

func withParam(t testing.TB, dsn, key, value string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("%s must be a postgres:// URL: %v", EnvPostgres, err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// Open is the store of a package's tests: the SQLite file at path, or, with
// POOLFLOW_TEST_STORE=postgres, a fresh PostgreSQL schema (path is then unused). It is closed at
// the test's end.
func Open(t testing.TB, path string, opts store.Options) store.Store {
	t.Helper()
	switch os.Getenv(EnvStore) {
	case "", "sqlite":
		return SQLite().Open(t, "sqlite:"+path, opts)
	case "postgres":
		opts.Synchronous = ""
		return Postgres(t).Open(t, PostgresSchema(t, PostgresDSN(t)), opts)
	default:
		t.Fatalf("%s=%q: want sqlite or postgres", EnvStore, os.Getenv(EnvStore))
		return nil
	}
}

// Admin runs one statement on the server of POOLFLOW_TEST_POSTGRES's database (terminating
// connections, refusing new ones).
func Admin(t testing.TB, query string, args ...any) {
	t.Helper()
	db := rawPostgres(t, PostgresDSN(t))
	defer db.Close()
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// DBName is the database a postgres DSN names.
func DBName(t testing.TB, dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(u.Path[1:])
}

// HoldWriters takes st's writers' lock from outside the store, with no bound, so that every
// write transaction of every handle waits past the operation bound and is ErrUnavailable (§4.9):
// SQLite's BEGIN EXCLUSIVE on the file, PostgreSQL's advisory lock of the installation. The
// returned function releases it (also done at the test's end).
func HoldWriters(t testing.TB, st store.Store) (release func()) {
	t.Helper()
	ctx := context.Background()
	var db *sql.DB
	var err error
	var unlock string
	switch st.Driver() {
	case "sqlite":
		db, err = sql.Open("sqlite3", "file:"+st.Path()+"?_busy_timeout=5000")
		unlock = "ROLLBACK"
	case "postgres":
		db, err = sql.Open("pgx", st.Path())
		unlock = "SELECT pg_advisory_unlock_all()"
	default:
		t.Fatalf("HoldWriters: driver %s", st.Driver())
	}
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Driver() == "sqlite" {
		_, err = conn.ExecContext(ctx, "BEGIN EXCLUSIVE")
	} else {
		var schema string
		if err = conn.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&schema); err == nil {
			_, err = conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, postgres.WriterLock(schema))
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			_, _ = conn.ExecContext(ctx, unlock)
			conn.Close()
			db.Close()
		})
	}
	t.Cleanup(release)
	return release
}

// Exec runs one statement on st's database from outside any store handle, as another process
// (an operator, a newer binary) would: SQLite's file, or PostgreSQL's schema.
func Exec(t testing.TB, st store.Store, query string, args ...any) {
	t.Helper()
	db := outside(t, st)
	defer db.Close()
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// Count runs a SELECT COUNT(*) … on st's database from outside any store handle and returns the
// count: what no store method shows (rows left behind). Write the query without placeholders;
// they differ between the drivers.
func Count(t testing.TB, st store.Store, query string) int {
	t.Helper()
	db := outside(t, st)
	defer db.Close()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// outside opens st's database apart from st.
func outside(t testing.TB, st store.Store) *sql.DB {
	t.Helper()
	var db *sql.DB
	var err error
	switch st.Driver() {
	case "sqlite":
		db, err = sql.Open("sqlite3", "file:"+st.Path()+"?_busy_timeout=5000")
	case "postgres":
		db, err = sql.Open("pgx", st.Path())
	default:
		t.Fatalf("driver %s", st.Driver())
	}
	if err != nil {
		t.Fatal(err)
	}
	return db
}
