package executor

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/vocab"
)

// mappedDAG: extract writes n items over 4 shards; load maps over them, each instance needing
// one slot of its shard's pool; report waits for every instance and reads their outputs.
func mappedDAG(n int) string {
	return fmt.Sprintf(`
tasks:
  - id: extract
    bash: |
      items=""
      for i in $(seq 0 %d); do items="$items{\"file\": \"f$i.csv\", \"shard\": $((i %% 4))},"; done
      echo "{\"items\": [${items%%,}]}" > "$POOLFLOW_OUTPUT"
  - id: load
    depends_on: [extract]
    expand: "${{ tasks.extract.output.items }}"
    command: ["sh", "-c", 'echo "{\"file\": \"$1\", \"index\": $POOLFLOW_MAP_INDEX}" > "$POOLFLOW_OUTPUT"', "load", "${{ item.file }}"]
    pool_requirements: {"db_${{ item.shard }}": 1}
  - id: report
    depends_on: [load]
    command: ["echo", "${{ len(tasks.load.outputs) }} loaded, last ${{ tasks.load.outputs[%d].file }}"]
  - id: literal
    expand: [a, b, c]
    command: ["echo", "${{ item }}-${{ map_index }}"]
  - id: empty
    expand: "${{ params.none }}"
    command: ["true"]
  - id: after_empty
    depends_on: [empty]
    trigger_rule: all_done
    command: ["true"]
params: {none: []}
`, n-1, n-1)
}

// TestMappedTask: one task instance per item, each queued with its own evaluated requirements
// and its item; downstream waits for every instance and reads their outputs; an empty list
// skips the task (§14).
func TestMappedTask(t *testing.T) {
	t.Parallel()
	b := setup(t, "pools:\n  db_0: 1\n  db_1: 1\n  db_2: 1\n  db_3: 1\n", map[string]string{"mapped.yaml": mappedDAG(12)})
	run := b.testRun(t, "mapped", nil)
	tis := b.tis(t, run.PK)
	if run.State != vocab.RunSuccess {
		t.Fatalf("run %s: %+v", run.State, tis)
	}
	for i := 0; i < 12; i++ {
		id := dag.MapID("load", i)
		ti := tis[id]
		if ti.State != vocab.TaskSuccess || ti.Output != fmt.Sprintf(`{"file":"f%d.csv","index":%d}`, i, i) {
			t.Errorf("%s: %s %q %q", id, ti.State, ti.Output, ti.Reason)
		}
		e, err := b.st.LatestEntry(context.Background(), run.PK, id)
		if err != nil || !hasPool(e.Needs, fmt.Sprintf("db_%d", i%4)) {
			t.Errorf("%s: requirements %+v %v", id, e.Needs, err)
		}
	}
	if _, ok := tis[dag.MapID("load", 12)]; ok {
		t.Error("a 13th instance")
	}
	if tis["load"].State != vocab.TaskSuccess || tis["load"].Reason != "mapped over 12 items" {
		t.Errorf("load: %s %q", tis["load"].State, tis["load"].Reason)
	}
	if log := readLog(t, b, "mapped", run.RunID, "report", 1); log != "12 loaded, last f11.csv\n" {
		t.Errorf("report: %q", log)
	}
	for i, item := range []string{"a", "b", "c"} {
		if log := readLog(t, b, "mapped", run.RunID, dag.MapID("literal", i), 1); log != fmt.Sprintf("%s-%d\n", item, i) {
			t.Errorf("literal[%d]: %q", i, log)
		}
	}
	if tis["empty"].State != vocab.TaskSkipped || !strings.Contains(tis["empty"].Reason, "empty") || tis["after_empty"].State != vocab.TaskSuccess {
		t.Errorf("empty: %+v; after it: %+v", tis["empty"], tis["after_empty"])
	}
}

