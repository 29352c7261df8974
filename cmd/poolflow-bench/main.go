// Command poolflow-bench is the end-to-end benchmark `make bench` prints as one table: DAGs of
// `true` tasks run by `poolflow dags test` on a fresh SQLite store, against a shell baseline
// doing the same work, interleaved in one run, best of a few rounds each:
//
//   - fan-out N: N independent tasks under max_running 8, against `seq N | xargs -P 8 -I{} true`;
//   - mapped fan-out N: one task mapped over N items (expand, §14), against the same; the table
//     says its ratio to the static fan-out of N, and the expansion benchmarks of package executor
//     time the pass that expands 1,000 and 10,000 items (`-only expand`);
//   - chain N: t1 → t2 → … → tN, against a bash loop running /bin/true N times; the chain runs
//     with store.synchronous full (the default: one fsync per step) and normal.
//
// It also measures the machine's floor per chain step — one fsync of a small write and one
// fork+exec+wait of /bin/true from Go — and prints each chain's overhead per step beyond them,
// the peak RSS of every poolflow run, a scheduled fan-out run by one and by three `poolflow
// serve` daemons on one store — SQLite, and PostgreSQL on a throw-away server when its binaries
// are installed (cluster.go), the memory per byte of YAML of `dags validate` and of a daemon
// loading four 5.4 MB DAG files (yaml_memory.go), the store's size after 100,000 runs were
// pruned to 10,000 against a store of 10,000 with the pass latency while pruning
// (retention.go), creating a 1,000-date backfill (backfill.go) — and the admission-pass benchmarks of package pools.
// -large adds the 100,000-task fan-out (`make bench-large`).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	large := flag.Bool("large", false, "also run the 100,000-task fan-out")
	rounds := flag.Int("rounds", 2, "runs of each side per workload; the best counts")
	parallel := flag.Int("parallel", 8, "max_running and xargs -P")
	only := flag.String("only", "", "comma-separated workload names to run (default: all), e.g. fanout-1k,chain-1k")
	admission := flag.Bool("admission", true, "run the admission-pass benchmarks of package pools")
	cluster := flag.Bool("cluster", true, "run the daemons-on-one-store table (SQLite, and PostgreSQL when its binaries are installed)")
	flag.Parse()
	if err := run(*large, *rounds, *parallel, *only, *admission, *cluster); err != nil {
		fmt.Fprintln(os.Stderr, "poolflow-bench:", err)
		os.Exit(1)
	}
}

func run(large bool, rounds, parallel int, only string, admission, cluster bool) error {
	dir, err := os.MkdirTemp("", "poolflow-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "poolflow")
	build := exec.Command("go", "build", "-o", bin, "./cmd/poolflow")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build: %w", err)
	}
	floor, err := measureFloor(dir)
	if err != nil {
		return err
	}
	b := &bench{bin: bin, dir: dir, parallel: parallel, rounds: rounds}
	var rows []row
	for _, w := range workloads(large) {
		if !selected(only, w.name) {
			continue
		}
		r, err := b.measure(w)
		if err != nil {
			return fmt.Errorf("%s: %w", w.name, err)
		}
		rows = append(rows, r)
	}
	printTable(os.Stdout, rows, floor, rounds, parallel)
	if selected(only, "expand") {
		if err := printExpand(os.Stdout); err != nil {
			return fmt.Errorf("expand: %w", err)
		}
	}
	if selected(only, "yaml-memory") {
		ms, err := b.measureYAMLMemory()
		if err != nil {
			return fmt.Errorf("yaml-memory: %w", err)
		}
		printYAMLMemory(os.Stdout, ms)
	}
	if selected(only, "retention") {
		f, err := b.measureRetention()
		if err != nil {
			return fmt.Errorf("retention: %w", err)
		}
		printRetention(os.Stdout, f)
	}
	if selected(only, "backfill") {
		f, err := b.measureBackfill()
		if err != nil {
			return fmt.Errorf("backfill: %w", err)
		}
		printBackfill(os.Stdout, f)
	}
	if cluster {
		if err := b.runCluster(os.Stdout, only); err != nil {
			return err
		}
	}
	if admission {
		return printAdmission(os.Stdout)
	}
	return nil
}

func selected(only, name string) bool {
	if only == "" {
		return true
	}
	for _, n := range strings.Split(only, ",") {
		if strings.TrimSpace(n) == name {
			return true
		}
	}
	return false
}

// row is one workload's best times.
type row struct {
	w        workload
	poolflow time.Duration
	baseline time.Duration
	rss      int64 // KiB, the largest of the rounds
}

func (r row) ratio() float64 { return float64(r.poolflow) / float64(r.baseline) }
