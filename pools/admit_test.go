package pools

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/poolflow/poolflow/vocab"
)

func TestAdmit(t *testing.T) {
	t.Parallel()
	x, y := hold(900, "x", 1), hold(901, "y", 1)
	tests := []struct {
		name     string
		pools    map[string]Pool
		holders  map[string][]Holder
		entries  []Entry
		admitted []int64
		expired  []int64
		notMine  []int64
		reasons  map[int64]string
	}{
		{
			name:     "backfill: a later entry that fits starts ahead",
			pools:    poolMap(named("db", 2)),
			holders:  map[string][]Holder{"db": {x}},
			entries:  []Entry{entry(1, "a", ns("db:2")), entry(2, "b", ns("db:1"))},
			admitted: []int64{2},
			reasons: map[int64]string{
				1: "waiting: pool db is full (needs 2, 0 of 2 free; held by b try 1, x try 1)",
			},
		},
		{
			name:     "backfill (§11): a fresh entry of the same priority goes first, however old the backfill's date",
			pools:    poolMap(named("db", 1)),
			entries:  []Entry{entry(1, "old", ns("db:1"), bf(), dueAgo(10*time.Hour), queuedAgo(0)), entry(2, "fresh", ns("db:1"))},
			admitted: []int64{2},
			reasons:  map[int64]string{1: "waiting: pool db is full (needs 1, 0 of 1 free; held by fresh try 1)"},
		},
		{
			name:     "backfill (§11): priority still comes first",
			pools:    poolMap(named("db", 1)),
			entries:  []Entry{entry(1, "fresh", ns("db:1")), entry(2, "urgent", ns("db:1"), bf(), prio(5))},
			admitted: []int64{2},
			reasons:  map[int64]string{1: "waiting: pool db is full (needs 1, 0 of 1 free; held by urgent try 1)"},
		},
		{
			name:    "backfill (§11): max_slots caps the backfill's share, debited with the pool, and others use the rest",
			pools:   poolMap(named("db", 4), Implicit(BackfillCap(7, "db"), 2)),
			holders: map[string][]Holder{"db": {x}, BackfillCap(7, "db"): {x}},
			entries: []Entry{entry(1, "b1", ns("db:1", "_backfill/7/db:1"), bf()), entry(2, "b2", ns("db:1", "_backfill/7/db:1"), bf()),
				entry(3, "fresh", ns("db:1"))},
			admitted: []int64{3, 1},
			reasons:  map[int64]string{2: "waiting: backfill 7 has its max_slots of pool db in use (2 of 2)"},
		},
		{
			name:     "strict: a head that lacks room blocks every later entry of the pool",
			pools:    poolMap(strict("db", 2), named("wh", 1)),
			holders:  map[string][]Holder{"db": {x}},
			entries:  []Entry{entry(1, "a", ns("db:2")), entry(2, "b", ns("db:1")), entry(3, "c", ns("wh:1"))},
			admitted: []int64{3},
			reasons: map[int64]string{
				1: "waiting: pool db is full (needs 2, 1 of 2 free; held by x try 1)",
				2: "waiting: behind a try 1, the head of strict pool db",
			},
		},
		{
			name:     "strict: a head waiting on another pool does not block",
			pools:    poolMap(strict("db", 1), named("wh", 1)),
			holders:  map[string][]Holder{"wh": {x}},
			entries:  []Entry{entry(1, "a", ns("db:1", "wh:1")), entry(2, "b", ns("db:1"))},
			admitted: []int64{2},
			reasons:  map[int64]string{1: "waiting: pool wh is full (needs 1, 0 of 1 free; held by x try 1)"},
		},
		{
			name:     "strict: a head waiting on a limit does not block",
			pools:    poolMap(strict("db", 1), Implicit("_dag/d/r1", 1)),
			holders:  map[string][]Holder{"_dag/d/r1": {x}},
			entries:  []Entry{entry(1, "a", ns("db:1", "_dag/d/r1:1")), entry(2, "b", ns("db:1"))},
			admitted: []int64{2},
			reasons:  map[int64]string{1: "waiting: max_active_tasks of this run reached"},
		},
		{
			name:    "strict: a paused head blocks",
			pools:   poolMap(strict("db", 5)),
			entries: []Entry{entry(1, "a", ns("db:1"), blocked(BlockPaused)), entry(2, "b", ns("db:1"))},
			reasons: map[int64]string{
				1: "waiting: DAG is paused",
				2: "waiting: behind a try 1, the head of strict pool db",
			},
		},
		{
			name:     "backfill: a paused entry is passed over",
			pools:    poolMap(named("db", 5)),
			entries:  []Entry{entry(1, "a", ns("db:1"), blocked(BlockPaused)), entry(2, "b", ns("db:1"))},
			admitted: []int64{2},
			reasons:  map[int64]string{1: "waiting: DAG is paused"},
		},
		{
			name:    "strict: a forbid head blocks",
			pools:   poolMap(strict("db", 5)),
			entries: []Entry{entry(1, "a", ns("db:1"), blocked(BlockForbid)), entry(2, "b", ns("db:1"))},
			reasons: map[int64]string{
				1: "waiting: concurrency_policy forbid waits for the previous run",
				2: "waiting: behind a try 1, the head of strict pool db",
			},
		},
		{
			name:    "strict: a node_unavailable head blocks",
			pools:   poolMap(strict("db", 5)),
			entries: []Entry{entry(1, "a", ns("db:1"), blocked(BlockNodeAway)), entry(2, "b", ns("db:1"))},
			reasons: map[int64]string{
				1: "waiting: node unavailable",
				2: "waiting: behind a try 1, the head of strict pool db",
			},
		},
		{
			name:     "backfill: forbid and node_unavailable entries are passed over",
			pools:    poolMap(named("db", 1)),
			entries:  []Entry{entry(1, "a", ns("db:1"), blocked(BlockForbid)), entry(2, "b", ns("db:1"), blocked(BlockNodeAway)), entry(3, "c", ns("db:1"))},
			admitted: []int64{3},
			reasons: map[int64]string{
				1: "waiting: concurrency_policy forbid waits for the previous run",
				2: "waiting: node unavailable",
			},
		},
		{
			name:    "starvation: a starved entry lacking room closes the pool",
			pools:   poolMap(named("wh", 2)),
			holders: map[string][]Holder{"wh": {x}},
			entries: []Entry{entry(1, "s", ns("wh:2"), dueAgo(20*time.Minute)), entry(2, "a", ns("wh:1"), prio(10))},
			reasons: map[int64]string{
				1: "waiting: pool wh is full (needs 2, 1 of 2 free; held by x try 1)",
				2: "waiting: pool wh is kept for starved s try 1",
			},
		},
		{
			name:     "starvation: before starvation_after the pool backfills",
			pools:    poolMap(named("wh", 2)),
			holders:  map[string][]Holder{"wh": {x}},
			entries:  []Entry{entry(1, "s", ns("wh:2"), dueAgo(10*time.Minute)), entry(2, "a", ns("wh:1"), prio(10))},
			admitted: []int64{2},
			reasons:  map[int64]string{1: "waiting: pool wh is full (needs 2, 0 of 2 free; held by a try 1, x try 1)"},
		},
		{
			// The old bug: counted from the due time, a task that becomes ready late in a run
			// older than starvation_after was starved at once and turned the pool strict.
			name:     "starvation: a task ready late in an old run is not starved at once",
			pools:    poolMap(named("wh", 2)),
			holders:  map[string][]Holder{"wh": {x}},
			entries:  []Entry{entry(1, "s", ns("wh:2"), dueAgo(3*time.Hour), queuedAgo(time.Minute)), entry(2, "a", ns("wh:1"), prio(10))},
			admitted: []int64{2},
			reasons:  map[int64]string{1: "waiting: pool wh is full (needs 2, 0 of 2 free; held by a try 1, x try 1)"},
		},
		{
			name:    "starvation: counts from the queue time, whatever the due time",
			pools:   poolMap(named("wh", 2)),
			holders: map[string][]Holder{"wh": {x}},
			entries: []Entry{entry(1, "s", ns("wh:2"), queuedAgo(11*time.Minute)), entry(2, "a", ns("wh:1"), prio(10))},
			reasons: map[int64]string{
				1: "waiting: pool wh is full (needs 2, 1 of 2 free; held by x try 1)",
				2: "waiting: pool wh is kept for starved s try 1",
			},
		},
		{
			name:     "starvation: a retry that rejoined the queue counts from its rejoining",
			pools:    poolMap(named("wh", 2)),
			holders:  map[string][]Holder{"wh": {x}},
			entries:  []Entry{entry(1, "s", ns("wh:2"), dueAgo(time.Hour), queuedAgo(9*time.Minute)), entry(2, "a", ns("wh:1"), prio(10))},
			admitted: []int64{2},
			reasons:  map[int64]string{1: "waiting: pool wh is full (needs 2, 0 of 2 free; held by a try 1, x try 1)"},
		},
		{
			name:  "not before: a sensor between pokes is invisible, even past its deadline",
			pools: poolMap(named("db", 1)),
			entries: []Entry{
				entry(1, "s", ns("db:1"), prio(10), notBefore(t0.Add(time.Second)), deadline(t0.Add(-time.Hour))),
				entry(2, "t", ns("db:1"), prio(9), notBefore(t0.Add(time.Second))),
				entry(3, "a", ns("db:1")),
			},
			admitted: []int64{3},
		},
		{
			name:     "not before: visible from its time on",
			pools:    poolMap(named("db", 1)),
			entries:  []Entry{entry(1, "s", ns("db:1"), prio(10), notBefore(t0)), entry(2, "a", ns("db:1"))},
			admitted: []int64{1},
			reasons:  map[int64]string{2: "waiting: pool db is full (needs 1, 0 of 1 free; held by s try 1)"},
		},
		{
			name:     "starvation: starvation_after 0 never promotes",
			pools:    poolMap(noStarve(named("wh", 2))),
			holders:  map[string][]Holder{"wh": {x}},
			entries:  []Entry{entry(1, "s", ns("wh:2"), dueAgo(100*time.Hour)), entry(2, "a", ns("wh:1"), prio(10))},
			admitted: []int64{2},
			reasons:  map[int64]string{1: "waiting: pool wh is full (needs 2, 0 of 2 free; held by a try 1, x try 1)"},
		},
		{
			name:     "starvation: a starved entry that fits goes ahead of higher priority",
			pools:    poolMap(named("wh", 2)),
			holders:  map[string][]Holder{"wh": {x}},
			entries:  []Entry{entry(1, "s", ns("wh:1"), dueAgo(20*time.Minute)), entry(2, "a", ns("wh:1"), prio(10))},
			admitted: []int64{1},
			reasons:  map[int64]string{2: "waiting: pool wh is kept for starved s try 1"},
		},
		{
			name:    "starvation: a promoted entry keeps its room while another pool holds it back",
			pools:   poolMap(named("wh", 3), named("db", 1)),
			holders: map[string][]Holder{"db": {x}},
			entries: []Entry{
				entry(1, "s", ns("wh:2", "db:1"), dueAgo(20*time.Minute)),
				entry(2, "a", ns("wh:1"), prio(10)),
				entry(3, "b", ns("wh:1"), prio(5)),
			},
			admitted: []int64{2},
			reasons: map[int64]string{
				1: "waiting: pool db is full (needs 1, 0 of 1 free; held by x try 1)",
				3: "waiting: pool wh is kept for starved s try 1",
			},
		},
		{
			name:    "starvation: a starved entry waiting on a limit keeps nothing",
			pools:   poolMap(named("wh", 1), Implicit("_dag/d/r", 1)),
			holders: map[string][]Holder{"_dag/d/r": {x}},
			entries: []Entry{
				entry(1, "s", ns("wh:1", "_dag/d/r:1"), dueAgo(20*time.Minute), prio(10)),
				entry(2, "a", ns("wh:1")),
			},
			admitted: []int64{2},
			reasons:  map[int64]string{1: "waiting: max_active_tasks of this run reached"},
		},
		{
			name:    "strict head counts as starved in its backfill pools",
			pools:   poolMap(strict("db", 1), named("wh", 2)),
			holders: map[string][]Holder{"db": {x}, "wh": {y}},
			entries: []Entry{entry(1, "a", ns("db:1", "wh:1"), prio(10)), entry(2, "b", ns("wh:1"), prio(5))},
			reasons: map[int64]string{
				1: "waiting: pool db is full (needs 1, 0 of 1 free; held by x try 1)",
				2: "waiting: pool wh is kept for starved a try 1",
			},
		},
		{
			// §4.4, turn 3: a head blocked for a reason of its own blocks its strict pool but
			// is not starved in its backfill pools.
			name:     "starvation: a paused strict head keeps nothing in its backfill pools",
			pools:    poolMap(strict("db", 1), named("wh", 1)),
			holders:  map[string][]Holder{"db": {x}},
			entries:  []Entry{entry(1, "p", ns("db:1", "wh:1"), blocked(BlockPaused), queuedAgo(time.Hour), prio(10)), entry(2, "b", ns("wh:1"))},
			admitted: []int64{2},
			reasons:  map[int64]string{1: "waiting: DAG is paused"},
		},
		{
			// Nor is an entry behind it, which cannot be admitted before it is: a paused DAG
			// cannot freeze a backfill pool through another DAG's starved entry.
			name:  "starvation: an entry behind a paused strict head keeps nothing",
			pools: poolMap(strict("db", 1), named("wh", 1)),
			entries: []Entry{
				entry(1, "p", ns("db:1"), blocked(BlockPaused), prio(10)),
				entry(2, "s", ns("db:1", "wh:1"), queuedAgo(time.Hour), prio(5)),
				entry(3, "b", ns("wh:1")),
			},
			admitted: []int64{3},
			reasons: map[int64]string{
				1: "waiting: DAG is paused",
				2: "waiting: behind p try 1, the head of strict pool db",
			},
		},
		{
			name:    "starvation: the head of one strict pool behind a node_unavailable head in another keeps nothing",
			pools:   poolMap(strict("db", 1), strict("q", 1), named("wh", 1)),
			holders: map[string][]Holder{"q": {x}},
			entries: []Entry{
				entry(1, "n", ns("db:1"), blocked(BlockNodeAway), prio(10)),
				entry(2, "h", ns("db:1", "q:1", "wh:1"), prio(5)),
				entry(3, "b", ns("wh:1")),
			},
			admitted: []int64{3},
			reasons: map[int64]string{
				1: "waiting: node unavailable",
				2: "waiting: behind n try 1, the head of strict pool db",
			},
		},
		{
			name:     "strict head keeps nothing in a pool without starvation",
			pools:    poolMap(strict("db", 1), noStarve(named("wh", 2))),
			holders:  map[string][]Holder{"db": {x}, "wh": {y}},
			entries:  []Entry{entry(1, "a", ns("db:1", "wh:1"), prio(10)), entry(2, "b", ns("wh:1"), prio(5))},
			admitted: []int64{2},
			reasons:  map[int64]string{1: "waiting: pool db is full (needs 1, 0 of 1 free; held by x try 1)"},
		},
		{
			name:    "a wait on room held by kept claims does not block other pools",
			pools:   poolMap(strict("db", 1), named("wh", 1), named("q", 1)),
			holders: map[string][]Holder{"db": {hold(5, "k", 1)}, "q": {x}},
			entries: []Entry{
				entry(1, "a", ns("db:1", "wh:1"), prio(10)),
				entry(2, "b", ns("wh:1")),
				entry(5, "k", ns("q:1"), keeps("db:1")),
			},
			admitted: []int64{2},
			reasons: map[int64]string{
				1: "waiting: pool db is full (needs 1, 0 of 1 free; held by k try 1)",
				5: "waiting: pool q is full (needs 1, 0 of 1 free; held by x try 1)",
			},
		},
		{
			name:    "a kept-claims sensor is walked first",
			pools:   poolMap(named("wh", 1), named("db", 1)),
			holders: map[string][]Holder{"db": {hold(2, "k", 1)}},
			entries: []Entry{
				entry(1, "a", ns("wh:1"), prio(100)),
				entry(2, "k", ns("wh:1"), keeps("db:1")),
			},
			admitted: []int64{2},
			reasons:  map[int64]string{1: "waiting: pool wh is full (needs 1, 0 of 1 free; held by k try 1)"},
		},
		{
			name:     "a kept-claims sensor never blocks a strict pool",
			pools:    poolMap(strict("q", 2), named("db", 1)),
			holders:  map[string][]Holder{"q": {x}, "db": {hold(1, "k", 1)}},
			entries:  []Entry{entry(1, "k", ns("q:2"), keeps("db:1")), entry(2, "a", ns("q:1"))},
			admitted: []int64{2},
			reasons:  map[int64]string{1: "waiting: pool q is full (needs 2, 0 of 2 free; held by a try 1, x try 1)"},
		},
		{
			name:     "a force start jumps ahead",
			pools:    poolMap(Implicit(GlobalPool, 1)),
			entries:  []Entry{entry(1, "a", ns("_global:1"), prio(10)), entry(2, "f", ns("_global:1"), force())},
			admitted: []int64{2},
			reasons:  map[int64]string{1: "waiting: max_running reached (1 of 1 running)"},
		},
		{
			name:    "a force start must fit, and heads a strict pool when it does not",
			pools:   poolMap(strict("db", 2)),
			holders: map[string][]Holder{"db": {x}},
			entries: []Entry{entry(1, "a", ns("db:1"), prio(10)), entry(2, "f", ns("db:2"), force())},
			reasons: map[int64]string{
				1: "waiting: behind f try 1, the head of strict pool db",
				2: "waiting: pool db is full (needs 2, 1 of 2 free; held by x try 1)",
			},
		},
		{
			name:     "a force start that does not fit holds nothing in a backfill pool",
			pools:    poolMap(named("db", 2)),
			holders:  map[string][]Holder{"db": {x}},
			entries:  []Entry{entry(1, "a", ns("db:1"), prio(10)), entry(2, "f", ns("db:2"), force())},
			admitted: []int64{1},
			reasons:  map[int64]string{2: "waiting: pool db is full (needs 2, 0 of 2 free; held by a try 1, x try 1)"},
		},
		{
			name:     "unlimited pools never fill",
			pools:    poolMap(named("u", Unlimited)),
			holders:  map[string][]Holder{"u": {hold(900, "x", 1000)}},
			entries:  []Entry{entry(1, "a", ns("u:5")), entry(2, "b", ns("u:1"))},
			admitted: []int64{1, 2},
		},
		{
			name:    "a not_mine entry that fits keeps its room for its daemon",
			pools:   poolMap(named("db", 1)),
			entries: []Entry{entry(1, "n", ns("db:1"), blocked(BlockNotMine), prio(10)), entry(2, "a", ns("db:1"))},
			notMine: []int64{1},
			reasons: map[int64]string{2: "waiting: pool db is full (needs 1, 0 of 1 free; held by n try 1)"},
		},
		{
			name:    "a not_mine entry that does not fit heads a strict pool",
			pools:   poolMap(strict("db", 1)),
			holders: map[string][]Holder{"db": {x}},
			entries: []Entry{entry(1, "n", ns("db:1"), blocked(BlockNotMine), prio(10)), entry(2, "a", ns("db:1"))},
			reasons: map[int64]string{2: "waiting: behind n try 1, the head of strict pool db"},
		},
		{
			name:  "expiry: entries past their deadline expire; a deadline of now does not",
			pools: poolMap(named("db", 1)),
			entries: []Entry{
				entry(1, "a", ns("db:1"), deadline(t0.Add(-time.Second)), prio(10)),
				entry(2, "b", ns("db:1"), deadline(t0)),
				entry(3, "c", ns("db:1"), deadline(t0.Add(-time.Hour)), blocked(BlockPaused)),
				entry(4, "d", ns("db:1")),
			},
			admitted: []int64{2},
			expired:  []int64{1, 3},
			reasons:  map[int64]string{4: "waiting: pool db is full (needs 1, 0 of 1 free; held by b try 1)"},
		},
		{
			name:  "unknown pool and over capacity neither block nor hold room",
			pools: poolMap(strict("db", 1)),
			entries: []Entry{
				entry(1, "a", ns("nope:1"), prio(3)),
				entry(2, "b", ns("db:2"), prio(2)),
				entry(3, "c", ns("db:1")),
			},
			admitted: []int64{3},
			reasons: map[int64]string{
				1: "waiting: pool nope does not exist",
				2: "waiting: needs 2 slots of pool db, capacity 1",
			},
		},
		{
			name:     "a 0-slot pool admits nothing",
			pools:    poolMap(named("off", 0), named("db", 1)),
			entries:  []Entry{entry(1, "a", ns("off:1", "db:1")), entry(2, "b", ns("db:1"))},
			admitted: []int64{2},
			reasons:  map[int64]string{1: "waiting: needs 1 slots of pool off, capacity 0"},
		},
		{
			name:    "precedence: block before unknown pool, unknown before over capacity",
			pools:   poolMap(named("db", 1)),
			entries: []Entry{entry(1, "a", ns("nope:1"), blocked(BlockPaused)), entry(2, "b", ns("db:2", "nope:1"))},
			reasons: map[int64]string{1: "waiting: DAG is paused", 2: "waiting: pool nope does not exist"},
		},
		{
			name:    "precedence: behind before pool_full",
			pools:   poolMap(strict("db", 1), named("wh", 1)),
			holders: map[string][]Holder{"db": {x}, "wh": {y}},
			entries: []Entry{entry(1, "h", ns("db:1"), prio(1)), entry(2, "a", ns("wh:1", "db:1"))},
			reasons: map[int64]string{
				1: "waiting: pool db is full (needs 1, 0 of 1 free; held by x try 1)",
				2: "waiting: behind h try 1, the head of strict pool db",
			},
		},
		{
			name: "precedence: pool_full, then global, dag and task limits",
			pools: poolMap(named("wh", 1), Implicit(GlobalPool, 1), Implicit("_dag/d/r", 1),
				Implicit("_task/d/t", 1)),
			holders: map[string][]Holder{"wh": {y}, "_global": {x}, "_dag/d/r": {x}, "_task/d/t": {x}},
			entries: []Entry{
				entry(1, "a", ns("_task/d/t:1", "_dag/d/r:1", "_global:1", "wh:1")),
				entry(2, "b", ns("_task/d/t:1", "_dag/d/r:1", "_global:1")),
				entry(3, "c", ns("_task/d/t:1", "_dag/d/r:1")),
				entry(4, "d", ns("_task/d/t:1")),
			},
			reasons: map[int64]string{
				1: "waiting: pool wh is full (needs 1, 0 of 1 free; held by y try 1)",
				2: "waiting: max_running reached (1 of 1 running)",
				3: "waiting: max_active_tasks of this run reached",
				4: "waiting: task concurrency limit reached",
			},
		},
		{
			name:    "a shrunk pool admits nobody until occupancy is under capacity",
			pools:   poolMap(named("db", 1)),
			holders: map[string][]Holder{"db": {hold(900, "x", 2), y}},
			entries: []Entry{entry(1, "a", ns("db:1"))},
			reasons: map[int64]string{1: "waiting: pool db is full (needs 1, 0 of 1 free; held by x try 1 (2 slots), y try 1)"},
		},
		{
			name:  "many holders: three named, the rest counted",
			pools: poolMap(named("db", 5)),
			holders: map[string][]Holder{"db": {
				hold(905, "e", 1), hold(904, "d", 1), hold(903, "c", 1), hold(902, "b", 1), hold(901, "a", 1),
			}},
			entries: []Entry{entry(1, "z", ns("db:1"))},
			reasons: map[int64]string{1: "waiting: pool db is full (needs 1, 0 of 5 free; held by a try 1, b try 1, c try 1 and 2 more)"},
		},
		{
			name:     "all or nothing: a waiting entry debits none of its pools",
			pools:    poolMap(named("src", 1), named("dst", 2)),
			holders:  map[string][]Holder{"dst": {y}},
			entries:  []Entry{entry(1, "a", ns("src:1", "dst:2"), prio(9)), entry(2, "b", ns("src:1")), entry(3, "c", ns("dst:1"))},
			admitted: []int64{2, 3},
			reasons:  map[int64]string{1: "waiting: pool dst is full (needs 2, 0 of 2 free; held by c try 1, y try 1)"},
		},
		{
			name:    "order: priority, then due time, then queue ID",
			pools:   poolMap(named("db", 2)),
			entries: []Entry{entry(1, "a", ns("db:1")), entry(2, "b", ns("db:1"), dueAgo(time.Minute)), entry(3, "c", ns("db:1"), prio(2)), entry(4, "d", ns("db:1"), dueAgo(time.Minute))},
			// c by priority, then b and d (earlier due) by queue ID.
			admitted: []int64{3, 2},
			reasons: map[int64]string{
				1: "waiting: pool db is full (needs 1, 0 of 2 free; held by b try 1, c try 1)",
				4: "waiting: pool db is full (needs 1, 0 of 2 free; held by b try 1, c try 1)",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := Admit(&Snapshot{Pools: tt.pools, Holders: tt.holders, Entries: tt.entries}, t0)
			if !slices.Equal(d.Admitted, tt.admitted) {
				t.Errorf("admitted %v, want %v", d.Admitted, tt.admitted)
			}
			if !slices.Equal(d.Expired, tt.expired) {
				t.Errorf("expired %v, want %v", d.Expired, tt.expired)
			}
			if !slices.Equal(d.NotMine, tt.notMine) {
				t.Errorf("not_mine %v, want %v", d.NotMine, tt.notMine)
			}
			want := tt.reasons
			if want == nil {
				want = map[int64]string{}
			}
			if got := reasonTexts(d); !reflect.DeepEqual(got, want) {
				t.Errorf("reasons:\n got %v\nwant %v", got, want)
			}
		})
	}
}

