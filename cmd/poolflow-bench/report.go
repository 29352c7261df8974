package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

func printTable(out io.Writer, rows []row, fl floor, rounds, parallel int) {
	fmt.Fprintf(out, "poolflow dags test vs the shell, `true` tasks, max_running %d, best of %d, interleaved\n", parallel, rounds)
	fmt.Fprintf(out, "machine floor per chain step: fsync %v + fork %v = %v\n\n", us(fl.fsync), us(fl.fork),
		us(fl.fsync+fl.fork))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "work\tpoolflow\tbaseline\tratio\tper task\toverhead/step\tpeak RSS\t")
	for _, r := range rows {
		base := "xargs -P " + strconv.Itoa(parallel)
		overhead := "-"
		if r.w.chain {
			base = "bash loop"
			floor := fl.fsync + fl.fork
			if r.w.sync != "full" {
				floor = fl.fork // normal syncs at checkpoints only
			}
			overhead = us(r.poolflow/time.Duration(r.w.tasks) - floor)
		}
		fmt.Fprintf(tw, "%s\t%v\t%s %v\t%.2f×\t%v\t%s\t%.0f MiB\t\n", r.w.label(), r.poolflow.Round(time.Millisecond), base,
			r.baseline.Round(time.Millisecond), r.ratio(), us(r.poolflow/time.Duration(r.w.tasks)), overhead,
			float64(r.rss)/1024)
	}
	tw.Flush()
	for _, r := range rows {
		if !r.w.mapped {
			continue
		}
		for _, st := range rows {
			if !st.w.mapped && !st.w.chain && st.w.tasks == r.w.tasks {
				fmt.Fprintf(out, "mapped fan-out %s / static fan-out %s: %.2f× (target ≤ 1.2×)\n", count(r.w.tasks),
					count(st.w.tasks), float64(r.poolflow)/float64(st.poolflow))
			}
		}
	}
}

func us(d time.Duration) string {
	return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond))
}

// expandBench selects the expansion benchmarks of package executor (§14): the pass in which a
// task mapped over 1,000 and 10,000 items expands, written and committed.
const expandBench = `^BenchmarkExpand$`

// printExpand runs the expansion benchmarks and prints the time of the expanding pass.
func printExpand(out io.Writer) error {
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", expandBench, "-benchtime", "5x", "./executor/")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("expansion benchmarks: %w\n%s", err, buf.String())
	}
	fmt.Fprintln(out, "\nexpanding a mapped task (package executor): the pass that evaluates the list, makes the task")
	fmt.Fprintln(out, "instances, queues the first window of them, each with its own requirements, admits the first and")
	fmt.Fprintln(out, "commits (target at 10k: < 100 ms); cpu is the process's user+sys time over the same span")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "items	per expansion	cpu	")
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ns, _ := strconv.ParseFloat(m[2], 64)
		cpu := "-"
		if c := cpuMetric.FindStringSubmatch(m[3]); c != nil {
			cpu = c[1] + " ms"
		}
		fmt.Fprintf(tw, "%s\t%.1f ms\t%s\t\n", strings.TrimPrefix(m[1], "BenchmarkExpand/"), ns/1e6, cpu)
	}
	return tw.Flush()
}

// admissionBench selects the admission-pass benchmarks of package pools.
const admissionBench = `^Benchmark(Admit|AdmitFull|QueuePass)$`

// cpuMetric is BenchmarkExpand's CPU time metric in the rest of its line.
var cpuMetric = regexp.MustCompile(`([\d.]+) cpu-ms/expansion`)

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(.*)$`)

// printAdmission runs the pools benchmarks and prints their time per pass in milliseconds.
func printAdmission(out io.Writer) error {
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", admissionBench, "-benchmem", "./pools/")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pools benchmarks: %w\n%s", err, buf.String())
	}
	fmt.Fprintln(out, "\nadmission pass (package pools)")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "benchmark\tper pass\tallocations\t")
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ns, _ := strconv.ParseFloat(m[2], 64)
		fmt.Fprintf(tw, "%s\t%.3f ms\t%s\t\n", strings.TrimPrefix(m[1], "Benchmark"), ns/1e6, strings.TrimSpace(m[3]))
	}
	return tw.Flush()
}