// TestMappedFailures: a list over max_map_length fails the task naming the length; an item
// whose pool does not exist fails that instance only; a failed instance fails the task and its
// downstream waits for every other instance first.
func TestMappedFailures(t *testing.T) {
	t.Parallel()
	b := setup(t, "pools:\n  db_0: 1\n  db_1: 1\n", map[string]string{"mapfail.yaml": `
params: {shards: [0, 1, 9, 1]}
tasks:
  - id: toomany
    expand: "${{ params.shards }}"
    max_map_length: 3
    command: ["true"]
  - id: load
    expand: "${{ params.shards }}"
    command: ["true"]
    pool_requirements: {"db_${{ item }}": 1}
  - id: after
    depends_on: [load]
    trigger_rule: all_done
    command: ["true"]
  - id: notalist
    expand: "${{ params.shards[0] }}"
    command: ["true"]
`})
	run := b.testRun(t, "mapfail", nil)
	tis := b.tis(t, run.PK)
	want := map[string]struct {
		state  vocab.TaskState
		reason string
	}{
		"toomany":  {vocab.TaskFailed, "expand: 4 items, over max_map_length 3"},
		"load[0]":  {vocab.TaskSuccess, ""},
		"load[1]":  {vocab.TaskSuccess, ""},
		"load[2]":  {vocab.TaskFailed, `pool_requirements: pool "db_9" does not exist`},
		"load[3]":  {vocab.TaskSuccess, ""},
		"load":     {vocab.TaskFailed, "1 of 4 mapped instances failed"},
		"after":    {vocab.TaskSuccess, ""},
		"notalist": {vocab.TaskFailed, "expand needs a list"},
	}
	for id, w := range want {
		if ti := tis[id]; ti.State != w.state || !strings.Contains(ti.Reason, w.reason) {
			t.Errorf("%s: %s %q, want %s %q", id, ti.State, ti.Reason, w.state, w.reason)
		}
	}
}

// TestMappedGoTask: a Go-authored mapped task over an upstream Go task's output sees its item
// and index on its TaskContext.
func TestMappedGoTask(t *testing.T) {
	t.Parallel()
	d := dag.New("gomap")
	d.Go("list", func(_ context.Context, ti *dag.TaskContext) error {
		ti.Output = map[string]any{"shards": []string{"eu", "us"}}
		return nil
	})
	d.Go("each", func(_ context.Context, ti *dag.TaskContext) error {
		ti.Log("%s at %d", ti.Item, ti.MapIndex)
		ti.Output = map[string]any{"shard": ti.Item}
		return nil
	}, dag.After("list"), dag.ExpandOver("${{ tasks.list.output.shards }}"))
	b := setup(t, "", nil)
	run := b.testRun(t, "gomap", func(c *Config) { c.GoDAGs = []*dag.DAG{d} })
	tis := b.tis(t, run.PK)
	for i, shard := range []string{"eu", "us"} {
		id := dag.MapID("each", i)
		if tis[id].Output != `{"shard":"`+shard+`"}` {
			t.Errorf("%s: %+v", id, tis[id])
		}
		if log := readLog(t, b, "gomap", run.RunID, id, 1); log != fmt.Sprintf("%s at %d\n", shard, i) {
			t.Errorf("%s log %q", id, log)
		}
	}
}

// TestMappedRulesSeeItem: the pool rules see a mapped instance's item whatever its type (§14):
// a list of strings is assigned by `item == "eu"`, and each instance's entry holds its pool.
func TestMappedRulesSeeItem(t *testing.T) {
	t.Parallel()
	b := setup(t, `pools:
  eu: 1
  us: 1
rules:
  - {name: eu, priority: 2, when: 'item == "eu"', pool: eu}
  - {name: us, priority: 1, when: 'item in ["us"]', pool: us}
`, map[string]string{"regions.yaml": `dag_id: regions
tasks:
  - {id: load, expand: [eu, us], command: ["true"]}
`})
	run := b.testRun(t, "regions", nil)
	if run.State != vocab.RunSuccess {
		t.Fatalf("run %s", run.State)
	}
	for i, pool := range []string{"eu", "us"} {
		id := dag.MapID("load", i)
		e, err := b.st.LatestEntry(context.Background(), run.PK, id)
		if err != nil || !hasPool(e.Needs, pool) || e.Rule != pool {
			t.Errorf("%s: requirements %+v, rule %q, %v; want pool %s", id, e.Needs, e.Rule, err, pool)
		}
	}
}
