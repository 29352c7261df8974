package pools

import (
	"testing"

	"github.com/poolflow/poolflow/vocab"
)

func TestReasonString(t *testing.T) {
	t.Parallel()
	extract := Holder{Entry: 7, Label: "load.extract try 1", Slots: 1}
	tests := []struct {
		r    Reason
		want string
	}{
		{Reason{Kind: vocab.ReasonPoolFull, Pool: "db", Need: 1, Free: 0, Capacity: 1, Holders: []Holder{extract}},
			"waiting: pool db is full (needs 1, 0 of 1 free; held by load.extract try 1)"},
		{Reason{Kind: vocab.ReasonPoolFull, Pool: "db", Need: 3, Free: 2, Capacity: 4},
			"waiting: pool db is full (needs 3, 2 of 4 free)"},
		{Reason{Kind: vocab.ReasonPoolFull, Pool: "db", Need: 1, Capacity: 2, Holders: []Holder{{Entry: 9, Slots: 2}}},
			"waiting: pool db is full (needs 1, 0 of 2 free; held by entry 9 (2 slots))"},
		{Reason{Kind: vocab.ReasonBehind, Pool: "db", Need: 1, Behind: 3, BehindLabel: "load.x try 1"},
			"waiting: behind load.x try 1, the head of strict pool db"},
		{Reason{Kind: vocab.ReasonBehind, Pool: "db", Behind: 3},
			"waiting: behind entry 3, the head of strict pool db"},
		{Reason{Kind: vocab.ReasonStarvedHead, Pool: "warehouse", Behind: 4, BehindLabel: "load.y try 1"},
			"waiting: pool warehouse is kept for starved load.y try 1"},
		{Reason{Kind: vocab.ReasonGlobalLimit, Pool: GlobalPool, Need: 1, Used: 8, Capacity: 8},
			"waiting: max_running reached (8 of 8 running)"},
		{Reason{Kind: vocab.ReasonDAGLimit, Pool: "_dag/etl/r1"}, "waiting: max_active_tasks of this run reached"},
		{Reason{Kind: vocab.ReasonTaskLimit, Pool: "_task/etl/load"}, "waiting: task concurrency limit reached"},
		{Reason{Kind: vocab.ReasonPaused}, "waiting: DAG is paused"},
		{Reason{Kind: vocab.ReasonForbid}, "waiting: concurrency_policy forbid waits for the previous run"},
		{Reason{Kind: vocab.ReasonNodeAway}, "waiting: node unavailable"},
		{Reason{Kind: vocab.ReasonDraining, Pool: "P"}, "waiting: pool P is draining"},
		{Reason{Kind: vocab.ReasonUnknownPool, Pool: "P", Need: 1}, "waiting: pool P does not exist"},
		{Reason{Kind: vocab.ReasonOverCapacity, Pool: "P", Need: 5, Capacity: 4}, "waiting: needs 5 slots of pool P, capacity 4"},
		{Reason{Kind: vocab.ReasonBacklogFull, Pool: "P"}, "rejected: pool P backlog is full"},
		{Reason{Kind: "mystery"}, "waiting: mystery"},
	}
	for _, tt := range tests {
		t.Run(string(tt.r.Kind), func(t *testing.T) {
			t.Parallel()
			if got := tt.r.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if tt.r.Code() != string(tt.r.Kind) {
				t.Errorf("Code() = %q", tt.r.Code())
			}
		})
	}
}

func TestReasonKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		k                     vocab.ReasonCode
		limit, block, rejects bool
	}{
		{vocab.ReasonPoolFull, false, false, false},
		{vocab.ReasonGlobalLimit, true, false, false},
		{vocab.ReasonDAGLimit, true, false, false},
		{vocab.ReasonTaskLimit, true, false, false},
		{vocab.ReasonPaused, false, true, false},
		{vocab.ReasonForbid, false, true, false},
		{vocab.ReasonNodeAway, false, true, false},
		{vocab.ReasonUnknownPool, false, false, true},
		{vocab.ReasonOverCapacity, false, false, true},
		{vocab.ReasonBacklogFull, false, false, true},
	}
	for _, tt := range tests {
		if tt.k.IsLimit() != tt.limit || tt.k.IsBlock() != tt.block || tt.k.Rejects() != tt.rejects {
			t.Errorf("%s: limit %v block %v rejects %v", tt.k, tt.k.IsLimit(), tt.k.IsBlock(), tt.k.Rejects())
		}
	}
	for b, want := range map[Block]vocab.ReasonCode{NotBlocked: "", BlockNotMine: "", BlockPaused: vocab.ReasonPaused,
		BlockForbid: vocab.ReasonForbid, BlockNodeAway: vocab.ReasonNodeAway} {
		if got := b.Reason(); got != want {
			t.Errorf("Block(%q).Reason() = %q, want %q", b, got, want)
		}
	}
	for name, want := range map[string]vocab.ReasonCode{GlobalPool: vocab.ReasonGlobalLimit, "_dag/d/r": vocab.ReasonDAGLimit,
		"_task/d/t": vocab.ReasonTaskLimit, "_task/d/r/t": vocab.ReasonTaskLimit, "db": vocab.ReasonPoolFull} {
		if got := LimitKind(name); got != want {
			t.Errorf("LimitKind(%q) = %q, want %q", name, got, want)
		}
	}
}
