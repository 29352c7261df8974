package executor

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/executor/decide"
	"github.com/poolflow/poolflow/executor/state"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// TestMappedPassCostsWhatChanged: a task mapped over 10,000 items expands in one pass that makes
// every instance but queues only a window of them (their rows in one statement); once it
// expanded, a pass that ends a few instances looks at the mapped task, the few it tops its
// window up with and its downstream, not at all 10,000: the mapped task sums its instances up
// from counts kept as their states change (state.Mapping).
func TestMappedPassCostsWhatChanged(t *testing.T) {
	t.Parallel()
	const n = 10_000
	b := setup(t, "max_running: 8\npools:\n  default: -1\n", map[string]string{"big.yaml": fmt.Sprintf(`dag_id: big
max_active_tasks: %d
tasks:
  - {id: load, expand: "${{ 0..%d }}", max_map_length: %d, command: ["true"]}
  - {id: after, depends_on: [load], command: ["true"]}
`, n, n-1, n)})
	h, _ := b.harness(t, nil)
	trig, _ := h.Trigger(TriggerRequest{DAGID: "big", RunID: "r"})
	plans, err := h.Settle(trig)
	if err != nil {
		t.Fatal(err)
	}
	var running []*attempt.Spec
	for i, p := range plans {
		running = append(running, p.Starts...)
		if p.Walked > decide.DefaultMapWindow+5 {
			t.Errorf("pass %d walked %d task instances, over the window of %d", i, p.Walked, decide.DefaultMapWindow)
		}
	}
	if len(plans) != 1 || len(running) != 8 {
		t.Fatalf("%d passes started %d attempts, want one pass and 8", len(plans), len(running))
	}
	run := runOf(h, running[0])
	m := run.Mapping("load")
	if m.Len() != n || m.Count(vocab.TaskScheduled) != decide.DefaultMapWindow-8 || m.InLine() != n-decide.DefaultMapWindow {
		t.Fatalf("after the expansion: %d instances, %d scheduled, %d in line", m.Len(), m.Count(vocab.TaskScheduled), m.InLine())
	}
	if tis := b.tis(t, run.PK); len(tis) != n+2 || tis["load[9999]"].ReasonCode != vocab.ReasonMapLine {
		t.Fatalf("%d task instances stored; load[9999]: %+v", len(tis), tis["load[9999]"])
	}
	for round := 0; round < 3; round++ {
		var ends []any
		for _, s := range running {
			ends = append(ends, h.End(s, true, ""))
		}
		p := h.mustPass(t, ends...)
		if len(p.Starts) != 8 {
			t.Fatalf("round %d: started %d, want 8", round, len(p.Starts))
		}
		// The mapped task, the 8 it queues in the places that freed, and its downstream: not
		// 10,000.
		if p.Walked > 20 {
			t.Fatalf("round %d: a pass ending 8 instances of %d walked %d task instances", round, n, p.Walked)
		}
		running = p.Starts
	}
	if m.Count(vocab.TaskSuccess) != 24 || m.Open() != n-24 {
		t.Fatalf("counts: %d succeeded, %d open", m.Count(vocab.TaskSuccess), m.Open())
	}
	if ti := run.TIs["load"]; ti.State != vocab.TaskRunning {
		t.Fatalf("load: %s", ti.State)
	}
}