// TestAdmitSpecExample is §4.4's example: max_running 2, db 1; a{db:1}, b{db:1}, c{} at equal
// priority admits a and c; once a's claim is released the next pass admits b.
func TestAdmitSpecExample(t *testing.T) {
	t.Parallel()
	ps := poolMap(Implicit(GlobalPool, 2), named("db", 1))
	a := entry(1, "run.a", ns("db:1", "_global:1"))
	b := entry(2, "run.b", ns("db:1", "_global:1"))
	c := entry(3, "run.c", ns("_global:1"))

	d := Admit(&Snapshot{Pools: ps, Entries: []Entry{a, b, c}}, t0)
	if !slices.Equal(d.Admitted, []int64{1, 3}) {
		t.Fatalf("first pass admitted %v, want [1 3]", d.Admitted)
	}
	if r, _ := d.Reason(2); r.String() != "waiting: pool db is full (needs 1, 0 of 1 free; held by run.a try 1)" {
		t.Errorf("b waits: %q", r.String())
	}
	if got, want := reasonMap(d)[2].String(), "waiting: pool db is full (needs 1, 0 of 1 free; held by run.a try 1)"; got != want {
		t.Errorf("b waits: %q, want %q", got, want)
	}

	// a finished: only c still holds _global.
	held := map[string][]Holder{GlobalPool: {{Entry: 3, Label: c.Label, Slots: 1}}}
	d = Admit(&Snapshot{Pools: ps, Holders: held, Entries: []Entry{b}}, t0.Add(time.Second))
	if !slices.Equal(d.Admitted, []int64{2}) || d.Waiting() != 0 {
		t.Fatalf("second pass admitted %v reasons %v, want [2] and none", d.Admitted, reasonTexts(d))
	}
}

