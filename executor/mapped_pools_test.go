package executor

import (
	"fmt"
	"testing"
)

// TestMappedLinePerPool: the instances of a mapped task that need a pool with room run although
// the instances before them in the line wait for a full pool (§14: each item's requirements are
// admitted like any entry, everything else around them). The list is sorted by shard, as a
// listing of files often is: shard 0's 40 instances come first, and the window (8) holds only
// shard 0's; the first pass must still start one instance of every shard.
func TestMappedLinePerPool(t *testing.T) {
	t.Parallel()
	b := setup(t, "max_running: 8\npools:\n  db_0: 1\n  db_1: 1\n  db_2: 1\n  db_3: 1\n", map[string]string{"shards.yaml": `dag_id: shards
tasks:
  - id: load
    expand: "${{ 0..159 }}"
    command: ["true"]
    pool_requirements: {"db_${{ int(item / 40) }}": 1}
`})
	h, _ := b.harness(t, func(c *Config) { c.MapWindow = 8 })
	trig, _ := h.Trigger(TriggerRequest{DAGID: "shards", RunID: "r"})
	starts := h.settle(t, trig)
	run := runOf(h, starts[0]).PK
	shards := map[string]bool{}
	for _, s := range starts {
		shards[fmt.Sprint(s.MapIndex/40)] = true
	}
	if len(shards) != 4 {
		t.Fatalf("the first pass started %v: want one instance of each of the 4 shards", startedIDs(starts))
	}
	// Then all run, each once, never two of a shard at once (its pool's one slot), four at a
	// time while every shard has instances left.
	ran := map[int]int{}
	for len(starts) > 0 {
		seen := map[int]bool{}
		for _, s := range starts {
			ran[s.MapIndex]++
			if seen[s.MapIndex/40] {
				t.Fatalf("two instances of shard %d started together: %v", s.MapIndex/40, startedIDs(starts))
			}
			seen[s.MapIndex/40] = true
		}
		starts = h.succeed(t, starts...)
	}
	for i := 0; i < 160; i++ {
		if ran[i] != 1 {
			t.Errorf("load[%d] ran %d times", i, ran[i])
		}
	}
	tis := b.tis(t, run)
	if tis["load"].State != "success" {
		t.Errorf("load ended %s", tis["load"].State)
	}
}
