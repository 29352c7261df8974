package store

import "testing"

// TestCanMove lists the allowed moves: nothing leaves a terminal state.
func TestCanMove(t *testing.T) {
	t.Parallel()
	all := []EntryState{EntryWaiting, EntryAdmitted, EntryDone, EntryExpired, EntryCancelled, EntryRejected, EntryRetired}
	allowed := map[[2]EntryState]bool{
		{EntryWaiting, EntryAdmitted}: true, {EntryAdmitted, EntryWaiting}: true, {EntryAdmitted, EntryDone}: true,
		{EntryWaiting, EntryDone}: true, {EntryWaiting, EntryExpired}: true, {EntryWaiting, EntryCancelled}: true,
		{EntryWaiting, EntryRejected}: true, {EntryWaiting, EntryRetired}: true,
	}
	for _, from := range all {
		for _, to := range all {
			if got := CanMove(from, to); got != allowed[[2]EntryState{from, to}] {
				t.Errorf("CanMove(%s, %s) = %v", from, to, got)
			}
			if from.Terminal() && CanMove(from, to) {
				t.Errorf("%s is terminal but may become %s", from, to)
			}
		}
	}
}
