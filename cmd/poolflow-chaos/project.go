package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/poolflow/poolflow/vocab"
)

// poolDef is one stored pool of the workload and the capacities a resize may give it.
type poolDef struct {
	name     string
	slots    int
	ordering vocab.Ordering
	sizes    []int
}

// taskDef is one task: what it needs, how long it sleeps, and whether its sleeping child leaves
// the task's process group with setsid (a grandchild a group kill does not reach).
type taskDef struct {
	id       string
	needs    map[string]int
	secs     float64
	mode     string // "group" or "setsid"
	deps     []string
	priority int // priority_weight; 0 = poolflow's default
}

// dagDef is one DAG file of the workload.
type dagDef struct {
	id            string
	schedule      string // "" = manual only
	catchup       bool
	everyNode     bool // fires on every daemon, each fire bound to it (max_active_runs per daemon)
	maxActiveRuns int  // 0 = poolflow's default
	job           bool
	tasks         []taskDef
}

// The pools overlap on purpose: b is needed by most tasks, a and d are strict (a head that
// does not fit blocks the pool), b, c and e are backfill. e is held by the long task only, so
// that a dead daemon's orphan outlives its claim's lease in a pool someone waits for.
var poolDefs = []poolDef{
	{"a", 1, vocab.Strict, []int{1, 2}},
	{"b", 2, vocab.Backfill, []int{1, 2, 3}},
	{"c", 1, vocab.Backfill, []int{1, 2}},
	{"d", 3, vocab.Strict, []int{2, 3, 4}},
	{"e", 1, vocab.Backfill, []int{1, 2}},
}

func req(kv ...any) map[string]int {
	m := map[string]int{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(int)
	}
	return m
}

// workload is the DAG set. mix is manual (HTTP, CLI, dags test); tick and catch are scheduled,
// leader-owned work with max_active_runs 1 (catch with catch-up); node is an every_node job,
// each daemon's fires bound to it and one at a time per daemon, in c, which others use too;
// solo is a job a forced shrink of d makes invalid; slow holds e longer than a lease (left out
// when longTask is 0).
func workload(longTask time.Duration) []dagDef {
	dags := []dagDef{
		{id: "mix", tasks: []taskDef{
			{id: "ab", needs: req("a", 1, "b", 1), secs: 0.6, mode: "group"},
			{id: "bb", needs: req("b", 2), secs: 0.4, mode: "group"},
			{id: "bc", needs: req("b", 1, "c", 1), secs: 0.5, mode: "setsid"},
			{id: "cd", needs: req("c", 1, "d", 2), secs: 0.3, mode: "group", deps: []string{"ab"}},
			{id: "dd", needs: req("d", 1), secs: 0.5, mode: "setsid", deps: []string{"bb", "bc"}},
		}},
		{id: "tick", schedule: "@every 7s", maxActiveRuns: 1, tasks: []taskDef{
			{id: "tab", needs: req("a", 1, "b", 1), secs: 0.5, mode: "group"},
			{id: "tc", needs: req("c", 1), secs: 0.4, mode: "setsid", deps: []string{"tab"}},
		}},
		{id: "catch", schedule: "@every 11s", catchup: true, maxActiveRuns: 1, tasks: []taskDef{
			{id: "tbd", needs: req("b", 1, "d", 1), secs: 1.0, mode: "group"},
			{id: "td", needs: req("d", 2), secs: 1.0, mode: "setsid", deps: []string{"tbd"}},
		}},
		{id: "node", schedule: "@every 9s", everyNode: true, maxActiveRuns: 1, job: true, tasks: []taskDef{
			{id: "node", needs: req("c", 1), secs: 0.3, mode: "group"},
		}},
		{id: "solo", job: true, tasks: []taskDef{{id: "solo", needs: req("d", 3), secs: 0.5, mode: "group"}}},
	}
	if longTask > 0 {
		// Both tasks outlive a lease. rush goes first: when a daemon dies while its hold
		// runs, a live daemon's rush is walked ahead of the dead one's requeued hold.
		dags = append(dags, dagDef{id: "slow", tasks: []taskDef{
			{id: "rush", needs: req("e", 1), secs: longTask.Seconds(), mode: "group", priority: 5},
			{id: "hold", needs: req("e", 1), secs: longTask.Seconds(), mode: "setsid"},
		}})
	}
	return dags
}

// project is the chaos project on disk: poolflow.yaml, the DAGs folder, the state folder, the
// task script and the record file every task appends to.
type project struct {
	dir, config, dags, state, script, record, logs string
	start                                          time.Time
	defs                                           []dagDef
}

