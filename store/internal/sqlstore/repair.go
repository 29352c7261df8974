package sqlstore

import (
	"context"
	"errors"
	"time"

	"github.com/poolflow/poolflow/store"
)

// errTodo marks the issue 18 store methods being written.
var errTodo = errors.New("not implemented yet")

// InsertEvent writes an audit event (dropped until the events table lands).
func (t *Tx) InsertEvent(e *store.Event) error { return nil }

// SetNote writes a note.
func (t *Tx) SetNote(run int64, taskID, note, by string, at time.Time) error { return errTodo }

// DeleteRun deletes a run.
func (t *Tx) DeleteRun(pk int64) error { return errTodo }

// ListEvents lists audit events.
func (s *DB) ListEvents(ctx context.Context, f store.EventFilter) ([]store.Event, int, error) {
	return nil, 0, errTodo
}
