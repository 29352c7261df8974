package store

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// EntryState is a queue entry's state. Entries move only along the state machine below; every
// write of a state names the states it may come from, so a late or repeated call (a second
// release, a requeue after the end) changes nothing and is an ErrEntryState the caller sees.
//
//	waiting ──admit──▶ admitted ──end──▶ done
//	   ▲                  │
//	   └──requeue, poke───┘
//	waiting ──▶ expired | cancelled | rejected | retired | done (a sensor timed out between pokes)
type EntryState string

const (
	EntryWaiting   EntryState = "waiting"
	EntryAdmitted  EntryState = "admitted"
	EntryDone      EntryState = "done"
	EntryExpired   EntryState = "expired"
	EntryCancelled EntryState = "cancelled"
	EntryRejected  EntryState = "rejected"
	EntryRetired   EntryState = "retired"
)

// Terminal reports whether no state follows s.
func (s EntryState) Terminal() bool { return s != EntryWaiting && s != EntryAdmitted }

// ErrEntryState refuses a state change the entry state machine does not allow.
var ErrEntryState = errors.New("entry state change not allowed")

// entryFrom lists, for each state, the states an entry may enter it from.
var entryFrom = map[EntryState][]EntryState{
	EntryAdmitted:  {EntryWaiting},
	EntryWaiting:   {EntryAdmitted},
	EntryDone:      {EntryAdmitted, EntryWaiting},
	EntryExpired:   {EntryWaiting},
	EntryCancelled: {EntryWaiting},
	EntryRejected:  {EntryWaiting},
	EntryRetired:   {EntryWaiting},
}

// CanMove reports whether the state machine allows from → to.
func CanMove(from, to EntryState) bool {
	for _, f := range entryFrom[to] {
		if f == from {
			return true
		}
	}
	return false
}

// moveEntry sets entry id's state to `to` and the extra assignments in set (with args), only if
// its current state may move there; otherwise it is ErrEntryState naming both states.
func (t *Tx) moveEntry(id int64, to EntryState, set string, args ...any) error {
	from := entryFrom[to]
	if len(from) == 0 {
		return fmt.Errorf("%w: unknown state %q", ErrEntryState, to)
	}
	q := `UPDATE queue_entries SET state = ?`
	if set != "" {
		q += `, ` + set
	}
	q += ` WHERE id = ? AND state IN (?` + strings.Repeat(", ?", len(from)-1) + `)`
	all := make([]any, 0, len(args)+2+len(from))
	all = append(all, to)
	all = append(all, args...)
	all = append(all, id)
	for _, f := range from {
		all = append(all, f)
	}
	res, err := t.exec(q, all...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	var cur string
	switch err := t.queryRow(`SELECT state FROM queue_entries WHERE id = ?`, id).Scan(&cur); {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%w: entry %d does not exist", ErrEntryState, id)
	case err != nil:
		return unavailable(err)
	}
	return fmt.Errorf("%w: entry %d is %s and cannot become %s", ErrEntryState, id, cur, to)
}
