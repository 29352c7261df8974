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
		// The harness (a temporary folder, the files written, a notice buffer) is not the run.
		b.StopTimer()
		bu := setup(b, "max_running: 8\npools:\n  default: -1\n", map[string]string{"bench.yaml": sb.String()})
		b.StartTimer()
		run := bu.testRun(b, "bench", nil)
		if run.State != "success" {
			b.Fatalf("run %s", run.State)
		}
	}
	b.ReportMetric(float64(1000*b.N)/b.Elapsed().Seconds(), "admissions/s")
}

// BenchmarkChain runs a chain of one-step `true` tasks (each depends on the previous) and
// reports the cost per step: one commit and one fork each, plus what the daemon adds (issue 11's
// budget is 0.5 ms beyond those).
func BenchmarkChain(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var sb strings.Builder
			sb.WriteString("dag_id: chain\ntasks:\n")
			for i := 0; i < n; i++ {
				dep := ""
				if i > 0 {
					dep = fmt.Sprintf(", depends_on: [t%05d]", i-1)
				}
				fmt.Fprintf(&sb, "  - {id: t%05d, command: [\"true\"]%s}\n", i, dep)
			}
			for i := 0; i < b.N; i++ {
				bu := setup(b, "pools:\n  default: -1\n", map[string]string{"chain.yaml": sb.String()})
				run := bu.testRun(b, "chain", nil)
				if run.State != "success" {
					b.Fatalf("run %s", run.State)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(n*b.N), "ms/step")
		})
	}
}
