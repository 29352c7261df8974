package dag

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseErrorsGolden parses every testdata/errors/*.yaml fixture and compares the errors,
// one per line, with the .golden file beside it. Run with -update to rewrite the golden files
// after checking the new messages by eye.
func TestParseErrorsGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "errors", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			d, errs := Parse(filepath.ToSlash(file), data, testOptions())
			if d != nil {
				t.Errorf("Parse returned a DAG despite %d errors", len(errs))
			}
			if len(errs) == 0 {
				t.Fatal("no errors")
			}
			got := errorLines(errs)
			golden := strings.TrimSuffix(file, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("errors differ from %s\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}
