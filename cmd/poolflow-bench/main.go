// Command poolflow-bench is the end-to-end benchmark `make bench` prints: one DAG of 1,000
// independent tasks each running `true` under max_running 8, run by `poolflow dags test` on a
// fresh SQLite store (synchronous=FULL), against the baseline `seq 1000 | xargs -P 8 -I{} true`,
// interleaved, best of 5 each. It prints both wall times, their ratio and the peak RSS.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	tasks := flag.Int("tasks", 1000, "tasks in the DAG")
	parallel := flag.Int("parallel", 8, "max_running and xargs -P")
	rounds := flag.Int("rounds", 5, "runs of each side; the best counts")
	flag.Parse()
	if err := run(*tasks, *parallel, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "poolflow-bench:", err)
		os.Exit(1)
	}
}

func run(tasks, parallel, rounds int) error {
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
	dagsDir := filepath.Join(dir, "dags")
	if err := os.MkdirAll(dagsDir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("dag_id: bench\nmax_active_tasks: 100000\ntasks:\n")
	for i := 0; i < tasks; i++ {
		fmt.Fprintf(&b, "  - {id: t%04d, command: [\"true\"]}\n", i)
	}
	if err := os.WriteFile(filepath.Join(dagsDir, "bench.yaml"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	cfg := filepath.Join(dir, "poolflow.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("max_running: %d\npools:\n  default: -1\n", parallel)), 0o644); err != nil {
		return err
	}
	var bestPF, bestX time.Duration
	var peakRSS int64
	for r := 0; r < rounds; r++ {
		state := filepath.Join(dir, fmt.Sprintf("state%d", r))
		pf := exec.Command(bin, "--config", cfg, "--dags", dagsDir, "--state", state, "dags", "test", "bench", "-o", "json")
		pf.Stdout = nil
		wall, rss, err := timed(pf)
		if err != nil {
			return fmt.Errorf("poolflow dags test: %w", err)
		}
		if bestPF == 0 || wall < bestPF {
			bestPF = wall
		}
		if rss > peakRSS {
			peakRSS = rss
		}
		xa := exec.Command("sh", "-c", fmt.Sprintf("seq %d | xargs -P %d -I{} true", tasks, parallel))
		xwall, _, err := timed(xa)
		if err != nil {
			return fmt.Errorf("xargs baseline: %w", err)
		}
		if bestX == 0 || xwall < bestX {
			bestX = xwall
		}
		fmt.Fprintf(os.Stderr, "round %d: poolflow %v, xargs %v\n", r+1, wall.Round(time.Millisecond), xwall.Round(time.Millisecond))
	}
	fmt.Printf("e2e: %d tasks of `true`, max_running %d, best of %d (synchronous=FULL)\n", tasks, parallel, rounds)
	fmt.Printf("  poolflow dags test: %v\n", bestPF.Round(time.Millisecond))
	fmt.Printf("  seq | xargs -P %d:   %v\n", parallel, bestX.Round(time.Millisecond))
	fmt.Printf("  ratio:              %.2fx\n", float64(bestPF)/float64(bestX))
	fmt.Printf("  peak RSS poolflow:  %.1f MiB\n", float64(peakRSS)/1024)
	return nil
}

// timed runs cmd and returns its wall time and peak RSS in KiB, and logs its CPU time
// (user+sys of it and its children) to stderr.
func timed(cmd *exec.Cmd) (time.Duration, int64, error) {
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	var rss int64
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss
		}
		fmt.Fprintf(os.Stderr, "  %s: wall %v, user %v, sys %v\n", filepath.Base(cmd.Path), wall.Round(time.Millisecond),
			cmd.ProcessState.UserTime().Round(time.Millisecond), cmd.ProcessState.SystemTime().Round(time.Millisecond))
	}
	return wall, rss, err
}