// TestMappedLine: with a window of 4, a list of 10 queues 4 instances and the rest wait in the
// line, saying so; each pass that sees instances admitted or ended tops the window up, in map
// index order. Memory loaded again in the middle (as after a restart) goes on with the line
// where the store has it; every instance runs once, and the task sums up only once all ten
// ended.
func TestMappedLine(t *testing.T) {
	t.Parallel()
	b := setup(t, "max_running: 3\npools:\n  default: -1\n", map[string]string{"ten.yaml": `dag_id: ten
tasks:
  - {id: load, expand: "${{ 0..9 }}", command: ["true"]}
  - {id: after, depends_on: [load], command: ["true"]}
`})
	h, _ := b.harness(t, func(c *Config) { c.MapWindow = 4 })
	trig, _ := h.Trigger(TriggerRequest{DAGID: "ten", RunID: "r"})
	p := h.mustPass(t, trig)
	if got := startedIDs(p.Starts); fmt.Sprint(got) != "[load[0] load[1] load[2]]" || p.Wake {
		t.Fatalf("the first pass started %v (wake %v), want the first 3 and no pass at once", got, p.Wake)
	}
	run := runOf(h, p.Starts[0])
	tis := b.tis(t, run.PK)
	if m := run.Mapping("load"); m.Len() != 10 || m.Count(vocab.TaskScheduled) != 1 || m.InLine() != 6 ||
		len(tis) != 12 || tis["load"].MapNext != 4 {
		t.Fatalf("the first pass made %d instances, %d waiting, %d in line; %d rows, map_next %d", m.Len(),
			m.Count(vocab.TaskScheduled), m.InLine(), len(tis), tis["load"].MapNext)
	}
	if ti := tis["load[4]"]; ti.State != vocab.TaskNone || ti.ReasonCode != vocab.ReasonMapLine {
		t.Fatalf("load[4] in the line: %+v", ti)
	}
	ran := map[string]int{}
	starts := p.Starts
	h.State().Invalidate() // the next pass loads memory from the store: 3 running, 1 waiting, 6 in line
	for round := 0; len(starts) > 0; round++ {
		var ends []any
		for _, s := range starts {
			ran[s.Task.ID]++
			ends = append(ends, h.End(s, true, ""))
		}
		// The ended places and the admitted one free four: load[4] … load[7] are queued.
		starts = h.settle(t, ends...)
		if round == 0 {
			if got := startedIDs(starts); fmt.Sprint(got) != "[load[3] load[4] load[5]]" {
				t.Fatalf("after the first three ended: started %v", got)
			}
		}
		if round > 20 {
			t.Fatal("still running after 20 rounds")
		}
	}
	tis = b.tis(t, run.PK)
	for i := 0; i < 10; i++ {
		id := fmt.Sprintf("load[%d]", i)
		if ran[id] != 1 || tis[id].State != vocab.TaskSuccess {
			t.Errorf("%s ran %d times, %s", id, ran[id], tis[id].State)
		}
	}
	if len(tis) != 12 || tis["load"].State != vocab.TaskSuccess || tis["load"].Reason != "mapped over 10 items" ||
		ran["after"] != 1 || tis["after"].State != vocab.TaskSuccess {
		t.Errorf("%d task instances; load %s %q; after ran %d, %s", len(tis), tis["load"].State, tis["load"].Reason,
			ran["after"], tis["after"].State)
	}
}

// TestMappedOneFailed: a one_failed task downstream of a mapped task fires on the first
// instance that fails, while the others still run (§14: trigger rules count every instance, as
// Airflow's do); an all_done task waits for every one.
func TestMappedOneFailed(t *testing.T) {
	t.Parallel()
	b := setup(t, "pools:\n  default: -1\n", map[string]string{"of.yaml": `dag_id: of
tasks:
  - {id: load, expand: [a, b, c], command: ["true"]}
  - {id: alarm, depends_on: [load], trigger_rule: one_failed, command: ["true"]}
  - {id: done, depends_on: [load], trigger_rule: all_done, command: ["true"]}
`})
	h, _ := b.harness(t, nil)
	trig, _ := h.Trigger(TriggerRequest{DAGID: "of", RunID: "r"})
	p0 := h.mustPass(t, trig)
	if got := startedIDs(p0.Starts); fmt.Sprint(got) != "[load[0] load[1] load[2]]" {
		t.Fatalf("started %v", got)
	}
	p := h.mustPass(t, h.End(startOf(t, p0, "load[1]"), false, "boom"))
	if got := startedIDs(p.Starts); fmt.Sprint(got) != "[alarm]" {
		t.Fatalf("after load[1] failed the pass started %v, want [alarm]", got)
	}
	run := runOf(h, p.Starts[0])
	if st := run.TIs["done"].State; st != vocab.TaskNone {
		t.Fatalf("done is %s while two instances run", st)
	}
	p = h.mustPass(t, h.End(p.Starts[0], true, ""), h.End(startOf(t, p0, "load[0]"), true, ""), h.End(startOf(t, p0, "load[2]"), true, ""))
	if got := startedIDs(p.Starts); fmt.Sprint(got) != "[done]" {
		t.Fatalf("once every instance ended the pass started %v, want [done]", got)
	}
	if ti := run.TIs["load"]; ti.State != vocab.TaskFailed || ti.Reason != "1 of 3 mapped instances failed" {
		t.Fatalf("load: %s %q", ti.State, ti.Reason)
	}
}

