// Package explain is the read model of why a waiting entry waits (§4.5). Reasons are not kept
// by the scheduler loop: they are computed when someone reads them, from the store's state at
// that moment, by the same pure walk that admits (pools.Admit), so they are never stale when
// shown and a pass writes no reason rows. The API's task instances and pools board (and so the
// UI) and `poolflow tasks explain` all read them here, in the same words.
//
// It also says how a stored pool and a stored entry look to admission (Pool, Entry), for the
// loop's queue as for the reads, and which try a task instance reports (TryNumber).
package explain

import (
	"context"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/poolflow/poolflow/owners"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Fill sets the ReasonCode and Reason of every waiting entry among es to why it waits now
// (§4.5). Reasons are not kept by the scheduler loop: they are computed when someone reads
// them, from the store's state at that moment, by the same pure walk that admits (pools.Admit),
// so they are never stale when shown and a pass writes no reason rows. Entries that do not wait
// are left as they are (a terminal entry keeps the reason it ended with).
//
// Each owner's entries are walked as that owner's loop walks them: its own entries with their
// blocks (paused, node_unavailable for a dead owner); for a live serve daemon, the entries of
// other live daemons' leader-owned runs as its own (it may admit them, shared.go) with its own
// _global; every other owner's as entries that keep their room; and _global counting only that
// owner's claims (max_running limits each daemon, §9). A shared entry's reason is its owner's
// view. The cost is one read of the queue and a walk per owner with waiting entries.
func Fill(ctx context.Context, st store.Store, now time.Time, es ...*store.Entry) error {
	waiting := false
	for _, e := range es {
		waiting = waiting || e.State == vocab.EntryWaiting
	}
	if !waiting {
		return nil
	}
	x, err := Reasons(ctx, st, now)
	if err != nil {
		return err
	}
	for _, e := range es {
		x.Fill(e)
	}
	return nil
}

// Explanation is why every waiting entry of the store waits, as computed at one moment.
type Explanation struct{ reasons map[int64]explained }

type explained struct {
	code vocab.ReasonCode
	text string
	// Of a hypothetical entry (a clear's preview): admitted at once, or the pool it waits on,
	// the slots of it that it lacks, and its place in that pool's line.
	admitted  bool
	pool      string
	shortfall int
	place     int
}

// hypothesis is what a clear's preview asks the walk: entries that do not exist yet, walked
// with the real ones, and entries the clear would end (a waiting one retired, a running one
// stopped: its claims released), left out of the walk with their claims.
type hypothesis struct {
	extra []store.Entry
	drop  map[int64]bool
	// among, when not nil, are the waiting entries to walk instead of the whole queue (ReasonsAmong).
	among []store.Entry
	// placed are real entries whose place in line is computed too (InLine).
	placed map[int64]bool
}

// Reasons computes why every waiting entry of the store waits now (see Fill).
func Reasons(ctx context.Context, st store.Store, now time.Time) (*Explanation, error) {
	x, err := explainAll(ctx, st, now, hypothesis{})
	if err != nil {
		return nil, err
	}
	return &Explanation{reasons: x}, nil
}

// ReasonsAmong is Reasons over waiting entries the caller has read (the pools page's snapshot of
// the waiting lines reads the queue once and walks it here, issue 21). among must hold every
// entry the walk needs to reach the ones whose reasons are read — all entries walked before
// them, the force starts, the entries keeping claims and those a pool may promote (an entry's
// fate depends only on entries decided before it); the whole queue always does.
func ReasonsAmong(ctx context.Context, st store.Store, now time.Time, among []store.Entry) (*Explanation, error) {
	if among == nil {
		among = []store.Entry{}
	}
	x, err := explainAll(ctx, st, now, hypothesis{among: among})
	if err != nil {
		return nil, err
	}
	return &Explanation{reasons: x}, nil
}

// InLine fills e's reason as Fill does and says, when it waits on a pool, which pool and its
// place in that pool's line (§13: "3rd in line for warehouse"): 1 + the entries that need the
// pool, come before it in the walk that admits, and were not admitted by it. ok is false when
// e does not wait, or waits for something that is no pool's line (paused, its node away).
func InLine(ctx context.Context, st store.Store, now time.Time, e *store.Entry) (pool string, place int, ok bool, err error) {
	if e.State != vocab.EntryWaiting {
		return "", 0, false, nil
	}
	x, err := explainAll(ctx, st, now, hypothesis{placed: map[int64]bool{e.ID: true}})
	if err != nil {
		return "", 0, false, err
	}
	r, found := x[e.ID]
	if !found {
		return "", 0, false, nil
	}
	e.ReasonCode, e.Reason = r.code, r.text
	switch r.code {
	case vocab.ReasonPoolFull, vocab.ReasonBehind, vocab.ReasonStarvedHead, vocab.ReasonDraining:
	default:
		return "", 0, false, nil // a block, a limit (an implicit pool is no line people know) or a refusal
	}
	if r.pool == "" || r.place < 1 || strings.HasPrefix(r.pool, "_") {
		return "", 0, false, nil
	}
	return r.pool, r.place, true, nil
}

// Fill sets e's ReasonCode and Reason when it waits; other entries are left as they are.
func (x *Explanation) Fill(e *store.Entry) {
	if e.State != vocab.EntryWaiting {
		return
	}
	r := x.reasons[e.ID]
	e.ReasonCode, e.Reason = r.code, r.text
}

// explainAll computes why every waiting entry waits, with the hypothesis's extra entries (a
// clear's preview) walked as their owner would walk them: for those, also whether they would be
// admitted at once, and their place in line. The entries it drops are not walked, and their
// claims are free.
func explainAll(ctx context.Context, st store.Store, now time.Time, h hypothesis) (map[int64]explained, error) {
	ps, err := st.ListPools(ctx)
	if err != nil {
		return nil, err
	}
	claims, err := st.ListClaims(ctx)
	if err != nil {
		return nil, err
	}
	entries := h.among
	if entries == nil {
		if entries, err = st.ListEntries(ctx, vocab.EntryWaiting); err != nil {
			return nil, err
		}
	}
	if len(h.drop) > 0 {
		claims = slices.DeleteFunc(claims, func(c store.Claim) bool { return h.drop[c.Entry] })
		entries = slices.DeleteFunc(entries, func(e store.Entry) bool { return h.drop[e.ID] })
	}
	entries = append(entries, h.extra...)
	isExtra := map[int64]bool{}
	for _, e := range h.extra {
		isExtra[e.ID] = true
	}
	flags, err := st.ListDAGStates(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := st.ListOwners(ctx)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	view := owners.NewView(rows, "", now, host, owners.AliveOn(st.Path()))

	held := map[int64][]pools.Need{} // a waiting entry's claims: a reschedule sensor's kept ones
	for _, c := range claims {
		held[c.Entry] = append(held[c.Entry], pools.Need{Pool: c.Pool, Slots: c.Slots})
	}
	byOwner := map[string][]int{}
	for i, e := range entries {
		byOwner[e.Owner] = append(byOwner[e.Owner], i)
	}
	out := make(map[int64]explained, len(entries))
	for owner, mine := range byOwner {
		snap := &pools.Snapshot{Pools: map[string]pools.Pool{}, Holders: map[string][]pools.Holder{}}
		for _, sp := range ps {
			snap.Pools[sp.Name] = Pool(sp)
		}
		for _, c := range claims {
			if c.Pool == pools.GlobalPool && c.Daemon != owner {
				continue
			}
			snap.Holders[c.Pool] = append(snap.Holders[c.Pool], pools.Holder{Entry: c.Entry, Label: c.Label, Slots: c.Slots})
		}
		declare := func(e *store.Entry) {
			for _, n := range e.Needs {
				if _, ok := snap.Pools[n.Pool]; n.Implicit && !ok {
					snap.Pools[n.Pool] = pools.Implicit(n.Pool, n.Capacity)
				}
			}
		}
		var global *store.Requirement // the owner's own _global, from its entries
		for _, i := range mine {
			for j, n := range entries[i].Needs {
				if n.Pool == pools.GlobalPool {
					global = &entries[i].Needs[j]
				}
			}
			declare(&entries[i]) // its own _global capacity first
		}
		alive := view.IsAlive(owner)
		admits := alive && view.IsDaemon(owner) // a live serve daemon admits shared entries too
		for i := range entries {
			e := &entries[i]
			declare(e)
			block := pools.NotBlocked
			local := e.Owner == owner
			switch {
			case e.Owner != owner && view.IsAlive(e.Owner):
				block = pools.BlockNotMine
				if admits && sharedEntry(e, view, held[e.ID]) {
					block, local = pools.NotBlocked, true
				}
			case !view.IsAlive(e.Owner):
				block = pools.BlockNodeAway
			case view.Owners[e.Owner].Kind != vocab.OwnerTest && flags[e.DAGID].Paused:
				block = pools.BlockPaused
			}
			if block == pools.NotBlocked && e.Owner != owner && flags[e.DAGID].Paused {
				block = pools.BlockPaused
			}
			pe := explainEntry(e, held[e.ID], block)
			if e.Owner != owner {
				pe.Needs = localizeGlobal(pe.Needs, global, local)
			}
			snap.Entries = append(snap.Entries, pe)
		}
		dec := pools.Admit(snap, now)
		for _, i := range mine {
			e := &entries[i]
			r, ok := dec.Reason(e.ID)
			x := explained{}
			if isExtra[e.ID] || h.placed[e.ID] {
				x = walkedExtra(snap, dec.Admitted, e.ID, r, ok)
			}
			if !ok {
				if isExtra[e.ID] {
					out[e.ID] = x
				}
				continue
			}
			x.code, x.text = r.Kind, r.String()
			if r.Kind == vocab.ReasonNodeAway && !alive {
				x.text = view.AwayText(owner)
			}
			out[e.ID] = x
		}
	}
	return out, nil
}

// sharedEntry reports whether a waiting entry of another live owner may be admitted by any live
// serve daemon (shared.go): a leader-owned run's entry of a serve daemon, not a sensor's
// (sensors between pokes hold claims or a poke time), without a stop request. A job's entries
// and entries queued under another task definition stay with their owner too; the read path
// has no DAGs and counts them as shared.
func sharedEntry(e *store.Entry, v *owners.View, kept []pools.Need) bool {
	return e.RunType.LeaderOwned() && v.IsDaemon(e.Owner) && len(kept) == 0 && e.NotBefore.IsZero() &&
		e.ReasonCode != vocab.ReasonStopRequested
}

// localizeGlobal drops another owner's _global from an entry's needs and, for one this owner
// may admit, puts its own _global (global) in its place.
func localizeGlobal(needs []pools.Need, global *store.Requirement, local bool) []pools.Need {
	out := needs[:0:0]
	for _, n := range needs {
		if n.Pool != pools.GlobalPool {
			out = append(out, n)
		}
	}
	if local && global != nil {
		out = append(out, pools.Need{Pool: global.Pool, Slots: global.Slots})
	}
	return out
}

// explainEntry is a stored waiting entry as admission sees it (the loop's queue entry for the
// store's rows): a re-poking sensor needs only the pools it does not hold.
func explainEntry(e *store.Entry, kept []pools.Need, block pools.Block) pools.Entry {
	pe := Entry(e, block)
	if len(kept) > 0 {
		pe.Kept = kept
		pe.Needs = pe.Needs[:0:0]
		for _, n := range e.Needs {
			holds := false
			for _, k := range kept {
				holds = holds || k.Pool == n.Pool
			}
			if !holds {
				pe.Needs = append(pe.Needs, pools.Need{Pool: n.Pool, Slots: n.Slots})
			}
		}
	}
	pe.NotBefore, pe.Queued = e.NotBefore, e.CreatedAt
	if e.NotBefore.After(pe.Queued) {
		pe.Queued = e.NotBefore
	}
	return pe
}

// Pool is a stored pool as admission sees it.
func Pool(sp store.Pool) pools.Pool {
	return pools.Pool{Name: sp.Name, Slots: sp.Slots, Ordering: sp.Ordering,
		StarvationAfter: sp.StarvationAfter}
}

// Entry is a stored entry as admission sees it, with its block: its needs in requirement
// order, its priority, due time, deadline and force flag.
func Entry(e *store.Entry, block pools.Block) pools.Entry {
	pe := pools.Entry{ID: e.ID, Label: e.Label, Priority: e.Priority, Due: e.Due, Deadline: e.Deadline,
		Block: block, Force: e.Force, Backfill: e.Backfill != 0, Needs: make([]pools.Need, len(e.Needs))}
	for i, n := range e.Needs {
		pe.Needs[i] = pools.Need{Pool: n.Pool, Slots: n.Slots}
	}
	return pe
}

// walkedExtra is what the walk decided for a hypothetical entry: admitted (no reason), or the
// pool of its reason, the slots of it that it lacks, and its place in that pool's line: 1 +
// the entries that need the pool, are walked before it and were not admitted in this walk.
func walkedExtra(snap *pools.Snapshot, admitted []int64, id int64, r pools.Reason, waits bool) explained {
	if !waits {
		return explained{admitted: true}
	}
	x := explained{pool: r.Pool, place: 1}
	var self *pools.Entry
	for i := range snap.Entries {
		if snap.Entries[i].ID == id {
			self = &snap.Entries[i]
		}
	}
	in := map[int64]bool{} // admitted by the walk: no longer in line
	for _, a := range admitted {
		in[a] = true
	}
	if self != nil && r.Pool != "" {
		// The slots of the pool it lacks (held by claims, or taken by the walk's admissions
		// before it), whatever holds it back there.
		if p, ok := snap.Pools[r.Pool]; ok && p.Slots != pools.Unlimited {
			used := 0
			for _, h := range snap.Holders[r.Pool] {
				used += h.Slots
			}
			for i := range snap.Entries {
				if e := &snap.Entries[i]; in[e.ID] {
					for _, n := range e.Needs {
						if n.Pool == r.Pool {
							used += n.Slots
						}
					}
				}
			}
			for _, n := range self.Needs {
				if n.Pool == r.Pool {
					x.shortfall = max(n.Slots-(p.Slots-used), 0)
				}
			}
		}
	}
	for i := range snap.Entries {
		e := &snap.Entries[i]
		if e.ID == id || r.Pool == "" || self == nil || in[e.ID] {
			continue
		}
		for _, n := range e.Needs {
			if n.Pool == r.Pool && pools.Compare(e, self) < 0 {
				x.place++
				break
			}
		}
	}
	return x
}
