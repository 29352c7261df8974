package dag

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// sameDecode fails t unless data decodes the same in pieces of items tasks as whole: the
// same DAG, the same source map and the same errors. It reports whether the pieces were used.
func sameDecode(t *testing.T, name string, data []byte, items int) bool {
	t.Helper()
	whole, wholeErrs := decodeWith(name, data, noChunking)
	split, splitErrs := decodeWith(name, data, chunking{minBytes: 0, items: items})
	if got, want := errorLines(splitErrs), errorLines(wholeErrs); got != want {
		t.Fatalf("%s in pieces of %d: errors\n%s\nwhole:\n%s\nfile:\n%s", name, items, got, want, data)
	}
	if (whole == nil) != (split == nil) {
		t.Fatalf("%s in pieces of %d: DAG %v, whole %v", name, items, split != nil, whole != nil)
	}
	if whole == nil {
		return false
	}
	if !reflect.DeepEqual(whole.src.m, split.src.m) {
		t.Fatalf("%s in pieces of %d: source maps differ\nsplit %+v\nwhole %+v\nfile:\n%s", name, items, split.src.m, whole.src.m, data)
	}
	ws, ss := *whole, *split
	ws.src, ss.src = nil, nil
	if !reflect.DeepEqual(ws, ss) {
		t.Fatalf("%s in pieces of %d: DAGs differ\nsplit %+v\nwhole %+v\nfile:\n%s", name, items, ss, ws, data)
	}
	_, planned := planTasks(data)
	return planned
}

func TestChunkedDecodeMatchesWholeOnFixtures(t *testing.T) {
	t.Parallel()
	var files []string
	for _, pattern := range []string{"testdata/*/*.yaml", "testdata/*/*.yml", "../dags/*.yaml"} {
		m, _ := filepath.Glob(pattern)
		files = append(files, m...)
	}
	split := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, items := range []int{1, 2, 1000} {
			if sameDecode(t, file, data, items) && items == 1 {
				split++
			}
		}
	}
	if split < 5 {
		t.Errorf("only %d of %d fixtures were parsed in pieces", split, len(files))
	}
}

// TestChunkedDecodeMatchesWhole generates DAG files with what could make a piece mean
// something else than it does in the file: block scalars holding "- " lines, comments at the
// left margin, flow mappings over several lines, lists at their key's column, fields after
// the list, bad fields and syntax errors.
func TestChunkedDecodeMatchesWhole(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	split := 0
	for n := range 600 {
		data := randomDAGFile(rng)
		if sameDecode(t, fmt.Sprintf("gen%d.yaml", n), []byte(data), 1+rng.IntN(3)) {
			split++
		}
	}
	if split < 200 {
		t.Errorf("only %d of 600 generated files were parsed in pieces", split)
	}
}

func randomDAGFile(rng *rand.Rand) string {
	var b strings.Builder
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	header := func() {
		switch rng.IntN(6) {
		case 0:
			b.WriteString("description: a DAG\n")
		case 1:
			b.WriteString("default_args:\n  retries: 2\n  pool: " + pick("db", "api", "nowhere") + "\n")
		case 2:
			b.WriteString("tags: [a, b]\n")
		case 3:
			b.WriteString("# a comment\n")
		case 4:
			b.WriteString(pick("max_active_tasks: 3\n", "max_active_tasks: -1\n", "schedule: \"@daily\"\n", "unknown_top: 1\n"))
		}
	}
	if rng.IntN(2) == 0 {
		b.WriteString("dag_id: gen\n")
	}
	header()
	header()
	b.WriteString("tasks:" + pick("", " # the list") + "\n")
	ind := pick("", "  ", "    ")
	n := 1 + rng.IntN(6)
	for i := range n {
		id := fmt.Sprintf("t%d", i)
		if rng.IntN(20) == 0 {
			id = "t0" // a duplicate
		}
		dep := ""
		if i > 0 && rng.IntN(2) == 0 {
			dep = fmt.Sprintf("t%d", rng.IntN(i+1))
		}
		switch rng.IntN(7) {
		case 0:
			fmt.Fprintf(&b, "%s- {id: %s, bash: echo %d", ind, id, i)
			if dep != "" {
				fmt.Fprintf(&b, ",\n%s    depends_on: [%s]", ind, dep)
			}
			b.WriteString("}\n")
		case 1:
			fmt.Fprintf(&b, "%s- id: %s\n%s  bash: |\n%s    echo start\n%s    - not an item\n%s    echo end\n", ind, id, ind, ind, ind, ind)
		case 2:
			fmt.Fprintf(&b, "%s- id: %s\n%s  command: [\"true\", \"%d\"]\n", ind, id, ind, i)
			if dep != "" {
				fmt.Fprintf(&b, "%s  depends_on:\n%s  - %s\n", ind, ind, dep)
			}
		case 3:
			fmt.Fprintf(&b, "%s- id: %s\n%s  bash: \"echo\n%s    two lines\"\n%s  retries: %s\n", ind, id, ind, ind, ind, pick("1", "lots", "-1"))
		case 4:
			fmt.Fprintf(&b, "%s- id: %s\n# at the margin\n\n%s  bash: echo %d\n%s  pool_requirements: {db: %d}\n", ind, id, ind, i, ind, rng.IntN(3))
		case 5:
			fmt.Fprintf(&b, "%s- id: %s\n%s  bash: echo\n%s  %s\n", ind, id, ind, ind, pick("unknown_field: 1", "env: {A: b}", "retries: [1", "trigger_rule: nope", "sensor: {mode: poke}"))
		default:
			fmt.Fprintf(&b, "%s-   id: %s\n%s    bash: >\n%s      folded\n%s      text\n", ind, id, ind, ind, ind)
		}
	}
	if rng.IntN(3) == 0 {
		header()
	}
	if rng.IntN(30) == 0 {
		b.WriteString(pick("tasks: []\n", "&a x: 1\n", "---\ntasks: []\n", "  stray: 1\n"))
	}
	return b.String()
}

// A 10,000-task file is parsed in pieces by default and gives the DAG the whole parse does.
func TestLargeFileIsParsedInPieces(t *testing.T) {
	t.Parallel()
	for _, shape := range []string{"fanout", "chain"} {
		data := genFile(shape, 10_000)
		if len(data) < defaultChunking.minBytes {
			t.Fatalf("%s: the file is %d bytes, under the %d that are parsed in pieces", shape, len(data), defaultChunking.minBytes)
		}
		if _, ok := planTasks(data); !ok {
			t.Fatalf("%s: a plain 10,000-task file is not planned", shape)
		}
		sameDecode(t, shape+".yaml", data, defaultChunking.items)
	}
}

// FuzzChunkedDecode holds the pieces equal to the whole parse on arbitrary files.
func FuzzChunkedDecode(f *testing.F) {
	for _, pattern := range []string{"testdata/*/*.yaml", "../dags/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil {
				f.Add(data, uint8(1))
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		f.Add([]byte(randomDAGFile(rng)), uint8(2))
	}
	f.Fuzz(func(t *testing.T, data []byte, items uint8) {
		if len(data) > 64<<10 {
			return
		}
		sameDecode(t, "fuzz.yaml", data, 1+int(items%4))
	})
}
