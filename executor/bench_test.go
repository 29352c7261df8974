package executor

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkTestRun1000 runs one DAG run of 1,000 independent `true` tasks under max_running 8
// through the whole daemon (store with synchronous=FULL, real processes) and reports admitted
// entries per second: the SQLite-backed admission path end to end.
func BenchmarkTestRun1000(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("dag_id: bench\nmax_active_tasks: 100000\ntasks:\n")
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&sb, "  - {id: t%04d, command: [\"true\"]}\n", i)
	}
	for i := 0; i < b.N; i++ {
		bu := setup(b, "max_running: 8\npools:\n  default: -1\n", map[string]string{"bench.yaml": sb.String()})
		run := bu.testRun(b, "bench", nil)
		if run.State != "success" {
			b.Fatalf("run %s", run.State)
		}
	}
	b.ReportMetric(float64(1000*b.N)/b.Elapsed().Seconds(), "admissions/s")
}

// BenchmarkTestRunChain1000 runs a chain t0 → t1 → … → t999 of `true` tasks: one pass, one
// commit and one process per step, so it shows the loop's cost per step.
func BenchmarkTestRunChain1000(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("dag_id: bench\ntasks:\n  - {id: t0000, command: [\"true\"]}\n")
	for i := 1; i < 1000; i++ {
		fmt.Fprintf(&sb, "  - {id: t%04d, command: [\"true\"], depends_on: [t%04d]}\n", i, i-1)
	}
	for i := 0; i < b.N; i++ {
		bu := setup(b, "max_running: 8\npools:\n  default: -1\n", map[string]string{"bench.yaml": sb.String()})
		run := bu.testRun(b, "bench", nil)
		if run.State != "success" {
			b.Fatalf("run %s", run.State)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(1000*b.N), "µs/step")
}
