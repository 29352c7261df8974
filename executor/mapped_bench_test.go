package executor

import (
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fanOutDAG is n independent `true` tasks: n static tasks, or one task mapped over n items.
func fanOutDAG(n int, mapped bool) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "dag_id: bench\nmax_active_tasks: %d\ntasks:\n", n)
	if mapped {
		fmt.Fprintf(&sb, "  - {id: t, expand: \"${{ 0..%d }}\", max_map_length: %d, command: [\"true\"]}\n", n-1, n)
		return sb.String()
	}
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "  - {id: t%06d, command: [\"true\"]}\n", i)
	}
	return sb.String()
}

// BenchmarkFanOut runs a fan-out of n `true` tasks under max_running 8 through the whole daemon,
// as n static tasks and as one task mapped over n items (§14: a mapped fan-out should cost what
// the static one does), and reports the wall time per task.
func BenchmarkFanOut(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		for _, mapped := range []bool{false, true} {
			name := fmt.Sprintf("static/%d", n)
			if mapped {
				name = fmt.Sprintf("mapped/%d", n)
			}
			b.Run(name, func(b *testing.B) {
				body := fanOutDAG(n, mapped)
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					bu := setup(b, "max_running: 8\npools:\n  default: -1\n", map[string]string{"bench.yaml": body})
					bu.runFor = 10 * time.Minute
					b.StartTimer()
					if run := bu.testRun(b, "bench", nil); run.State != "success" {
						b.Fatalf("run %s", run.State)
					}
				}
				b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(n*b.N), "ms/task")
			})
		}
	}
}

// expandDAG: start, then load mapped over n items, each needing one slot of its shard's pool.
func expandDAG(n int) string {
	return fmt.Sprintf(`dag_id: expand
max_active_tasks: %d
tasks:
  - {id: start, command: ["true"]}
  - id: load
    depends_on: [start]
    expand: '${{ map(0..%d, ({"file": "f" + string(#) + ".csv", "shard": # %% 4})) }}'
    max_map_length: %d
    command: ["load", "${{ item.file }}"]
    pool_requirements: {"db_${{ item.shard }}": 1}
`, n, n-1, n)
}

// BenchmarkExpand times a task mapped over n items expanding (§14: 10,000 in under 100 ms): its
// list evaluated, n task instances made, the first window of them queued with their own
// evaluated requirements and the first admitted, written and committed — from the pass in which
// its upstream task ended until the loop settles. cpu-ms/expansion is the process's user+sys
// time over the same span (the wall time on a loaded machine says little).
func BenchmarkExpand(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var cpu time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				bu := setup(b, "max_running: 8\npools:\n  db_0: 2\n  db_1: 2\n  db_2: 2\n  db_3: 2\n",
					map[string]string{"expand.yaml": expandDAG(n)})
				// No log lines: go test prints them on stdout, amid the results poolflow-bench reads.
				h, _ := bu.harness(b, func(c *Config) { c.Logger = slog.New(slog.DiscardHandler) })
				trig, _ := h.Trigger(TriggerRequest{DAGID: "expand", RunID: "r"})
				start := startOf(b, h.mustPass(b, trig), "start")
				end := h.End(start, true, "")
				b.StartTimer()
				c0 := cpuTime()
				starts := h.settle(b, end)
				cpu += cpuTime() - c0
				b.StopTimer()
				if len(starts) != 8 {
					b.Fatalf("the expanding passes started %d instances, want 8", len(starts))
				}
				b.StartTimer()
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/expansion")
			b.ReportMetric(cpu.Seconds()*1e3/float64(b.N), "cpu-ms/expansion")
		})
	}
}

// cpuTime is the process's user+sys time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