// TestAdmitIsPure checks that Admit leaves its snapshot alone and does not depend on the
// order of entries or holders in it.
func TestAdmitIsPure(t *testing.T) {
	t.Parallel()
	build := func() *Snapshot {
		return &Snapshot{
			Pools: poolMap(strict("db", 2), named("wh", 3), Implicit(GlobalPool, 4)),
			Holders: map[string][]Holder{
				"db": {hold(902, "z", 1), hold(900, "x", 1)},
				"wh": {hold(901, "y", 2)},
			},
			Entries: []Entry{
				entry(1, "a", ns("db:1", "_global:1")),
				entry(2, "b", ns("wh:1", "_global:1"), dueAgo(time.Hour)),
				entry(3, "c", ns("wh:2", "db:1", "_global:1"), prio(3)),
				entry(4, "d", ns("wh:1", "_global:1"), blocked(BlockPaused)),
				entry(5, "e", ns("db:1", "_global:1"), deadline(t0.Add(-time.Second))),
				entry(6, "f", ns("wh:1", "_global:1"), force()),
			},
		}
	}
	want := Admit(build(), t0)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		s := build()
		rng.Shuffle(len(s.Entries), func(i, j int) { s.Entries[i], s.Entries[j] = s.Entries[j], s.Entries[i] })
		before := build()
		before.Entries = slices.Clone(s.Entries)
		got := Admit(s, t0)
		if !sameDecision(got, want) || !reflect.DeepEqual(reasonMap(got), reasonMap(want)) {
			t.Fatalf("decision depends on entry order:\n got %+v\nwant %+v", got, want)
		}
		if !reflect.DeepEqual(s, before) {
			t.Fatalf("Admit changed its snapshot")
		}
	}
}

