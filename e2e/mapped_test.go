package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// shardsDAG: extract writes 40 items over 4 shards; load maps over them, each instance needing
// one slot of its shard's pool (capacity 1 each), at most 4 at once in the run — so its queue
// window is 16 and most instances wait in its line before they are queued; other tasks need
// only the default pool and run beside them; report waits for every instance.
func shardsDAG(sleep string) string {
	return `
dag_id: shards
max_active_tasks: 32
tasks:
  - id: extract
    bash: |
      items=""
      for i in $(seq 0 39); do items="$items{\"file\": \"f$i.csv\", \"shard\": \"s$((i % 4))\"},"; done
      echo "{\"items\": [${items%,}]}" > "$POOLFLOW_OUTPUT"
  - id: load
    depends_on: [extract]
    expand: "${{ tasks.extract.output.items }}"
    max_active_tis_per_dagrun: 4
    command: ["sh", "-c", 'sleep ` + sleep + `; echo "{\"file\": \"$1\"}" > "$POOLFLOW_OUTPUT"', "load", "${{ item.file }}"]
    pool_requirements: {"db_${{ item.shard }}": 1}
  - id: report
    depends_on: [load]
    command: ["echo", "${{ len(tasks.load.outputs) }} files loaded"]
` + otherTasks()
}

func otherTasks() string {
	var b strings.Builder
	for i := 0; i < 6; i++ {
		fmt.Fprintf(&b, "  - {id: other%d, depends_on: [extract], bash: 'sleep 0.3'}\n", i)
	}
	return b.String()
}

const shardPools = "max_running: 16\npools:\n  db_s0: 1\n  db_s1: 1\n  db_s2: 1\n  db_s3: 1\n"

