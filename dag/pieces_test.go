package dag

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// smallPieces cuts any file's task list, in pieces of two items.
var smallPieces = chunking{minBytes: 0, items: 2}

// samePieces decodes data whole and in pieces, without and with the source map, and reports
// any difference in the errors, the DAG or the map.
func samePieces(t *testing.T, data []byte) {
	t.Helper()
	for _, mapped := range []bool{false, true} {
		wd, werrs := decodeWith("f.yaml", data, mapped, noChunking)
		pd, perrs := decodeWith("f.yaml", data, mapped, smallPieces)
		if w, p := errorLines(werrs), errorLines(perrs); w != p {
			t.Fatalf("mapped %v: errors whole:\n%s\nin pieces:\n%s", mapped, w, p)
		}
		if (wd == nil) != (pd == nil) {
			t.Fatalf("mapped %v: DAG whole %v, in pieces %v", mapped, wd != nil, pd != nil)
		}
		if wd == nil {
			continue
		}
		if w, p := dagDump(wd), dagDump(pd); w != p {
			t.Fatalf("mapped %v: DAG whole:\n%s\nin pieces:\n%s", mapped, w, p)
		}
		if wm, pm := wd.src.get(), pd.src.get(); !reflect.DeepEqual(wm, pm) {
			t.Fatalf("mapped %v: source maps differ:\nwhole %+v\npieces %+v", mapped, wm, pm)
		}
		if w, p := errorLines(Validate(wd, testOptions())), errorLines(Validate(pd, testOptions())); w != p {
			t.Fatalf("mapped %v: validation whole:\n%s\nin pieces:\n%s", mapped, w, p)
		}
	}
}

// dagDump is the DAG's exported fields and its tasks', pointers followed, for comparing.
func dagDump(d *DAG) string {
	var b strings.Builder
	var dump func(v reflect.Value)
	dump = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if v.IsNil() {
				b.WriteString("nil")
				return
			}
			dump(v.Elem())
		case reflect.Struct:
			b.WriteString("{")
			for i := range v.NumField() {
				if f := v.Type().Field(i); f.IsExported() && f.Type.Kind() != reflect.Func {
					b.WriteString(f.Name + ":")
					dump(v.Field(i))
					b.WriteString(" ")
				}
			}
			b.WriteString("}")
		case reflect.Slice:
			b.WriteString("[")
			for i := range v.Len() {
				dump(v.Index(i))
				b.WriteString(",")
			}
			b.WriteString("]")
		default:
			fmt.Fprintf(&b, "%v", v.Interface()) // maps print sorted
		}
	}
	dump(reflect.ValueOf(d))
	for _, t := range d.Tasks {
		fmt.Fprintf(&b, "\n%s explicit %d", t.ID, t.explicit)
	}
	return b.String()
}

// TestPiecesMatchWhole: a task list read in pieces gives what the whole file gives (errors,
// DAG, source map, validation), and a list the plan misjudges is read whole.
func TestPiecesMatchWhole(t *testing.T) {
	t.Parallel()
	tasks := func(n int, extra string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "  - id: t%d\n    bash: \"true\"\n%s", i, strings.ReplaceAll(extra, "N", fmt.Sprint(i)))
		}
		return b.String()
	}
	tests := []struct {
		name, src string
		cut       bool // the plan holds: the list is read in pieces
	}{
		{"chain", string(genFile("chain", 9)), true},
		{"fan-out", string(genFile("fanout", 10)), true},
		{"comments and blank lines", "tasks:\n# first\n\n" + tasks(5, "\n# between\n    # indented\n"), true},
		{"keys after the list", "dag_id: x\ntasks:\n" + tasks(6, "") + "params: {a: 1}\nowner: me\ncolour: red\n", true},
		{"list at the margin", "tasks:\n" + strings.ReplaceAll(tasks(5, ""), "\n  ", "\n")[2:], true},
		{"block scalars", "tasks:\n" + tasks(5, "    env:\n      SCRIPT: |\n        - not an item\n        echo N\n"), true},
		{"errors in items", "default_args: {retries: x, pool: db}\ntasks:\n" +
			tasks(5, "    retires: 1\n    depends_on: [tN, nope]\n    priority_weight: \"2\"\n") + "  - id: t1\n    approval:\n", true},
		{"sensors and pools", "tasks:\n" + tasks(4, "    pool_requirements: {one: 1, two: 3}\n") +
			"  - {id: s, sensor: {http: {url: 'http://x', status: 42}, mode: poke}}\n  - id: g\n    approval: {timeout: 1h}\n", true},
		{"a quoted string over an item start", "tasks:\n  - id: a\n    bash: \"echo\n  - id: b\n    bash: x\"\n" + tasks(4, ""), false},
		{"anchors", "x-env: &env {A: b}\ntasks:\n" + tasks(5, "    env: *env\n"), false},
		{"an alias to nothing", "tasks:\n" + tasks(5, "    env: *env\n"), false},
		{"tasks inside a string", "description: \"a\ntasks:\n  - id: q\n  - id: r\"\ntasks:\n" + tasks(5, ""), false},
		{"two task lists", "tasks:\n" + tasks(4, "") + "tasks:\n" + tasks(4, ""), false},
		{"flow list", "tasks: [{id: a, bash: x}, {id: b, bash: x}, {id: c, bash: x}]\n", false},
		// The depth counts from the file's mapping: 3 + 97 levels is the limit, one more is over.
		{"deep item", "tasks:\n" + tasks(3, "") + "  - id: deep\n    bash: x\n    env: " + strings.Repeat("[", 97) +
			strings.Repeat("]", 97) + "\n", true},
		{"too deep item", "tasks:\n" + tasks(3, "") + "  - id: deep\n    bash: x\n    env: " + strings.Repeat("[", 98) +
			strings.Repeat("]", 98) + "\n", false},
		{"a second document", "tasks:\n" + tasks(5, "") + "---\ntasks: []\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data := []byte(tt.src)
			p, ok := planPieces(data, smallPieces)
			if ok {
				_, ok = p.header()
			}
			for k := 0; ok && k < p.count(); k++ {
				_, ok = p.piece(k)
			}
			if ok != tt.cut {
				t.Errorf("the plan holds: %v, want %v", ok, tt.cut)
			}
			samePieces(t, data)
		})
	}
	files, _ := filepath.Glob("testdata/*/*.yaml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			samePieces(t, data)
		})
	}
}

// FuzzPieces: whatever the file, its task list read in pieces of two items gives what the
// whole file gives.
func FuzzPieces(f *testing.F) {
	for _, pattern := range []string{"testdata/*/*.yaml", "../dags/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil {
				f.Add(data)
			}
		}
	}
	f.Add(genFile("chain", 7))
	f.Fuzz(func(t *testing.T, data []byte) { samePieces(t, data) })
}
