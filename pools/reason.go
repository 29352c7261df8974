package pools

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/poolflow/poolflow/vocab"
)

// maxHolderNames bounds the holders a pool_full message names; the rest are counted.
const maxHolderNames = 3

// Code is the reason's kind as stable text, for JSON and metrics labels.
func (r Reason) Code() string { return string(r.Kind) }

// String says in words why the entry waits (§4.5), e.g.
// "waiting: pool db is full (needs 1, 0 of 1 free; held by load.extract try 1)".
func (r Reason) String() string {
	switch r.Kind {
	case vocab.ReasonPoolFull:
		var b strings.Builder
		fmt.Fprintf(&b, "waiting: pool %s is full (needs %d, %d of %d free", r.Pool, r.Need, r.Free, r.Capacity)
		for i, h := range r.Holders {
			if i == maxHolderNames {
				fmt.Fprintf(&b, " and %d more", len(r.Holders)-i)
				break
			}
			if i == 0 {
				b.WriteString("; held by ")
			} else {
				b.WriteString(", ")
			}
			b.WriteString(holderName(h))
		}
		b.WriteString(")")
		return b.String()
	case vocab.ReasonBehind:
		return fmt.Sprintf("waiting: behind %s, the head of strict pool %s", r.behindName(), r.Pool)
	case vocab.ReasonStarvedHead:
		return fmt.Sprintf("waiting: pool %s is kept for starved %s", r.Pool, r.behindName())
	case vocab.ReasonGlobalLimit:
		return fmt.Sprintf("waiting: max_running reached (%d of %d running)", r.Used, r.Capacity)
	case vocab.ReasonDAGLimit:
		return "waiting: max_active_tasks of this run reached"
	case vocab.ReasonTaskLimit:
		return "waiting: task concurrency limit reached"
	case vocab.ReasonBackfillLimit:
		id, pool := BackfillCapOf(r.Pool)
		return fmt.Sprintf("waiting: backfill %s has its max_slots of pool %s in use (%d of %d)", id, pool, r.Used, r.Capacity)
	case vocab.ReasonPaused:
		return "waiting: DAG is paused"
	case vocab.ReasonForbid:
		return "waiting: concurrency_policy forbid waits for the previous run"
	case vocab.ReasonNodeAway:
		return "waiting: node unavailable"
	case vocab.ReasonDraining:
		return fmt.Sprintf("waiting: pool %s is draining", r.Pool)
	case vocab.ReasonUnknownPool:
		return fmt.Sprintf("waiting: pool %s does not exist", r.Pool)
	case vocab.ReasonOverCapacity:
		return fmt.Sprintf("waiting: needs %d slots of pool %s, capacity %d", r.Need, r.Pool, r.Capacity)
	case vocab.ReasonBacklogFull:
		return vocab.ReasonRejected.Say(fmt.Sprintf("pool %s backlog is full", r.Pool))
	}
	return "waiting: " + string(r.Kind)
}

func (r Reason) behindName() string {
	if r.BehindLabel != "" {
		return r.BehindLabel
	}
	return fmt.Sprintf("entry %d", r.Behind)
}

func holderName(h Holder) string {
	name := h.Label
	if name == "" {
		name = fmt.Sprintf("entry %d", h.Entry)
	}
	if h.Slots != 1 {
		name += fmt.Sprintf(" (%d slots)", h.Slots)
	}
	return name
}

// Reason is the wait reason of a blocked entry; "" for NotBlocked and BlockNotMine.
func (b Block) Reason() vocab.ReasonCode {
	switch b {
	case BlockPaused:
		return vocab.ReasonPaused
	case BlockForbid:
		return vocab.ReasonForbid
	case BlockNodeAway:
		return vocab.ReasonNodeAway
	}
	return ""
}

// LimitKind is the reason kind of a wait on the implicit pool name: global_limit, dag_limit or
// task_limit; pool_full for a named pool.
func LimitKind(name string) vocab.ReasonCode {
	switch {
	case name == GlobalPool:
		return vocab.ReasonGlobalLimit
	case strings.HasPrefix(name, DAGPoolPrefix):
		return vocab.ReasonDAGLimit
	case strings.HasPrefix(name, TaskPrefix):
		return vocab.ReasonTaskLimit
	case strings.HasPrefix(name, BackfillCapPrefix):
		return vocab.ReasonBackfillLimit
	}
	return vocab.ReasonPoolFull
}

// BackfillCap is the implicit pool of backfill id's share of pool (max_slots, §11).
func BackfillCap(id int64, pool string) string {
	return BackfillCapPrefix + strconv.FormatInt(id, 10) + "/" + pool
}

// BackfillCapOf splits a backfill cap's name into the backfill's id and the pool it caps.
func BackfillCapOf(name string) (id, pool string) {
	id, pool, _ = strings.Cut(strings.TrimPrefix(name, BackfillCapPrefix), "/")
	return id, pool
}
