package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/poolflow/poolflow/store"
)

// Tx implements store.Tx: one write transaction under the writers' lock.
type Tx struct {
	s       *DB
	ctx     context.Context
	cancel  context.CancelFunc
	tx      *sql.Tx
	stmts   map[string]*sql.Stmt
	missing []string // statements to prepare for the store once the connection is free
	// failAfter, when > 0, makes the n-th claim insert fail: failure injection for tests.
	failAfter *int
	version   int64 // the change version read at the start
	seq       int64 // the change sequence read at the start; after a commit that wrote, its own
	wrote     bool  // a statement changed a row: the commit is an outside change to others
	// useDirty are the fine pool_use slices whose claim history changed (markUse); forceUse
	// makes Commit recompute the store's backlog of them whether or not it is due.
	useDirty map[int64]bool
	forceUse bool
}

var _ store.Tx = (*Tx)(nil)

// Begin starts a write transaction bounded by the operation timeout: BEGIN, the dialect's lock,
// then the change and schema versions. A schema newer than the binary's makes it (and every
// later operation of this handle, until the version read again is one the binary knows)
// ErrUnavailable wrapping ErrSchemaTooNew.
func (s *DB) Begin(ctx context.Context) (store.Tx, error) {
	t, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	return t, nil
}

func (s *DB) begin(ctx context.Context) (*Tx, error) {
	if err := s.schemaErr(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout())
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		cancel()
		return nil, unavailable(s.d.Classify(err))
	}
	t := &Tx{s: s, ctx: ctx, cancel: cancel, tx: tx, stmts: map[string]*sql.Stmt{}}
	if s.d.Uncancelled {
		t.ctx = context.WithoutCancel(ctx)
	}
	fail := func(err error) (*Tx, error) {
		t.Rollback()
		return nil, err
	}
	if err := s.d.Lock(ctx, tx); err != nil {
		return fail(unavailable(s.d.Classify(err)))
	}
	v, seq, schema, err := s.ch.Read(txRows{t})
	if err != nil {
		return fail(unavailable(s.d.Classify(err)))
	}
	if err := s.checkSchema(schema); err != nil {
		return fail(err)
	}
	t.version, t.seq = v, seq
	return t, nil
}