// TestAdmitRejected lists the entries a caller must reject, with the reason it needs for its
// message: unknown pools and needs above capacity, but not blocked or not_mine entries, whose
// block or own daemon comes first.
func TestAdmitRejected(t *testing.T) {
	t.Parallel()
	s := &Snapshot{
		Pools: poolMap(named("db", 1)),
		Entries: []Entry{
			entry(4, "d", ns("db:2")),
			entry(1, "a", ns("db:1", "nope:1")),
			entry(2, "b", ns("nope:1"), blocked(BlockPaused)),
			entry(3, "c", ns("db:3"), blocked(BlockNotMine)),
			entry(5, "e", ns("nope:1"), deadline(t0.Add(-time.Second))),
			entry(6, "f", ns("db:1")),
		},
	}
	d := Admit(s, t0)
	want := []Rejection{
		{Entry: 1, Reason: Reason{Kind: vocab.ReasonUnknownPool, Pool: "nope", Need: 1}},
		{Entry: 4, Reason: Reason{Kind: vocab.ReasonOverCapacity, Pool: "db", Need: 2, Capacity: 1}},
	}
	if !reflect.DeepEqual(d.Rejected, want) {
		t.Fatalf("rejected %+v, want %+v", d.Rejected, want)
	}
	for _, r := range d.Rejected {
		if got, _ := d.Reason(r.Entry); !reflect.DeepEqual(got, r.Reason) {
			t.Errorf("entry %d: Reason %+v, Rejected says %+v", r.Entry, got, r.Reason)
		}
	}
	if _, ok := d.Reason(6); ok {
		t.Errorf("admitted entry 6 has a reason")
	}
	if _, ok := d.Reason(99); ok {
		t.Errorf("unknown entry 99 has a reason")
	}
}

