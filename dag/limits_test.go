package dag

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

func writeBenchFile(b *testing.B, path string, data []byte) {
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
}

// peakHeap runs f while sampling nothing: it reports the bytes allocated, which bound the
// heap f can have held.
func peakHeap(f func()) uint64 { return allocated(f) }

func bigParams(keys int) string {
	var b strings.Builder
	b.WriteString("params:\n")
	for i := range keys {
		fmt.Fprintf(&b, "  k%d: %d\n", i, i)
	}
	b.WriteString("tasks:\n  - id: a\n    bash: x\n")
	return b.String()
}

// laughs is the billion laughs: each anchor lists the previous one ten times.
func laughs(levels int) string {
	var b strings.Builder
	b.WriteString("x-l0: &l0 [lol]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "x-l%d: &l%d [", i, i)
		for k := range 10 {
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	fmt.Fprintf(&b, "params: {p: *l%d}\ntasks:\n  - id: a\n    bash: x\n", levels)
	return b.String()
}

// TestParseLimits feeds the inputs of issue 11 that took gigabytes (a self-referencing alias
// 1.7 GB, 30,000-deep nesting 3.4 GB, a 116k-key params map 49 s) and others of their kind:
// each is refused with its error, within a bound of allocation (the tokens of a file are
// built before its limits are known; everything after them is not).
func TestParseLimits(t *testing.T) {
	// Not parallel: it measures the allocations of the whole process.
	tests := []struct {
		name, src string
		want      string
		maxMB     uint64
	}{
		{"self alias", "x-a: &a\n  - *a\n  - *a\ntasks: *a\n",
			"f.yaml:2:5: dag f: alias *a is inside its own anchor", 1},
		{"self alias in mapping", "tasks:\n  - &t\n    id: a\n    bash: x\n    env: *t\n",
			"f.yaml:5:10: dag f: alias *t is inside its own anchor", 1},
		{"deep block", strings.Repeat("- ", 30_000) + "x\n",
			"f.yaml:1:1: dag f: nested too deeply: over 100 levels", 20},
		{"deep flow", "tasks: " + strings.Repeat("[", 30_000) + strings.Repeat("]", 30_000) + "\n",
			"f.yaml:1:1: dag f: nested too deeply: over 100 levels", 30},
		{"deep flow under the parser's own bound", "tasks: " + strings.Repeat("[", 5_000) + strings.Repeat("]", 5_000) + "\n",
			"f.yaml:1:107: dag f: nested too deeply: over 100 levels", 30},
		{"deep flow mapping", "params: " + strings.Repeat("{a: ", 30_000) + strings.Repeat("}", 30_000) + "\n",
			"f.yaml:1:1: dag f: nested too deeply: over 100 levels", 60},
		{"deep through aliases", "x-a: &a " + strings.Repeat("[", 60) + strings.Repeat("]", 60) + "\nx-b: &b " +
			strings.Repeat("[", 50) + "*a" + strings.Repeat("]", 50) + "\ntasks: [{id: a, bash: x, env: *b}]\n",
			"f.yaml:2:18: dag f: nested too deeply after alias expansion: over 100 levels", 2},
		{"billion laughs", laughs(9),
			"f.yaml:6:27: dag f: document too large after alias expansion (aliases add over 100000 nodes)", 2},
		{"params of 116k keys", bigParams(116_000),
			"f.yaml:5002:3: dag f: block mapping with over 5000 keys; write a large mapping in flow style {key: value, ...}", 150},
		{"many block mappings", manyMaps(),
			"f.yaml:20009:5: dag f: block mappings too large together (their key counts squared add up to over 50000000); write large mappings in flow style {key: value, ...}", 150},
		// Issue 25: a key of 7 MB, and params as one flow map of 350,000 keys (668 MiB to
		// validate before).
		{"7 MB key", strings.Repeat("k", 7<<20) + ": 1\ntasks: [{id: a, bash: x}]\n",
			"f.yaml:1:1: dag f: mapping key too long: 7340032 bytes, at most 1024", 60},
		{"7 MB explicit key", "? " + strings.Repeat("k", 7<<20) + "\n: 1\ntasks: [{id: a, bash: x}]\n",
			"f.yaml:1:3: dag f: mapping key too long: 7340032 bytes, at most 1024", 60},
		{"params of 350k keys in flow style", flowParams(350_000),
			"f.yaml:1:727790: dag f: mapping with over 50000 keys", 200},
		{"too many tokens", "params: {a: [" + strings.Repeat("1,", 1_600_000) + "1]}\n",
			"f.yaml: dag f: file too large: about 3200009 tokens, at most 1500000", 1},
		{"file too large", "# " + strings.Repeat("x", 9<<20) + "\n",
			"f.yaml: dag f: file too large: 9437187 bytes, at most 8388608", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(tt.src)
			var errs []*ImportError
			cost := peakHeap(func() { _, errs = Parse("f.yaml", data, LoadOptions{}) })
			if len(errs) != 1 || errs[0].Error() != tt.want {
				t.Fatalf("errors:\n%s\nwant:\n%s", errorLines(errs), tt.want)
			}
			t.Logf("%s: %.1f MB allocated", tt.name, float64(cost)/(1<<20))
			if cost > tt.maxMB<<20 {
				t.Errorf("allocated %d MB, want at most %d", cost>>20, tt.maxMB)
			}
		})
	}
}

// flowParams is a params map of keys keys in flow style.
func flowParams(keys int) string {
	var b strings.Builder
	b.WriteString("params: {")
	for i := range keys {
		fmt.Fprintf(&b, "k%d: %d, ", i, i)
	}
	b.WriteString("}\ntasks:\n  - id: a\n    bash: x\n")
	return b.String()
}

// manyMaps is eight block mappings of 2,500 keys: each fine alone, too costly together.
func manyMaps() string {
	var b strings.Builder
	b.WriteString("params:\n")
	for m := range 8 {
		fmt.Fprintf(&b, "  m%d:\n", m)
		for i := range 2_500 {
			fmt.Fprintf(&b, "    k%d: %d\n", i, i)
		}
	}
	b.WriteString("tasks:\n  - id: a\n    bash: x\n")
	return b.String()
}

// TestAliasesWithinLimits checks that only nodes made by aliases count: a large file that uses
// aliases a little loads.
func TestAliasesWithinLimits(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("x-env: &env {A: \"1\", B: \"2\"}\ntasks:\n")
	for i := range 20_000 {
		fmt.Fprintf(&b, "  - id: t%d\n    bash: \"true\"\n    env: *env\n", i)
	}
	d, errs := Parse("f.yaml", []byte(b.String()), LoadOptions{})
	if len(errs) > 0 {
		t.Fatalf("%d errors, first %v", len(errs), errs[0])
	}
	if len(d.Tasks) != 20_000 || d.Tasks[19_999].Env["B"] != "2" {
		t.Errorf("%d tasks, env %v", len(d.Tasks), d.Tasks[len(d.Tasks)-1].Env)
	}
}

// TestParseMemoryOfOrdinaryFile bounds the heap a parsed 10,000-task DAG keeps.
func TestParseMemoryOfOrdinaryFile(t *testing.T) {
	// Not parallel: it measures the allocations of the whole process.
	data := genFile("chain", 10_000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	d, errs := Parse("chain.yaml", data, LoadOptions{})
	runtime.GC()
	runtime.ReadMemStats(&after)
	if len(errs) > 0 {
		t.Fatal(errs[0])
	}
	// Other parallel tests allocate too; the bound is loose, the quadratic cost was 3.9 GB.
	if kept := int64(after.HeapAlloc) - int64(before.HeapAlloc); kept > 64<<20 {
		t.Errorf("a parsed 10,000-task DAG keeps %d MB", kept>>20)
	}
	runtime.KeepAlive(d)
}
