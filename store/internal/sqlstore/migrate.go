package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/poolflow/poolflow/store"
)

// Migration is one numbered schema change of a dialect.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations reads NNNN_name.sql files from fsys, by version.
func Migrations(fsys fs.FS) ([]Migration, error) {
	files, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, f := range files {
		v, err := strconv.Atoi(strings.SplitN(f, "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("migration %s: bad version prefix", f)
		}
		body, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: f, SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %s: want version %d", m.Name, i+1)
		}
	}
	return out, nil
}

// migrate applies the dialect's migrations the database lacks, each in its own transaction under
// the writers' lock, re-reading the version there (another process may be migrating too).
func (s *DB) migrate(ctx context.Context) error {
	ms, err := Migrations(s.d.Migrations)
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	if len(ms) == 0 {
		return fmt.Errorf("%s: no migrations", s.d.Name)
	}
	s.known = ms[len(ms)-1].Version
	// An installed database is read without the writers' lock: a busy store still opens, and the
	// daemon's start says it waits for it (§4.9). A new one is created under the lock.
	have, err := s.schemaVersion(ctx, s.r)
	if err != nil {
		if have, err = s.ensureVersionTable(ctx); err != nil {
			return s.openErr(err)
		}
	}
	if have > s.known {
		return fmt.Errorf("%s: %w (database at version %d, binary knows up to %d); upgrade poolflow",
			s.path, store.ErrSchemaTooNew, have, s.known)
	}
	applied := false
	for _, m := range ms {
		if m.Version <= have {
			continue
		}
		done, err := s.apply(ctx, m)
		if err != nil {
			return fmt.Errorf("%s: migration %s: %w", s.path, m.Name, err)
		}
		applied = applied || done
	}
	if applied {
		// A migration is an outside change to every other handle: a daemon still running an
		// older binary hears it and finds the schema too new at its next transaction.
		tx, err := s.Begin(ctx)
		if err != nil {
			return err
		}
		t := tx.(*Tx)
		t.wrote = true
		return tx.Commit()
	}
	return nil
}

// ensureVersionTable creates schema_migrations under the writers' lock (two processes opening
// a new PostgreSQL database at once would otherwise race on the catalog) and reads the version.
func (s *DB) ensureVersionTable(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout())
	defer cancel()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if err := s.d.Lock(ctx, tx); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		return 0, err
	}
	v, err := s.schemaVersion(ctx, tx)
	if err != nil {
		return 0, err
	}
	return v, tx.Commit()
}

// checkReadOnly is migrate for a read-only handle: it compares the database's schema version
// with this binary's without changing anything (store.Options.ReadOnly).
func (s *DB) checkReadOnly(ctx context.Context) error {
	ms, err := Migrations(s.d.Migrations)
	if err != nil || len(ms) == 0 {
		return fmt.Errorf("load migrations: %v", err)
	}
	s.known = ms[len(ms)-1].Version
	have, err := s.schemaVersion(ctx, s.r)
	if err != nil {
		return fmt.Errorf("open %s read-only: %w", s.path, unavailable(s.d.Classify(err)))
	}
	switch {
	case have > s.known:
		return fmt.Errorf("%s: %w (database at version %d, binary knows up to %d); upgrade poolflow",
			s.path, store.ErrSchemaTooNew, have, s.known)
	case have < s.known:
		return fmt.Errorf("%s: %w (database at version %d, binary at %d); run poolflow serve once to migrate it",
			s.path, store.ErrSchemaTooOld, have, s.known)
	}
	return nil
}

func (s *DB) openErr(err error) error {
	return fmt.Errorf("open %s: %w", s.path, unavailable(s.d.Classify(err)))
}

func (s *DB) schemaVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var v int
	err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

func (s *DB) apply(ctx context.Context, m Migration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 4*s.opts.Timeout()) // a rebuild of big tables takes a while
	defer cancel()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return false, unavailable(s.d.Classify(err))
	}
	defer tx.Rollback()
	if err := s.d.Lock(ctx, tx); err != nil {
		return false, unavailable(s.d.Classify(err))
	}
	cur, err := s.schemaVersion(ctx, tx)
	if err != nil {
		return false, unavailable(s.d.Classify(err))
	}
	if cur >= m.Version {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return false, s.d.Classify(err)
	}
	if _, err := tx.ExecContext(ctx, s.bind(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`),
		m.Version, m.Name, store.Micros(time.Now())); err != nil {
		return false, s.d.Classify(err)
	}
	if err := tx.Commit(); err != nil {
		return false, unavailable(s.d.Classify(err))
	}
	return true, nil
}

// SchemaVersion is the newest migration the handle's dialect knows.
func (s *DB) SchemaVersion() int { return s.known }
