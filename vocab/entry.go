package vocab

// EntryState is a queue entry's state. Entries move only along the state machine below; every
// store write of a state names the states it may come from (MovesFrom), so a late or repeated
// call (a second release, a requeue after the end) changes nothing.
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

// EntryStates lists every entry state: the open ones, then done, then the other ends.
func EntryStates() []EntryState {
	return []EntryState{EntryWaiting, EntryAdmitted, EntryDone, EntryExpired, EntryCancelled, EntryRejected, EntryRetired}
}

// Terminal reports whether no state follows s.
func (s EntryState) Terminal() bool { return s.Valid() && !s.Open() }

// Open reports whether an entry in state s still waits or holds its claims.
func (s EntryState) Open() bool { return s == EntryWaiting || s == EntryAdmitted }

// Valid reports whether s is an entry state.
func (s EntryState) Valid() bool { return in(s, EntryStates()) }

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

// CanMove reports whether the entry state machine allows from → to.
func CanMove(from, to EntryState) bool { return in(from, entryFrom[to]) }

// MovesFrom lists the states an entry may enter to from; none for an unknown state. Store
// drivers write a state change as one conditional UPDATE on these states.
func MovesFrom(to EntryState) []EntryState { return entryFrom[to] }
