package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// workload is one line of the table: a DAG shape, its size, the store's synchronous mode.
type workload struct {
	name  string
	chain bool
	// mapped: one task mapped over tasks items (expand, §14) instead of tasks static tasks.
	mapped bool
	tasks  int
	sync   string // store.synchronous
}

func workloads(large bool) []workload {
	ws := []workload{
		{name: "fanout-1k", tasks: 1_000, sync: "full"},
		{name: "fanout-10k", tasks: 10_000, sync: "full"},
		{name: "mapped-1k", mapped: true, tasks: 1_000, sync: "full"},
		{name: "mapped-10k", mapped: true, tasks: 10_000, sync: "full"},
	}
	if large {
		ws = append(ws, workload{name: "fanout-100k", tasks: 100_000, sync: "full"})
	}
	return append(ws,
		workload{name: "chain-1k", chain: true, tasks: 1_000, sync: "full"},
		workload{name: "chain-10k", chain: true, tasks: 10_000, sync: "full"},
		workload{name: "chain-1k-normal", chain: true, tasks: 1_000, sync: "normal"},
		workload{name: "chain-10k-normal", chain: true, tasks: 10_000, sync: "normal"},
	)
}

func (w workload) label() string {
	shape := "fan-out"
	switch {
	case w.chain:
		shape = "chain"
	case w.mapped:
		shape = "mapped fan-out"
	}
	s := fmt.Sprintf("%s %s", shape, count(w.tasks))
	if w.sync != "full" {
		s += " (" + w.sync + ")"
	}
	return s
}

func count(n int) string {
	if n%1000 == 0 {
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// dagYAML is the workload's DAG: `true` tasks, independent or each depending on the previous,
// or one `true` task mapped over as many items.
func (w workload) dagYAML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dag_id: bench\nmax_active_tasks: %d\ntasks:\n", w.tasks)
	if w.mapped {
		fmt.Fprintf(&b, "  - {id: t, expand: \"${{ 0..%d }}\", max_map_length: %d, command: [\"true\"]}\n", w.tasks-1, w.tasks)
		return b.String()
	}
	for i := 0; i < w.tasks; i++ {
		if w.chain && i > 0 {
			fmt.Fprintf(&b, "  - {id: t%06d, command: [\"true\"], depends_on: [t%06d]}\n", i, i-1)
		} else {
			fmt.Fprintf(&b, "  - {id: t%06d, command: [\"true\"]}\n", i)
		}
	}
	return b.String()
}

// baseline is the shell doing the same work without a scheduler.
func (w workload) baseline(parallel int) *exec.Cmd {
	if w.chain {
		return exec.Command("bash", "-c", fmt.Sprintf("for ((i = 0; i < %d; i++)); do /bin/true; done", w.tasks))
	}
	return exec.Command("sh", "-c", fmt.Sprintf("seq %d | xargs -P %d -I{} true", w.tasks, parallel))
}

type bench struct {
	bin, dir         string
	parallel, rounds int
}

// measure writes the workload's project and runs poolflow and the baseline in turn, rounds
// times each, keeping the best wall time of each side.
func (b *bench) measure(w workload) (row, error) {
	proj := filepath.Join(b.dir, w.name)
	dags := filepath.Join(proj, "dags")
	if err := os.MkdirAll(dags, 0o755); err != nil {
		return row{}, err
	}
	if err := os.WriteFile(filepath.Join(dags, "bench.yaml"), []byte(w.dagYAML()), 0o644); err != nil {
		return row{}, err
	}
	cfg := filepath.Join(proj, "poolflow.yaml")
	body := fmt.Sprintf("max_running: %d\nstore: {synchronous: %s}\npools:\n  default: -1\n", b.parallel, w.sync)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		return row{}, err
	}
	r := row{w: w}
	for i := 0; i < b.rounds; i++ {
		state := filepath.Join(proj, fmt.Sprintf("state%d", i))
		pf := exec.Command(b.bin, "--config", cfg, "--dags", dags, "--state", state, "dags", "test", "bench", "-o", "json")
		var stderr strings.Builder
		pf.Stderr = &stderr
		res, err := timed(pf)
		if err != nil {
			return r, fmt.Errorf("poolflow dags test: %w\n%s", err, tail(stderr.String(), 20))
		}
		base, err := timed(w.baseline(b.parallel))
		if err != nil {
			return r, fmt.Errorf("baseline: %w", err)
		}
		if r.poolflow == 0 || res.wall < r.poolflow {
			r.poolflow = res.wall
		}
		if r.baseline == 0 || base.wall < r.baseline {
			r.baseline = base.wall
		}
		r.rss = max(r.rss, res.rss)
		fmt.Fprintf(os.Stderr, "%s round %d: poolflow %v (user %v, sys %v, %.0f MiB), baseline %v\n", w.name, i+1,
			res.wall.Round(time.Millisecond), res.user.Round(time.Millisecond), res.sys.Round(time.Millisecond),
			float64(res.rss)/1024, base.wall.Round(time.Millisecond))
		_ = os.RemoveAll(state)
	}
	return r, nil
}

func tail(s string, lines int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}
