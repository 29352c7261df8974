package pools

import "testing"

func TestReasonString(t *testing.T) {
	t.Parallel()
	extract := Holder{Entry: 7, Label: "load.extract try 1", Slots: 1}
	tests := []struct {
		r    Reason
		want string
	}{
		{Reason{Kind: ReasonPoolFull, Pool: "db", Need: 1, Free: 0, Capacity: 1, Holders: []Holder{extract}},
			"waiting: pool db is full (needs 1, 0 of 1 free; held by load.extract try 1)"},
		{Reason{Kind: ReasonPoolFull, Pool: "db", Need: 3, Free: 2, Capacity: 4},
			"waiting: pool db is full (needs 3, 2 of 4 free)"},
		{Reason{Kind: ReasonPoolFull, Pool: "db", Need: 1, Capacity: 2, Holders: []Holder{{Entry: 9, Slots: 2}}},
			"waiting: pool db is full (needs 1, 0 of 2 free; held by entry 9 (2 slots))"},
		{Reason{Kind: ReasonBehind, Pool: "db", Need: 1, Behind: 3, BehindLabel: "load.x try 1"},
			"waiting: behind load.x try 1, the head of strict pool db"},
		{Reason{Kind: ReasonBehind, Pool: "db", Behind: 3},
			"waiting: behind entry 3, the head of strict pool db"},
		{Reason{Kind: ReasonStarvedHead, Pool: "warehouse", Behind: 4, BehindLabel: "load.y try 1"},
			"waiting: pool warehouse is kept for starved load.y try 1"},
		{Reason{Kind: ReasonGlobalLimit, Pool: GlobalPool, Need: 1, Used: 8, Capacity: 8},
			"waiting: max_running reached (8 of 8 running)"},
		{Reason{Kind: ReasonDAGLimit, Pool: "_dag/etl/r1"}, "waiting: max_active_tasks of this run reached"},
		{Reason{Kind: ReasonTaskLimit, Pool: "_task/etl/load"}, "waiting: task concurrency limit reached"},
		{Reason{Kind: ReasonPaused}, "waiting: DAG is paused"},
		{Reason{Kind: ReasonForbid}, "waiting: concurrency_policy forbid waits for the previous run"},
		{Reason{Kind: ReasonNodeAway}, "waiting: node unavailable"},
		{Reason{Kind: ReasonDraining, Pool: "P"}, "waiting: pool P is draining"},
		{Reason{Kind: ReasonUnknownPool, Pool: "P", Need: 1}, "waiting: pool P does not exist"},
		{Reason{Kind: ReasonOverCapacity, Pool: "P", Need: 5, Capacity: 4}, "waiting: needs 5 slots of pool P, capacity 4"},
		{Reason{Kind: ReasonBacklogFull, Pool: "P"}, "rejected: pool P backlog is full"},
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
		k                     ReasonKind
		limit, block, rejects bool
	}{
		{ReasonPoolFull, false, false, false},
		{ReasonGlobalLimit, true, false, false},
		{ReasonDAGLimit, true, false, false},
		{ReasonTaskLimit, true, false, false},
		{ReasonPaused, false, true, false},
		{ReasonForbid, false, true, false},
		{ReasonNodeAway, false, true, false},
		{ReasonUnknownPool, false, false, true},
		{ReasonOverCapacity, false, false, true},
		{ReasonBacklogFull, false, false, true},
	}
	for _, tt := range tests {
		if tt.k.IsLimit() != tt.limit || tt.k.IsBlock() != tt.block || tt.k.Rejects() != tt.rejects {
			t.Errorf("%s: limit %v block %v rejects %v", tt.k, tt.k.IsLimit(), tt.k.IsBlock(), tt.k.Rejects())
		}
	}
	for b, want := range map[Block]ReasonKind{NotBlocked: "", BlockNotMine: "", BlockPaused: ReasonPaused,
		BlockForbid: ReasonForbid, BlockNodeAway: ReasonNodeAway} {
		if got := b.Reason(); got != want {
			t.Errorf("Block(%q).Reason() = %q, want %q", b, got, want)
		}
	}
	for name, want := range map[string]ReasonKind{GlobalPool: ReasonGlobalLimit, "_dag/d/r": ReasonDAGLimit,
		"_task/d/t": ReasonTaskLimit, "_task/d/r/t": ReasonTaskLimit, "db": ReasonPoolFull} {
		if got := LimitKind(name); got != want {
			t.Errorf("LimitKind(%q) = %q, want %q", name, got, want)
		}
	}
}
