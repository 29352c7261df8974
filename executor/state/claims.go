package state

import (
	"time"

	"github.com/poolflow/poolflow/store"
)

// claimSet is the claims read at the start of a pass, less those the pass released.
type claimSet struct {
	all     []store.Claim
	byEntry map[int64][]int
	gone    map[int64]map[string]bool // entry → the pools it keeps (a sensor between pokes); nil = all released
}

// SetClaims takes the claims read in this pass (under the writers' lock: exact).
func (s *State) SetClaims(claims []store.Claim) {
	s.claims = claimSet{all: claims, byEntry: make(map[int64][]int, len(claims)/2+1)}
	for i, c := range claims {
		s.claims.byEntry[c.Entry] = append(s.claims.byEntry[c.Entry], i)
	}
}

// Holds reports whether daemon holds entry's claims under epoch, as the store has them now.
func (s *State) Holds(entry int64, daemon string, epoch int64) bool {
	if _, gone := s.claims.gone[entry]; gone {
		return false
	}
	for _, i := range s.claims.byEntry[entry] {
		if c := s.claims.all[i]; c.Daemon == daemon && c.Epoch == epoch {
			return true
		}
	}
	return false
}

// Release records that the pass released entry's claims, but those in the pools keep.
func (s *State) Release(entry int64, keep ...string) {
	if s.claims.gone == nil {
		s.claims.gone = map[int64]map[string]bool{}
	}
	var k map[string]bool
	if len(keep) > 0 {
		k = map[string]bool{}
		for _, p := range keep {
			k[p] = true
		}
	}
	s.claims.gone[entry] = k
}

// Claims are the claims held now: those read at the pass's start less those it released.
func (s *State) Claims() []store.Claim {
	if len(s.claims.gone) == 0 {
		return s.claims.all
	}
	out := make([]store.Claim, 0, len(s.claims.all))
	for _, c := range s.claims.all {
		if keep, gone := s.claims.gone[c.Entry]; gone && !keep[c.Pool] {
			continue
		}
		out = append(out, c)
	}
	return out
}

// ExpiredClaims lists the entries whose claims' lease lapsed and whose holder is not an owner
// this daemon knows (a claim written before owners existed): their entries go back to the
// queue (§4.8). The claims of a known owner are released only by the takeover of that owner,
// after its processes on this host are confirmed gone (§9). It also returns the earliest lease
// end of this daemon's own claims, when the loop must renew at the latest.
func (s *State) ExpiredClaims(now time.Time) (expired []int64, minLease time.Time) {
	seen := map[int64]bool{}
	for _, c := range s.Claims() {
		if c.LeaseUntil.Before(now) && !s.View.Known(c.Daemon) {
			if !seen[c.Entry] {
				seen[c.Entry] = true
				expired = append(expired, c.Entry)
			}
		} else if c.Daemon == s.Self && (minLease.IsZero() || c.LeaseUntil.Before(minLease)) {
			minLease = c.LeaseUntil
		}
	}
	return expired, minLease
}

// UsedSlots sums the claims held now per pool.
func (s *State) UsedSlots() map[string]int {
	out := map[string]int{}
	for _, c := range s.Claims() {
		out[c.Pool] += c.Slots
	}
	return out
}

// claimIndex is the claims of one read, by entry: the daemon holding them and the pools (a
// waiting reschedule sensor's kept claims).
type claimIndex struct {
	holder map[int64]string
	kept   map[int64][]store.Requirement
}

func indexClaims(claims []store.Claim) claimIndex {
	ix := claimIndex{holder: map[int64]string{}, kept: map[int64][]store.Requirement{}}
	for _, c := range claims {
		ix.holder[c.Entry] = c.Daemon
		ix.kept[c.Entry] = append(ix.kept[c.Entry], store.Requirement{Pool: c.Pool, Slots: c.Slots})
	}
	return ix
}
