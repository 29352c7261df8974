package store

import (
	"errors"
	"fmt"
	"io/fs"
)

// The errors the store's callers act on. Drivers turn their own errors into these at the seam
// (no rows, unique violations, busy or locked databases, lost connections, timeouts), keeping
// the cause in the chain for the message; nothing above the store matches error text.
var (
	// ErrNotFound: the row asked for does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a row with the same key exists (a scheduled fire another daemon created, a
	// duplicate key), or the change conflicts with the row's state.
	ErrConflict = errors.New("conflict")
	// ErrConstraint: the schema refused the values (a CHECK, NOT NULL or foreign key).
	ErrConstraint = errors.New("refused by the schema")
	// ErrUnavailable: pool state cannot be read or written (§4.9): an I/O error, a lock held or
	// an operation running past its bound, a lost connection, a schema newer than the binary.
	ErrUnavailable = errors.New("pool state is unavailable")
	// ErrSchemaTooNew: the database was migrated by a newer binary. At start it is returned on
	// its own; noticed while running it comes wrapped in ErrUnavailable.
	ErrSchemaTooNew = errors.New("database schema is newer than this binary")
	// ErrSchemaTooOld refuses a read-only open of a database a newer binary has not migrated yet.
	ErrSchemaTooOld = errors.New("database schema is older than this binary")
	// ErrFenced: the claim is held under another epoch.
	ErrFenced = errors.New("claim is held under another epoch")
	// ErrEntryState refuses a queue entry state change the entry state machine does not allow
	// (vocab.CanMove): every write of an entry's state names the states it may come from
	// (vocab.MovesFrom), so a late or repeated call (a second release, a requeue after the end)
	// changes nothing.
	ErrEntryState = errors.New("entry state change not allowed")
	// ErrInvalidOption: Open was given an option or a target it cannot use.
	ErrInvalidOption = errors.New("invalid option")
	// ErrInvalid is a request whose arguments cannot be applied (a mark to an unknown state, a
	// command's arguments that do not parse): 400 at the HTTP edge.
	ErrInvalid = errors.New("invalid request")
	// ErrInjected is the failure Tx.FailClaimAfter injects (tests only).
	ErrInjected = errors.New("injected failure")
)

// Unavailable marks err as ErrUnavailable, keeping the cause; nil stays nil.
func Unavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// IsMissing reports whether err is a read-only open of a database that does not exist yet.
func IsMissing(err error) bool { return errors.Is(err, fs.ErrNotExist) }