func TestAdmitEmpty(t *testing.T) {
	t.Parallel()
	d := Admit(&Snapshot{}, t0)
	if len(d.Admitted)+len(d.Expired)+d.Waiting()+len(d.NotMine)+len(d.Rejected) != 0 {
		t.Fatalf("empty snapshot decided %+v", d)
	}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	es := []Entry{
		entry(7, "rest-low", nil, prio(1)),
		entry(6, "rest-late", nil, prio(5)),
		entry(5, "rest-early", nil, prio(5), dueAgo(time.Hour)),
		entry(4, "kept", nil, keeps("db:1")),
		entry(3, "force-b", nil, force(), prio(-5)),
		entry(2, "force-a", nil, force(), keeps("db:1")),
		entry(8, "rest-tie", nil, prio(5)),
	}
	slices.SortFunc(es, func(a, b Entry) int { return Compare(&a, &b) })
	var got []int64
	for _, e := range es {
		got = append(got, e.ID)
	}
	if want := []int64{2, 3, 4, 5, 6, 8, 7}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

func TestSortWalkKeys(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 13, 100, 5000} {
		for _, shape := range []string{"random", "sorted", "reversed", "few ranks", "fallback"} {
			keys := make([]walkKey, n)
			for i := range keys {
				keys[i] = walkKey{rank: rng.Uint64N(1 << 62), sec: rng.Int64(), nsec: rng.Int32N(1e9), id: rng.Int64N(1000), idx: int32(i)}
				if shape == "few ranks" {
					keys[i].rank, keys[i].sec, keys[i].nsec = rng.Uint64N(3), rng.Int64N(4), rng.Int32N(2)
				}
			}
			want := slices.Clone(keys)
			slices.SortFunc(want, compareWalkKeys)
			switch shape {
			case "sorted":
				keys = slices.Clone(want)
			case "reversed":
				keys = slices.Clone(want)
				slices.Reverse(keys)
			}
			if shape == "fallback" {
				quickSortKeys(keys, 1)
			} else {
				sortWalkKeys(keys)
			}
			if !slices.Equal(keys, want) {
				t.Fatalf("n=%d %s: not sorted", n, shape)
			}
		}
	}
}
