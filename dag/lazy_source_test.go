package dag

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A DAG that decoded cleanly keeps its file's bytes, not its source map; when a later
// validation (other pools) fails, the map decoded again names the same lines, columns and
// fields as a DAG that kept it.
func TestShedSourceMapGivesTheSamePositions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "a.yaml")
	body := "default_args:\n  pool: db\ntasks:\n  - id: x\n    bash: echo x\n  - id: y\n    bash: echo y\n" +
		"    pool_requirements: {db: 1, api: 2}\n  - {id: z, bash: echo z, depends_on: [x], pool: api}\n"
	writeFile(t, file, body, time.Unix(1_000_000, 0))
	l := &Loader{now: func() time.Time { return time.Unix(2_000_000, 0) }}
	pools := map[string]int{"db": 4, "api": 4}
	all := LoadOptions{Pools: func(n string) (int, bool) { c, ok := pools[n]; return c, ok }}
	d := loadOne(t, l, dir, all)
	if d.src == nil || d.src.m != nil || !d.src.clean {
		t.Fatalf("a clean DAG kept its source map: %+v", d.src)
	}

	none := LoadOptions{Pools: func(string) (int, bool) { return 0, false }}
	_, got := l.LoadDir(dir, none)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, want := Parse(file, data, none)
	if len(want) < 3 || errorLines(got) != errorLines(want) {
		t.Fatalf("after the shed map was rebuilt:\n%s\nwith the map kept:\n%s", errorLines(got), errorLines(want))
	}
	// The rebuilt map is kept: a second failing validation does not decode again.
	rebuilt := d.src.m
	if _, again := l.LoadDir(dir, none); rebuilt == nil || d.src.m != rebuilt || errorLines(again) != errorLines(want) {
		t.Errorf("second validation: map %p then %p, errors:\n%s", rebuilt, d.src.m, errorLines(again))
	}
}

// A file with a field that failed to decode keeps its map: the checks skip the bad fields.
// One without errors keeps its bytes, and no map was built for it.
func TestBadFieldKeepsSourceMap(t *testing.T) {
	t.Parallel()
	d, errs := decode("a.yaml", []byte("tasks:\n  - id: x\n    bash: echo x\n    retries: lots\n"))
	if d == nil || len(errs) == 0 {
		t.Fatalf("decode: %v, %v", d, errs)
	}
	if d.src.m == nil || d.src.clean || !d.src.isBad(0, "retries") {
		t.Errorf("the map of a DAG with a bad field was not kept: %+v", d.src)
	}
	if want := "a.yaml:4:14: dag a, task x: retries: expected an integer, got \"lots\""; errs[0].Error() != want {
		t.Errorf("error %s, want %s", errs[0], want)
	}
	d, errs = decode("a.yaml", []byte("tasks:\n  - id: x\n    bash: echo x\n"))
	if len(errs) > 0 || d.src.m != nil || !d.src.clean || d.src.data == nil {
		t.Errorf("a clean DAG: errors %v, source %+v", errs, d.src)
	}
}
