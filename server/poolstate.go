package server

import (
	"context"
	"slices"

	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// poolState is one read of every pool with its claims and live entries; occupancy is always
// derived from the claim rows, never from a counter.
type poolState struct {
	pools   []store.Pool
	claims  map[string][]store.Claim   // by pool
	waiting map[string][]store.Entry   // by pool, in admission order
	states  map[int64]vocab.EntryState // entry → state, for every waiting or admitted entry
	live    map[int64]store.Entry      // every waiting or admitted entry, by queue ID
}

func readPoolState(ctx context.Context, st store.Store) (*poolState, error) {
	ps, err := st.ListPools(ctx)
	if err != nil {
		return nil, err
	}
	claims, err := st.ListClaims(ctx)
	if err != nil {
		return nil, err
	}
	live, err := st.ListEntries(ctx, vocab.EntryWaiting, vocab.EntryAdmitted)
	if err != nil {
		return nil, err
	}
	s := &poolState{pools: ps, claims: map[string][]store.Claim{}, waiting: map[string][]store.Entry{},
		states: map[int64]vocab.EntryState{}, live: make(map[int64]store.Entry, len(live))}
	held := map[int64]bool{}
	for _, c := range claims {
		s.claims[c.Pool] = append(s.claims[c.Pool], c)
		held[c.Entry] = true
	}
	for _, e := range live {
		s.states[e.ID] = e.State
		s.live[e.ID] = e
		if e.State != vocab.EntryWaiting {
			continue
		}
		for _, n := range e.Needs {
			s.waiting[n.Pool] = append(s.waiting[n.Pool], e)
		}
	}
	for pool, list := range s.waiting {
		slices.SortStableFunc(list, func(a, b store.Entry) int {
			pa, pb := walkEntry(a, held[a.ID]), walkEntry(b, held[b.ID])
			return pools.Compare(&pa, &pb)
		})
		s.waiting[pool] = list
	}
	return s, nil
}

// walkEntry is what pools.Compare needs of an entry to order it as a pass walks: force starts
// first, then sensors that keep claims between pokes, then priority, due time and queue ID.
func walkEntry(e store.Entry, keepsClaims bool) pools.Entry {
	pe := pools.Entry{ID: e.ID, Priority: e.Priority, Due: e.Due, Force: e.Force, Backfill: e.Backfill != 0}
	if keepsClaims {
		pe.Kept = []pools.Need{{}}
	}
	return pe
}

// usage is one pool's occupancy in Airflow's terms.
type usage struct {
	occupied, running, deferred int // slots held: all, by running attempts, by sensors between pokes
	queuedSlots, queuedEntries  int // slots asked and entries waiting
}

func (s *poolState) usage(pool string) usage {
	var u usage
	for _, c := range s.claims[pool] {
		u.occupied += c.Slots
		if s.states[c.Entry] == vocab.EntryWaiting {
			u.deferred += c.Slots
		} else {
			u.running += c.Slots
		}
	}
	for _, e := range s.waiting[pool] {
		u.queuedEntries++
		for _, n := range e.Needs {
			if n.Pool == pool {
				u.queuedSlots += n.Slots
			}
		}
	}
	return u
}

// openSlots is the room left; -1 for an unlimited pool.
func openSlots(p store.Pool, occupied int) int {
	if p.Slots == pools.Unlimited {
		return -1
	}
	return max(p.Slots-occupied, 0)
}
