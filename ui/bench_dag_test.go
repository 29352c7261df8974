package ui

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/internal/bigdag"
)

// BenchmarkUIPages renders the pages of issue 21's table at 1,000, 10,000 and 100,000 runs in
// the store (POOLFLOW_UI_BENCH_RUNS picks others), reporting each request's time and the page's
// bytes raw and gzipped (raw-B/op, gz-B/op) and the process's CPU time (cpu-ms/op: on a busy
// machine the wall time follows the load, the CPU time does not): `go test -bench UIPages -cpuprofile` shows where a
// page's time goes. TestUIBench prints the same pages as the table of `make bench`.
func BenchmarkUIPages(b *testing.B) {
	sizes := []int{1000, 10000, 100000}
	if s := os.Getenv("POOLFLOW_UI_BENCH_RUNS"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		bd := setup(b, setupOpts{dags: []*dag.DAG{bigdag.Warehouse("warehouse_500", []string{"true"})}})
		fillLight(b, bd, n)
		for i := range gridRuns {
			bigRun(b, bd, "warehouse_500", fmt.Sprintf("w%02d", i))
		}
		quiet(b, bd)
		for _, p := range benchPages(n) {
			b.Run(fmt.Sprintf("%s/runs=%d", p.name, n), func(b *testing.B) {
				var body []byte
				cpu0 := cpuTime()
				for b.Loop() {
					rec := httptest.NewRecorder()
					bd.srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p.path, nil))
					if rec.Code != http.StatusOK {
						b.Fatalf("%s: %d", p.path, rec.Code)
					}
					body = rec.Body.Bytes()
				}
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
				b.ReportMetric(float64(len(body)), "raw-B/op")
				b.ReportMetric(float64(gzipLen(body)), "gz-B/op")
			})
		}
	}
}

// benchPage is one page of the UI's benchmark table.
type benchPage struct{ name, title, path string }

// benchPages are the pages measured with n runs of diamond and 25 of warehouse_500 in the store.
func benchPages(n int) []benchPage {
	last := fmt.Sprintf("bench_%06d", n-1)
	return []benchPage{
		{"dag_list", "DAG list", "/ui/"},
		{"dag_4_tasks", "DAG page (4 tasks)", "/ui/dags/diamond"},
		{"dag_500_grouped", "DAG page (500 tasks, grouped)", "/ui/dags/warehouse_500"},
		{"dag_500_ungrouped", "DAG page (500 tasks, ungrouped)", "/ui/dags/warehouse_500?groups=off"},
		{"runs_first", "runs list, first page", "/ui/runs"},
		{"runs_middle", "runs list, middle page", "/ui/runs?offset=" + strconv.Itoa(n/2/runsPage*runsPage)},
		{"runs_last", "runs list, last page", "/ui/runs?offset=" + strconv.Itoa((n-1)/runsPage*runsPage)},
		{"runs_of_dag", "runs of diamond, first page", "/ui/dags/diamond/runs"},
		{"runs_of_dag_failed", "runs of diamond, failed, last page", "/ui/dags/diamond/runs?state=failed&offset=" +
			strconv.Itoa((n/7)/runsPage*runsPage)},
		{"run", "run page", "/ui/dags/diamond/runs/" + last},
		{"run_500", "run page (500 tasks)", "/ui/dags/warehouse_500/runs/w00"},
		{"states_500", "graph states (500 tasks)", "/ui/dags/warehouse_500/runs/w00/states"},
	}
}

// gzipLen is the size of b gzipped at the server's level.
func gzipLen(b []byte) int {
	var c countWriter
	zw, _ := gzip.NewWriterLevel(&c, gzip.DefaultCompression)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return int(c)
}

type countWriter int

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)
