package store

import "errors"

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

// MovesFrom lists the states an entry may enter to from; none for an unknown state. Drivers
// write a state change as one conditional UPDATE on these states.
func MovesFrom(to EntryState) []EntryState { return entryFrom[to] }
