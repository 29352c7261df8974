package pools

import (
	"time"

	"github.com/poolflow/poolflow/vocab"
	// Unlimited is the capacity of a pool that is never full.
)

const Unlimited = -1

// Names of the implicit pools (§4.2). They always backfill and never starve-promote.
const (
	GlobalPool    = "_global"
	DAGPoolPrefix = "_dag/"  // _dag/<dag>/<run>: max_active_tasks
	TaskPrefix    = "_task/" // _task/<dag>/<task> and _task/<dag>/<run>/<task>
	// BackfillCapPrefix: _backfill/<id>/<pool> is a backfill's share of a pool (max_slots, §11),
	// debited with the pool itself in the same admission.
	BackfillCapPrefix = "_backfill/"
)

// Pool is one pool as the admission decision sees it.
type Pool struct {
	Name string
	// Slots is the capacity admission uses now (-1 = unlimited). For a pool draining under
	// on_resize: drain, this is the stored (old) capacity until its old queue is empty.
	Slots           int
	Ordering        vocab.Ordering
	StarvationAfter time.Duration // backfill only; 0 = off
	// Implicit pools (_global, _dag/…, _task/…) are limits, not named pools.
	Implicit bool
}

// Need is slots of one pool.
type Need struct {
	Pool  string
	Slots int
}

// Block is a condition that keeps an entry from being admitted regardless of room.
type Block string

const (
	NotBlocked    Block = ""
	BlockPaused   Block = "paused"           // its DAG is paused
	BlockForbid   Block = "forbid"           // concurrency_policy forbid waits for the previous run
	BlockNodeAway Block = "node_unavailable" // bound to a daemon that is away (§9)
	// BlockNotMine marks an entry another live daemon will admit: walked in order, and if it fits
	// it keeps its room in this pass, but it is never in Decision.Admitted.
	BlockNotMine Block = "not_mine"
)

// Entry is one waiting queue entry.
type Entry struct {
	ID       int64  // queue ID: unique, assigned in (due time, run_id, task order) order
	Label    string // "dag.task try N", for reasons
	Priority int
	Due      time.Time // orders the entry (§4.4)
	// Queued is when this entry joined the queue, or for a retry or a re-poke when it rejoined
	// it: starvation_after counts from it (§4.4). Zero means Due, for callers that do not
	// track it.
	Queued   time.Time
	Deadline time.Time // zero = none; expires once now is past it
	// NotBefore hides the entry from every pass while now is before it (a reschedule sensor
	// between pokes): it is neither walked, expired nor given a reason. Zero = visible.
	NotBefore time.Time
	// Needs lists every pool the entry must get in one admission: its requirements and its
	// limits, at most one Need per pool.
	Needs []Need
	// Kept lists pools whose claims the entry already holds (a reschedule sensor's
	// include_deferred claims, §5.1). It has no Need for them; it is walked first in the pools
	// it still needs and never blocks.
	Kept  []Need
	Block Block
	Force bool // force start: walked before everything, must still fit
	// Backfill marks an entry of a backfill's run (§11): it is walked after every entry of the
	// same priority that is not, whatever their due times, so fresh work comes first.
	Backfill bool
}

// Holder is an admitted entry holding slots of a pool.
type Holder struct {
	Entry int64
	Label string
	Slots int
}

// Snapshot is what one admission pass decides from.
type Snapshot struct {
	Pools map[string]Pool
	// Holders per pool name: the claims held now. Occupancy is the sum of their slots.
	Holders map[string][]Holder
	Entries []Entry
}

// Reason is why one entry waits after a pass.
type Reason struct {
	Kind     vocab.ReasonCode
	Pool     string   // the pool the reason is about
	Need     int      // slots the entry needs in Pool
	Free     int      // free slots of Pool in this pass
	Capacity int      // capacity of Pool
	Holders  []Holder // who holds Pool (pool_full only), sorted by entry; shared, read-only
	// Used is the slots of Pool held plus those taken in this pass (pool_full and limits).
	Used int
	// Behind is the entry that holds this one back (behind, starved_head).
	Behind      int64
	BehindLabel string
}

// Decision is the outcome of one pass.
type Decision struct {
	// Admitted lists entries to admit now, in admission order. The caller debits every Need of
	// each in one transaction.
	Admitted []int64
	// Expired lists entries whose deadline passed, by entry ID; they are not admitted.
	Expired []int64
	// NotMine lists the not_mine entries that fit in this pass, in walk order: their room is
	// kept for the daemon that owns them, which admits them in its own pass.
	NotMine []int64
	// Rejected lists, by entry ID, the unblocked entries of this daemon that can never be
	// admitted as the pools stand: one needs a pool that does not exist (unknown_pool) or more
	// slots than a pool's capacity (over_capacity). The caller rejects them or lets them wait.
	Rejected []Rejection
	// why holds the full walk's wait reasons (see Reason); nil for a Queue's pass.
	why *explain
}

// Rejection is an entry that can never be admitted as the pools stand, and why.
type Rejection struct {
	Entry  int64
	Reason Reason // unknown_pool (Pool, Need) or over_capacity (Pool, Need, Capacity)
}
