package executor

import (
	"fmt"
	"testing"

	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/explain"
	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// TestMappedLineKeepsItsPlace: instances a mapped task's line queues late keep the place in the
// order its expansion had (§4.4): late, ready after load expanded, at the same priority and due
// time, runs after every instance of load, though load's window (2) queued most of them after
// late was queued. Each entry of the line has the queue ID reserved for it when load expanded.
func TestMappedLineKeepsItsPlace(t *testing.T) {
	t.Parallel()
	b := setup(t, "max_running: 1\npools:\n  default: -1\n", map[string]string{"line.yaml": `dag_id: line
tasks:
  - {id: a, weight_rule: absolute, command: ["true"]}
  - {id: load, depends_on: [a], expand: "${{ 0..5 }}", weight_rule: absolute, command: ["true"]}
  - {id: b, weight_rule: absolute, command: ["true"]}
  - {id: late, depends_on: [b], weight_rule: absolute, command: ["true"]}
`})
	h, _ := b.harness(t, func(c *Config) { c.MapWindow = 2 })
	trig, _ := h.Trigger(TriggerRequest{DAGID: "line", RunID: "r"})
	starts := h.settle(t, trig)
	var order []string
	var run int64
	for len(starts) > 0 {
		if len(starts) != 1 {
			t.Fatalf("started %v under max_running 1", startedIDs(starts))
		}
		order = append(order, starts[0].Task.ID)
		run = runOf(h, starts[0]).PK
		starts = h.succeed(t, starts...)
	}
	if fmt.Sprint(order) != "[a b load[0] load[1] load[2] load[3] load[4] load[5] late]" {
		t.Fatalf("ran %v: late must run after every instance of load", order)
	}
	entries, err := b.st.RunEntries(t.Context(), run)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int64{}
	for _, e := range entries {
		ids[e.TaskID] = e.ID
	}
	for i := 1; i < 6; i++ {
		if got, want := ids[fmt.Sprintf("load[%d]", i)], ids["load[0]"]+int64(i); got != want {
			t.Errorf("load[%d] has queue ID %d, want %d (reserved)", i, got, want)
		}
	}
	if ids["late"] <= ids["load[5]"] {
		t.Errorf("late has queue ID %d, before load[5]'s %d", ids["late"], ids["load[5]"])
	}
}

// TestMappedLineWaits: an instance in the line says why it waits, in the API's words and the
// CLI's (pools.WhyWaiting): for a place in its task's queue window, with how many are ahead of
// it; once queued, it waits on its entry like any task.
func TestMappedLineWaits(t *testing.T) {
	t.Parallel()
	b := setup(t, "max_running: 1\npools:\n  default: -1\n", map[string]string{"w.yaml": `dag_id: w
tasks:
  - {id: load, expand: "${{ 0..1999 }}", max_map_length: 2000, command: ["true"]}
`})
	h, _ := b.harness(t, func(c *Config) { c.MapWindow = 8 })
	trig, _ := h.Trigger(TriggerRequest{DAGID: "w", RunID: "r"})
	starts := h.settle(t, trig)
	run := runOf(h, starts[0])
	tis := b.tis(t, run.PK)
	if len(tis) != 2001 {
		t.Fatalf("%d task instances listed, want the mapped task and its 2,000", len(tis))
	}
	for id, want := range map[string]string{
		"load[1999]": "waiting: for a place in load's queue window (1,991 instances ahead in its line)",
		"load[8]":    "waiting: for a place in load's queue window (0 instances ahead in its line)",
	} {
		w, ok := whyWaiting(run.Run, tis[id])
		if !ok || w.Code != vocab.ReasonMapLine || w.Text != want {
			t.Errorf("%s: %v %q, want %q", id, ok, w.Text, want)
		}
	}
	if ti := tis["load[7]"]; ti.State != vocab.TaskScheduled || ti.ReasonCode != "" {
		t.Errorf("load[7], in the window: %+v", ti)
	}
	// Two end: two places free, and the line moves on by two.
	ends := []*attempt.Spec{starts[0]}
	starts = h.succeed(t, ends...)
	starts = h.succeed(t, starts...)
	tis = b.tis(t, run.PK)
	if ti := tis["load"]; ti.MapNext != 10 {
		t.Fatalf("the line stands at %d, want 10", ti.MapNext)
	}
	if w, _ := whyWaiting(run.Run, tis["load[1999]"]); w.Text != "waiting: for a place in load's queue window (1,989 instances ahead in its line)" {
		t.Errorf("load[1999] after two ended: %q", w.Text)
	}
}

// whyWaiting is why a task instance waits, as the API and the CLI say it.
func whyWaiting(run store.Run, ti store.TaskInstance) (pools.Wait, bool) {
	return pools.WhyWaiting(explain.TaskWait(run, ti, nil))
}