// TestMappedShards: 40 mapped instances over 4 shards of capacity 1 never hold more than one
// slot of a shard at an instant (interval recording), and the tasks that need none of the
// shards are admitted around them (§14).
func TestMappedShards(t *testing.T) {
	t.Parallel()
	p := newProject(t, shardPools, map[string]string{"shards.yaml": shardsDAG("0.05")})
	out := p.run(t, "dags", "test", "shards", "-o", "json")
	var rep struct {
		State string `json:"state"`
		Tasks []struct {
			TaskID       string         `json:"task_id"`
			State        string         `json:"state"`
			Start        string         `json:"start_date"`
			End          string         `json:"end_date"`
			Requirements map[string]int `json:"requirements"`
			MapIndex     *int           `json:"map_index"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("dags test -o json: %v\n%s", err, out)
	}
	if rep.State != "success" {
		t.Fatalf("run %s: %s", rep.State, out)
	}
	var loads, others []hold
	for _, task := range rep.Tasks {
		start, err1 := time.Parse(time.RFC3339Nano, task.Start)
		end, err2 := time.Parse(time.RFC3339Nano, task.End)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: dates %q %q", task.TaskID, task.Start, task.End)
		}
		h := hold{name: task.TaskID, start: start, end: end, needs: task.Requirements}
		switch {
		case task.MapIndex != nil:
			if want := fmt.Sprintf("db_s%d", *task.MapIndex%4); task.Requirements[want] != 1 || task.State != "success" {
				t.Errorf("%s: %s, requirements %v, want %s", task.TaskID, task.State, task.Requirements, want)
			}
			loads = append(loads, h)
		case strings.HasPrefix(task.TaskID, "other"):
			others = append(others, h)
		}
	}
	if len(loads) != 40 {
		t.Fatalf("%d mapped instances, want 40", len(loads))
	}
	peak := checkCapacity(t, loads, map[string]int{"db_s0": 1, "db_s1": 1, "db_s2": 1, "db_s3": 1})
	for shard, n := range peak {
		if n != 1 {
			t.Errorf("shard %s: peak %d holders", shard, n)
		}
	}
	if n := maxConcurrent(loads); n < 2 {
		t.Errorf("at most %d instances ran at once: the shards did not run side by side", n)
	}
	// The other tasks ran while instances were running: admitted around them.
	first, last := loads[0].start, loads[0].end
	for _, h := range loads {
		first, last = minTime(first, h.start), maxTime(last, h.end)
	}
	for _, o := range others {
		if o.start.After(last) || o.end.Before(first) {
			t.Errorf("%s ran %v–%v, outside the mapping's %v–%v", o.name, o.start, o.end, first, last)
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// TestMappedCrashAndClear: a daemon killed with -9 in the middle of the mapping comes back and
// every instance ends with one successful attempt; a clear of load[7] then runs that instance
// again, and only it (§14).
func TestMappedCrashAndClear(t *testing.T) {
	t.Parallel()
	p := newProject(t, shardPools, map[string]string{"shards.yaml": shardsDAG("0.3")})
	first := p.serve(t, "--daemon-id", "mapper")
	p.run(t, "dags", "trigger", "shards", "--run-id", "r1")
	st := p.open(t)
	instances := func() map[string]store.TaskInstance {
		run, err := st.GetRun(context.Background(), "shards", "r1")
		if err != nil {
			return nil
		}
		tis, err := st.ListTaskInstances(context.Background(), run.PK)
		if err != nil {
			return nil
		}
		out := map[string]store.TaskInstance{}
		for _, ti := range tis {
			if _, _, ok := dag.SplitMapID(ti.TaskID); ok {
				out[ti.TaskID] = ti
			}
		}
		return out
	}
	until(t, 60*time.Second, "some instances to succeed and others to run", func() bool {
		done, running := 0, 0
		for _, ti := range instances() {
			switch ti.State {
			case vocab.TaskSuccess:
				done++
			case vocab.TaskRunning:
				running++
			}
		}
		return done >= 4 && running >= 2
	}, first.logs)
	first.kill()

	second := p.serve(t, "--daemon-id", "mapper")
	defer second.stop(30 * time.Second)
	if state := runEnded(t, 90*time.Second, "shards", "r1", second.logs); state != "success" {
		t.Fatalf("run %s", state)
	}
	run, err := st.GetRun(context.Background(), "shards", "r1")
	if err != nil {
		t.Fatal(err)
	}
	insts := instances()
	if len(insts) != 40 {
		t.Fatalf("%d instances", len(insts))
	}
	for i := 0; i < 40; i++ {
		id := dag.MapID("load", i)
		as, err := st.ListAttempts(context.Background(), run.PK, id)
		if err != nil || len(as) != 1 || as[0].State != vocab.TaskSuccess || insts[id].Output != fmt.Sprintf(`{"file":"f%d.csv"}`, i) {
			t.Errorf("%s: attempts %+v (%v), output %q", id, as, err, insts[id].Output)
		}
	}
	claims, err := st.ListClaims(context.Background())
	if err != nil || len(claims) != 0 {
		t.Fatalf("claims after the run: %v %v", claims, err)
	}

	// A clear of one instance runs it, and nothing else, again.
	if out := p.run(t, "tasks", "clear", "shards", "r1", "load[7]"); !strings.Contains(out, "load[7]") {
		t.Fatalf("tasks clear: %s", out)
	}
	until(t, 60*time.Second, "load[7] to run again", func() bool {
		as, err := st.ListAttempts(context.Background(), run.PK, "load[7]")
		return err == nil && len(as) == 2 && as[1].State == vocab.TaskSuccess
	}, second.logs)
	until(t, 30*time.Second, "the run to end again", func() bool {
		r, err := st.GetRun(context.Background(), "shards", "r1")
		return err == nil && r.State == vocab.RunSuccess
	}, second.logs)
	for i := 0; i < 40; i++ {
		id := dag.MapID("load", i)
		if as, _ := st.ListAttempts(context.Background(), run.PK, id); (i == 7) != (len(as) == 2) {
			t.Errorf("%s: %d attempts", id, len(as))
		}
	}
	for _, id := range []string{"extract", "report", "other0"} {
		if as, _ := st.ListAttempts(context.Background(), run.PK, id); len(as) != 1 {
			t.Errorf("%s ran %d times", id, len(as))
		}
	}
}