// runOf is the run of an attempt in the harness's memory.
func runOf(h *Harness, s *attempt.Spec) *state.Run {
	for _, r := range h.State().Runs {
		if r.DAGID == s.DAGID && r.RunID == s.RunID {
			return r
		}
	}
	return nil
}

// startedIDs are the task instance ids of attempts: a mapped instance's "task[i]".
func startedIDs(specs []*attempt.Spec) []string {
	out := []string{}
	for _, s := range specs {
		out = append(out, s.Task.ID)
	}
	return out
}

// TestMappedShorterListAfterClear: cleared with its upstream, a mapped task whose list came back
// shorter leaves the extra instances out of the task (Airflow's "removed"): it sums up from the
// instances of the new list only, and the task after it runs, where a failed or skipped leftover
// used to fail the task or skip what follows it.
func TestMappedShorterListAfterClear(t *testing.T) {
	t.Parallel()
	b := setup(t, "pools:\n  default: -1\n", map[string]string{"short.yaml": `dag_id: short
tasks:
  - {id: list, command: ["true"]}
  - {id: load, depends_on: [list], expand: "${{ tasks.list.output.items }}", command: ["true"]}
  - {id: after, depends_on: [load], command: ["true"]}
`})
	h, _ := b.harness(t, nil)
	trig, _ := h.Trigger(TriggerRequest{DAGID: "short", RunID: "r"})
	p := h.mustPass(t, trig)
	listed := func(s *attempt.Spec, items string) *attempt.Ended {
		e := h.End(s, true, "")
		e.Output = `{"items": ` + items + `}`
		return e
	}
	p = h.mustPass(t, listed(startOf(t, p, "list"), "[1, 2, 3]"))
	run := runOf(h, p.Starts[0])
	p = h.mustPass(t, h.End(startOf(t, p, "load[0]"), true, ""), h.End(startOf(t, p, "load[1]"), true, ""),
		h.End(startOf(t, p, "load[2]"), false, "boom"))
	if st := run.TIs["load"].State; st != vocab.TaskFailed {
		t.Fatalf("load: %s, want failed", st)
	}
	body, _ := json.Marshal(store.ClearParams{TaskIDs: []string{"list"}, Downstream: true})
	cmd, reply := h.Command(store.Command{Kind: vocab.CommandClear, Run: run.PK, Who: "cli:test@host", Params: string(body)})
	var starts []*attempt.Spec
	starts = append(starts, h.settle(t, cmd)...)
	if err := <-reply; err != nil {
		t.Fatal(err)
	}
	run = h.State().Runs[run.PK]
	if run == nil {
		t.Fatal("the run is not open again")
	}
	starts = h.settle(t, listed(specOf(t, starts, "short", "list"), "[1, 2]"))
	if got := startedIDs(starts); fmt.Sprint(got) != "[load[0] load[1]]" {
		t.Fatalf("after the shorter list: started %v", got)
	}
	starts = h.succeed(t, starts...)
	if got := startedIDs(starts); fmt.Sprint(got) != "[after]" {
		t.Fatalf("after both instances: started %v, want [after]", got)
	}
	tis := b.tis(t, run.PK)
	if tis["load"].State != vocab.TaskSuccess || tis["load"].Reason != "mapped over 2 items" ||
		tis["load[2]"].State != vocab.TaskSkipped || !strings.Contains(tis["load[2]"].Reason, "removed") {
		t.Errorf("load %s %q; load[2] %s %q", tis["load"].State, tis["load"].Reason, tis["load[2]"].State, tis["load[2]"].Reason)
	}
}
