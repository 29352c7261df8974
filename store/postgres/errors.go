package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/poolflow/poolflow/store"
)

// classify is the one place that knows PostgreSQL's error codes. A refused statement carries a
// SQLSTATE: a duplicate key is ErrConflict, another integrity or data error ErrConstraint; the
// classes that mean the server could not do the work now (a lost or refused connection, a server
// shutting down, resources, a lock or statement timeout, a serialization failure or deadlock)
// are ErrUnavailable, §4.9's condition. An error without a SQLSTATE is the way to the server
// failing (a connection that could not be made, read or written, a deadline): ErrUnavailable.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch class := pe.Code[:2]; {
		case pe.Code == "23505": // unique_violation
			return fmt.Errorf("%w: %w", store.ErrConflict, err)
		case class == "23", class == "22": // integrity constraint violation, data exception
			return fmt.Errorf("%w: %w", store.ErrConstraint, err)
		case class == "08", class == "53", class == "57", class == "58", class == "40", class == "XX",
			pe.Code == "55P03", pe.Code == "55000", pe.Code == "3D000", class == "28":
			// connection exception, insufficient resources, operator intervention (admin
			// shutdown, query canceled), system error, transaction rollback (serialization,
			// deadlock), internal error, lock not available, database not accepting
			// connections, no such database, authorization
			return store.Unavailable(err)
		}
		return err
	}
	if lost(err) {
		return store.Unavailable(err)
	}
	return err
}

// lost reports whether err is a failure to reach the server rather than its verdict.
func lost(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), pgconn.Timeout(err), pgconn.SafeToRetry(err):
		return true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone), errors.Is(err, sql.ErrTxDone),
		errors.Is(err, net.ErrClosed), errors.Is(err, pgconn.ErrConnClosed):
		return true
	}
	return false
}
