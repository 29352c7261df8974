package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Tx is one BEGIN IMMEDIATE transaction on the writer: an admission pass, a CLI command, or a
// daemon's recovery. Every method returns the first error; the caller rolls back on any error
// so no partial claim is ever committed.
type Tx struct {
	s       *Store
	ctx     context.Context
	cancel  context.CancelFunc
	tx      *sql.Tx
	stmts   map[string]*sql.Stmt
	missing []string // statements to prepare for the store once the connection is free
	// failAfter, when > 0, makes the n-th claim insert fail: failure injection for tests.
	failAfter *int
}

// Begin starts a write transaction bounded by OpTimeout.
func (s *Store) Begin(ctx context.Context) (*Tx, error) {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		cancel()
		return nil, unavailable(err)
	}
	return &Tx{s: s, ctx: ctx, cancel: cancel, tx: tx, stmts: map[string]*sql.Stmt{}}, nil
}

// Commit commits; a failed commit is ErrUnavailable.
func (t *Tx) Commit() error {
	defer t.cancel()
	if err := t.tx.Commit(); err != nil {
		return unavailable(err)
	}
	t.s.prepare(t.missing)
	return nil
}

// Rollback abandons the transaction; it is safe after Commit.
func (t *Tx) Rollback() {
	defer t.cancel()
	_ = t.tx.Rollback()
}

// WithTx runs fn in one transaction and commits it, or rolls back on any error.
func (s *Store) WithTx(ctx context.Context, fn func(*Tx) error) error {
	tx, err := s.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (t *Tx) exec(query string, args ...any) (sql.Result, error) {
	st, err := t.stmt(query)
	if err != nil {
		return nil, err
	}
	res, err := st.ExecContext(t.ctx, args...)
	if err != nil {
		err = fmt.Errorf("%s: %w", firstWords(query), err)
		if ioFailure(err) {
			err = unavailable(err)
		}
		return nil, err
	}
	return res, nil
}

// stmt returns the transaction's statement for query. Statements are prepared once per store on
// the writer connection and bound to each transaction, so a pass does not parse its SQL again.
// The writer has one connection, held by this transaction, so a new statement is prepared for
// the store after the transaction ends.
func (t *Tx) stmt(query string) (*sql.Stmt, error) {
	if st, ok := t.stmts[query]; ok {
		return st, nil
	}
	var st *sql.Stmt
	if shared := t.s.prepared(query); shared != nil {
		st = t.tx.StmtContext(t.ctx, shared)
	} else {
		var err error
		if st, err = t.tx.PrepareContext(t.ctx, query); err != nil {
			return nil, unavailable(err)
		}
		t.missing = append(t.missing, query)
	}
	t.stmts[query] = st
	return st, nil
}

func (t *Tx) query(query string, args ...any) (*sql.Rows, error) {
	st, err := t.stmt(query)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(t.ctx, args...)
	if err != nil {
		return nil, unavailable(err)
	}
	return rows, nil
}

// rowScanner is a *sql.Row, or the error preparing its statement.
type rowScanner interface{ Scan(dest ...any) error }

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// queryRow is QueryRowContext on the transaction's prepared statement for query: a one-row read
// on a pass's path does not parse its SQL again.
func (t *Tx) queryRow(query string, args ...any) rowScanner {
	st, err := t.stmt(query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(t.ctx, args...)
}

func firstWords(q string) string {
	f := strings.Fields(q)
	if len(f) > 3 {
		f = f[:3]
	}
	return strings.ToLower(strings.Join(f, " "))
}

// DataVersion reads data_version inside the transaction.
func (t *Tx) DataVersion() (int64, error) {
	var v int64
	err := t.queryRow(`PRAGMA data_version`).Scan(&v)
	return v, unavailable(err)
}

func (s *Store) prepared(query string) *sql.Stmt {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	return s.stmts[query]
}

// prepare prepares statements on the writer for later transactions; a failure only means they
// are prepared per transaction again.
func (s *Store) prepare(queries []string) {
	for _, q := range queries {
		st, err := s.w.Prepare(q)
		if err != nil {
			continue
		}
		s.stmtMu.Lock()
		if s.stmts == nil {
			s.stmts = map[string]*sql.Stmt{}
		}
		if _, dup := s.stmts[q]; dup {
			st.Close()
		} else {
			s.stmts[q] = st
		}
		s.stmtMu.Unlock()
	}
}
