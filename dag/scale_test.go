package dag

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// genFile writes a YAML DAG of n tasks: "fanout" is n independent tasks, "root" one root with
// n-1 children, "chain" t0 -> t1 -> ... -> t(n-1).
func genFile(shape string, n int) []byte {
	var b strings.Builder
	b.Grow(n * 48)
	b.WriteString("default_args:\n  retries: 1\ntasks:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - id: t%d\n    bash: \"true\"\n", i)
		switch {
		case i == 0:
		case shape == "chain":
			fmt.Fprintf(&b, "    depends_on: [t%d]\n", i-1)
		case shape == "root":
			b.WriteString("    depends_on: [t0]\n")
		}
	}
	return []byte(b.String())
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestParseTenThousandTasks loads the 10,000-task files of issue 11 (a chain was refused as
// "too large after alias expansion" with thousands of follow-on errors) and checks that the
// cost grows linearly: parsing ten times the tasks allocates about ten times as much, where a
// quadratic step would make it a hundred.
func TestParseTenThousandTasks(t *testing.T) {
	// Not parallel: it measures the allocations of the whole process.
	for _, shape := range []string{"fanout", "root", "chain"} {
		t.Run(shape, func(t *testing.T) {
			big, small := genFile(shape, 10_000), genFile(shape, 1_000)
			var d *DAG
			var errs []*ImportError
			bigCost := allocated(func() { d, errs = Parse(shape+".yaml", big, testOptions()) })
			if len(errs) > 0 {
				t.Fatalf("%d errors, first: %v", len(errs), errs[0])
			}
			if len(d.Tasks) != 10_000 || d.Tasks[9_999].Retries != 1 {
				t.Fatalf("%d tasks", len(d.Tasks))
			}
			order, weights := d.Order(), d.Weights()
			if len(order) != 10_000 || order[0] != "t0" || order[9_999] != "t9999" {
				t.Errorf("order has %d tasks, %s first, %s last", len(order), order[0], order[len(order)-1])
			}
			want := map[string]int{"fanout": 1, "root": 10_000, "chain": 10_000}[shape]
			if weights["t0"] != want {
				t.Errorf("weight of t0 = %d, want %d", weights["t0"], want)
			}
			smallCost := allocated(func() { Parse(shape+".yaml", small, testOptions()) })
			if ratio := float64(bigCost) / float64(smallCost); ratio > 15 {
				t.Errorf("10,000 tasks allocate %.0f× what 1,000 do (%d MB): not linear", ratio, bigCost>>20)
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	for _, shape := range []string{"fanout", "chain"} {
		for _, n := range []int{1_000, 10_000, 100_000} {
			data := genFile(shape, n)
			b.Run(fmt.Sprintf("%s/%d", shape, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, errs := Parse("bench.yaml", data, testOptions()); len(errs) > 0 {
						b.Fatal(errs[0])
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/task")
			})
		}
	}
}

// BenchmarkLoaderUnchanged is a reload of a folder whose 10,000-task file did not change.
func BenchmarkLoaderUnchanged(b *testing.B) {
	dir := b.TempDir()
	writeBenchFile(b, dir+"/chain.yaml", genFile("chain", 10_000))
	var l Loader
	l.LoadDir(dir, testOptions())
	b.ReportAllocs()
	for b.Loop() {
		if dags, errs := l.LoadDir(dir, testOptions()); len(dags) != 1 || len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// TestParseClosedChain is a 10,000-task chain whose first task depends on its last, written
// forwards and backwards: one cycle, reported at the dependency that closes it, found without
// a search per edge over all earlier tasks.
func TestParseClosedChain(t *testing.T) {
	t.Parallel()
	const n = 10_000
	for _, backwards := range []bool{false, true} {
		var b strings.Builder
		b.WriteString("tasks:\n")
		for k := range n {
			i := k
			if backwards {
				i = n - 1 - k
			}
			fmt.Fprintf(&b, "  - id: t%d\n    bash: \"true\"\n    depends_on: [t%d]\n", i, (i+n-1)%n)
		}
		_, errs := Parse("ring.yaml", []byte(b.String()), LoadOptions{})
		if len(errs) != 1 {
			t.Fatalf("backwards %v: %d errors:\n%s", backwards, len(errs), errorLines(errs[:min(len(errs), 3)]))
		}
		// Named from the task that comes first in the file.
		prefix, suffix := "cycle: t0 -> t1 -> t2 -> ", " -> t9999 -> t0"
		if backwards {
			prefix, suffix = "cycle: t9999 -> t0 -> t1 -> ", " -> t9998 -> t9999"
		}
		msg := errs[0].Msg
		if !strings.HasPrefix(msg, prefix) || !strings.HasSuffix(msg, suffix) {
			t.Errorf("backwards %v: %s: %.60s...%s", backwards, errs[0].TaskID, msg, msg[len(msg)-30:])
		}
	}
}