func newProject(dir string, start time.Time, longTask time.Duration, hookURL string) (*project, error) {
	p := &project{dir: dir, config: filepath.Join(dir, "poolflow.yaml"), dags: filepath.Join(dir, "dags"),
		state: filepath.Join(dir, "state"), script: filepath.Join(dir, "task.sh"), record: filepath.Join(dir, "record.tsv"),
		logs: filepath.Join(dir, "logs"), start: start, defs: workload(longTask)}
	for _, d := range []string{p.dags, p.state, p.logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	// The webhook of the harness's receiver (notifications.go); retries fast and many, so that
	// a receiver's hiccup or a killed sender leaves nothing failed for good.
	cfg := "max_running: 8\nnotifiers:\n  chaos: {type: webhook, url: " + hookURL + ", timeout: 5s}\n" +
		"notifications: {retry_delay: 1s, max_retry_delay: 5s, max_tries: 100}\n"
	if err := os.WriteFile(p.config, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.script, []byte(taskScript), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p.record, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	return p, f.Close()
}

// markQuiet makes long tasks started from now on short (see taskScript).
func (p *project) markQuiet() error {
	return os.WriteFile(filepath.Join(p.dir, "quiet"), nil, 0o644)
}

func (p *project) dagFile(id string) string { return filepath.Join(p.dags, id+".yaml") }

func (p *project) def(id string) *dagDef {
	for i := range p.defs {
		if p.defs[i].id == id {
			return &p.defs[i]
		}
	}
	return nil
}

// writeDAG writes a DAG file; with schedules false the schedule is left out, so that the quiet
// period creates no new runs while the old ones settle.
func (p *project) writeDAG(id string, schedules bool) error {
	d := p.def(id)
	tmp := p.dagFile(id) + ".tmp"
	if err := os.WriteFile(tmp, []byte(p.yaml(d, schedules)), 0o644); err != nil {
		return err
	}
	// A rename, so a daemon never reads half a file.
	return os.Rename(tmp, p.dagFile(id))
}

func (p *project) yaml(d *dagDef, schedules bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "dag_id: %s\n", d.id)
	if d.schedule != "" && schedules {
		fmt.Fprintf(&b, "schedule: %q\n", d.schedule)
		if d.catchup {
			fmt.Fprintf(&b, "catchup: true\nstart_date: %s\n", p.start.UTC().Format(time.RFC3339))
		}
		if d.everyNode {
			b.WriteString("every_node: true\n") // not without a schedule: it needs one
		}
	}
	if d.maxActiveRuns > 0 {
		fmt.Fprintf(&b, "max_active_runs: %d\n", d.maxActiveRuns)
	}
	// Handlers (§13): a run's end, and each task's retry (the tasks retry twice).
	b.WriteString("on_success: [chaos]\non_failure: [chaos]\n")
	task := func(indent string, t taskDef) {
		fmt.Fprintf(&b, "%scommand: [%q, %q, %q, %q, %q]\n", indent, p.script, p.record, needsArg(t.needs),
			fmt.Sprintf("%g", t.secs), t.mode)
		fmt.Fprintf(&b, "%spool_requirements: {%s}\n", indent, needsYAML(t.needs))
		fmt.Fprintf(&b, "%sretries: 2\n%sretry_delay: 1s\n%son_retry: [chaos]\n", indent, indent, indent)
		if t.priority > 0 {
			fmt.Fprintf(&b, "%spriority_weight: %d\n", indent, t.priority)
		}
		if len(t.deps) > 0 {
			fmt.Fprintf(&b, "%sdepends_on: [%s]\n", indent, strings.Join(t.deps, ", "))
		}
	}
	if d.job {
		task("", d.tasks[0])
		return b.String()
	}
	b.WriteString("tasks:\n")
	for _, t := range d.tasks {
		fmt.Fprintf(&b, "  - id: %s\n", t.id)
		task("    ", t)
	}
	return b.String()
}

func sortedPools(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// needsArg is the requirements as the task script receives and records them: a=1,b=1.
func needsArg(m map[string]int) string {
	var parts []string
	for _, k := range sortedPools(m) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, ",")
}

func needsYAML(m map[string]int) string {
	var parts []string
	for _, k := range sortedPools(m) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// taskScript is every task's command. The leader records its start (CLOCK_REALTIME from bash's
// EPOCHREALTIME, read without a fork), its pid, the attempt's POOLFLOW_ tags and the daemon
// running it; the sleeping
// child records itself (in setsid mode it leaves the task's process group, as a daemonizing
// tool would); the leader records its normal end. Each line is one write(2) on an O_APPEND
// file, so lines of concurrent tasks never interleave. The recorder takes a process's life from
// its pidfd, not from these lines: a task killed with SIGKILL writes no end line.
const taskScript = `#!/usr/bin/env bash
# poolflow chaos task: task.sh RECORD REQUIREMENTS SECONDS MODE
rec=$1 reqs=$2 secs=$3 mode=$4
# In the quiet period long tasks are short, so that the backlog the chaos built drains.
if [ -e "${rec%/*}/quiet" ] && [ "${secs%.*}" -gt 5 ]; then secs=0.2; fi
key="$POOLFLOW_DAG_ID	$POOLFLOW_RUN_ID	$POOLFLOW_TASK_ID	$POOLFLOW_TRY_NUMBER"
printf 'start\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n' "$EPOCHREALTIME" $$ $PPID "$key" "$reqs" "$mode" "$POOLFLOW_DAEMON_ID" >>"$rec"
echo "chaos task $key needs $reqs for ${secs}s ($mode)"
child='printf "child\t%s\t%d\t%d\t%s\n" "$EPOCHREALTIME" $$ $PPID "$0" >>"$1"; exec sleep "$2"'
if [ "$mode" = setsid ]; then
	setsid bash -c "$child" "$key" "$rec" "$secs" &
else
	bash -c "$child" "$key" "$rec" "$secs" &
fi
wait $!
status=$?
printf 'end\t%s\t%d\t%d\t%s\t%d\n' "$EPOCHREALTIME" $$ $PPID "$key" $status >>"$rec"
exit $status
`
