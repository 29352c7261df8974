package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/mattn/go-sqlite3"
)

// ErrSchemaTooOld refuses a read-only open of a database a newer binary has not migrated yet.
var ErrSchemaTooOld = errors.New("database schema is older than this binary")

// openReadOnly opens path with mode=ro on both pools: reads never create the file, never run a
// migration and never take the write lock, so `pools list` works on a database the user may
// only read. A missing file is an error matching fs.ErrNotExist.
func openReadOnly(ctx context.Context, path string, opts Options) (*Store, error) {
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

func openRO(ctx context.Context, path string, opts Options, immutable bool) (*Store, error) {
	q := url.Values{}
	q.Set("mode", "ro")
	if immutable {
		q.Set("immutable", "1")
	}
	q.Set("_foreign_keys", "on")
	q.Set("_busy_timeout", strconv.Itoa(int(OpTimeout/time.Millisecond)))
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
	s := &Store{path: path, w: w, r: r, opts: opts}
	if err := s.checkSchema(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// checkSchema compares the database's schema version with this binary's, without changing it.
func (s *Store) checkSchema(ctx context.Context) error {
	var have int
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have)
	if err != nil {
		return fmt.Errorf("open %s read-only: %w", s.path, err)
	}
	switch known := SchemaVersion(); {
	case have > known:
		return fmt.Errorf("%s: %w (database at version %d, binary knows up to %d); upgrade poolflow",
			s.path, ErrSchemaTooNew, have, known)
	case have < known:
		return fmt.Errorf("%s: %w (database at version %d, binary at %d); run poolflow serve once to migrate it",
			s.path, ErrSchemaTooOld, have, known)
	}
	return nil
}

// IsMissing reports whether err is a read-only open of a database that does not exist yet.
func IsMissing(err error) bool { return errors.Is(err, fs.ErrNotExist) }