// Commit commits; a failed commit is ErrUnavailable.
func (t *Tx) Commit() error {
	defer t.cancel()
	flushed, err := t.flushUse(t.forceUse)
	if err != nil {
		_ = t.tx.Rollback()
		return unavailable(t.s.d.Classify(err))
	}
	var mark int64
	if t.wrote {
		var err error
		if mark, err = t.s.ch.Wrote(txRows{t}); err != nil {
			_ = t.tx.Rollback()
			return unavailable(t.s.d.Classify(err))
		}
		if mark != t.seq+1 {
			// The rows were stamped t.seq+1: only a writer outside the lock could cause this.
			_ = t.tx.Rollback()
			return fmt.Errorf("%w: change sequence moved from %d to %d under the writers' lock", store.ErrUnavailable, t.seq, mark)
		}
	}
	if err := t.tx.Commit(); err != nil {
		return unavailable(t.s.d.Classify(err))
	}
	t.s.useFlushed(flushed)
	if t.wrote {
		t.s.ch.Committed(mark)
		t.seq = mark
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
func (s *DB) WithTx(ctx context.Context, fn func(store.Tx) error) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// DataVersion is the change version read at the transaction's start.
func (t *Tx) DataVersion() (int64, error) { return t.version, nil }

// Seq is the change number: before Commit that of the last write transaction committed when
// this one started; after a Commit that changed rows, this transaction's own.
func (t *Tx) Seq() int64 { return t.seq }

// stamp is the change number the rows this transaction writes carry (ChangesSince): the one
// its commit takes, since the writers' lock is held from the start to the commit.
func (t *Tx) stamp() int64 { return t.seq + 1 }

// exec runs a statement that changes rows. A refused statement is classified (ErrConflict,
// ErrConstraint, ErrUnavailable) with the statement's first words for context.
func (t *Tx) exec(query string, args ...any) (sql.Result, error) {
	var res sql.Result
	var err error
	if t.s.d.Prepare {
		var st *sql.Stmt
		if st, err = t.stmt(query); err != nil {
			return nil, err
		}
		res, err = st.ExecContext(t.ctx, args...)
	} else {
		res, err = t.tx.ExecContext(t.ctx, t.s.bind(query), args...)
	}
	if err != nil {
		return nil, t.fail(query, err)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		t.wrote = true
	}
	return res, nil
}

func (t *Tx) fail(query string, err error) error {
	err = t.s.d.Classify(err)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, sql.ErrTxDone) || errors.Is(err, sql.ErrConnDone) {
		err = unavailable(err)
	}
	return fmt.Errorf("%s: %w", firstWords(query), err)
}

// insertID runs an INSERT … RETURNING id; ok is false when it inserted nothing (ON CONFLICT
// DO NOTHING met an existing row).
func (t *Tx) insertID(query string, args ...any) (id int64, ok bool, err error) {
	switch err := t.queryRow(query, args...).Scan(&id); {
	case errors.Is(err, sql.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, t.fail(query, err)
	}
	t.wrote = true
	return id, true, nil
}

// stmt returns the transaction's statement for query. With Dialect.Prepare, statements are
// prepared once per store on the writer connection and bound to each transaction, so a pass
// does not parse its SQL again; the writer has one connection, held by this transaction, so a
// new statement is prepared for the store after the transaction ends.
func (t *Tx) stmt(query string) (*sql.Stmt, error) {
	if st, ok := t.stmts[query]; ok {
		return st, nil
	}
	var st *sql.Stmt
	if shared := t.s.prepared(query); shared != nil {
		st = t.tx.StmtContext(t.ctx, shared)
	} else {
		var err error
		if st, err = t.tx.PrepareContext(t.ctx, t.s.bind(query)); err != nil {
			return nil, t.fail(query, unavailable(err))
		}
		t.missing = append(t.missing, query)
	}
	t.stmts[query] = st
	return st, nil
}

func (t *Tx) query(query string, args ...any) (*sql.Rows, error) {
	if !t.s.d.Prepare {
		rows, err := t.tx.QueryContext(t.ctx, t.s.bind(query), args...)
		return rows, unavailable(t.s.d.Classify(err))
	}
	st, err := t.stmt(query)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(t.ctx, args...)
	if err != nil {
		return nil, unavailable(t.s.d.Classify(err))
	}
	return rows, nil
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// queryRow runs a one-row read in the transaction, on its prepared statement with
// Dialect.Prepare: the one-row reads of a pass (HoldsClaim, an entry's state) do not parse their
// SQL again — unprepared, they were a quarter of a fan-out pass's CPU on SQLite.
func (t *Tx) queryRow(query string, args ...any) RowScanner {
	if !t.s.d.Prepare {
		return t.tx.QueryRowContext(t.ctx, t.s.bind(query), args...)
	}
	st, err := t.stmt(query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(t.ctx, args...)
}

// txRows is the transaction as the RowQuerier of Changes.
type txRows struct{ t *Tx }

func (r txRows) QueryRow(query string, args ...any) RowScanner { return r.t.queryRow(query, args...) }

// q is the transaction as a querier with the dialect's placeholders.
func (t *Tx) q() querier { return bound{t.s, t.tx} }

func firstWords(q string) string {
	f := strings.Fields(q)
	if len(f) > 3 {
		f = f[:3]
	}
	return strings.ToLower(strings.Join(f, " "))
}

func (s *DB) prepared(query string) *sql.Stmt {
	if !s.d.Prepare {
		return nil
	}
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	return s.stmts[query]
}

// prepare prepares statements on the writer for later transactions; a failure only means they
// are prepared per transaction again.
func (s *DB) prepare(queries []string) {
	for _, q := range queries {
		st, err := s.w.Prepare(s.bind(q))
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

// execOnce is exec for a statement whose text varies (an IN list of a given length): it is not
// prepared for later transactions.
func (t *Tx) execOnce(query string, args ...any) (sql.Result, error) {
	res, err := t.tx.ExecContext(t.ctx, t.s.bind(query), args...)
	if err != nil {
		return nil, t.fail(query, err)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		t.wrote = true
	}
	return res, nil
}
