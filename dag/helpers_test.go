package dag

import "flag"

var update = flag.Bool("update", false, "rewrite the golden files of testdata/errors")

// testPools are the pools the fixtures are validated against.
var testPools = map[string]int{
	"one": 1, "two": 2, "db": 1,
	"source_db": 2, "destination_db": 3, "warehouse": 4,
	"unlimited": -1,
}

func testOptions() LoadOptions {
	return LoadOptions{Pools: func(name string) (int, bool) {
		c, ok := testPools[name]
		return c, ok
	}}
}

// mustParse parses a YAML fixture that must load.
func mustParse(t interface {
	Helper()
	Fatalf(string, ...any)
}, name, src string) *DAG {
	t.Helper()
	d, errs := Parse(name, []byte(src), testOptions())
	if len(errs) > 0 {
		t.Fatalf("Parse(%s): unexpected errors:\n%v", name, errorLines(errs))
	}
	return d
}

func errorLines(errs []*ImportError) string {
	var s string
	for _, e := range errs {
		s += e.Error() + "\n"
	}
	return s
}
