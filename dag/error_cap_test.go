package dag

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestErrorCap checks that a file reports its first maxErrorsPerFile errors in file order and
// then one line saying how many more there are, placed where the first one left out is.
func TestErrorCap(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("tasks:\n")
	for i := range 50 {
		fmt.Fprintf(&b, "  - id: t%d\n    bash: echo\n    colour: red\n", i)
	}
	_, errs := Parse("cap.yaml", []byte(b.String()), LoadOptions{})
	if len(errs) != maxErrorsPerFile+1 {
		t.Fatalf("%d errors, want %d:\n%s", len(errs), maxErrorsPerFile+1, errorLines(errs))
	}
	for i, e := range errs[:maxErrorsPerFile] {
		if want := fmt.Sprintf("cap.yaml:%d:5: dag cap, task t%d: colour: unknown field", 4+3*i, i); e.Error() != want {
			t.Errorf("error %d = %q, want %q", i, e.Error(), want)
		}
	}
	if got, want := errs[maxErrorsPerFile].Error(), "cap.yaml:64:5: dag cap: ... and 30 more"; got != want {
		t.Errorf("last line = %q, want %q", got, want)
	}
}

// TestErrorCapKeepsFilesApart checks that each file of a folder has its own cap and that the
// "more" line stays with its file.
func TestErrorCapKeepsFilesApart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"a", "b"} {
		var b strings.Builder
		b.WriteString("tasks:\n")
		for i := range 25 {
			fmt.Fprintf(&b, "  - id: t%d\n    depends_on: [ghost]\n    bash: echo\n", i)
		}
		writeFile(t, dir+"/"+name+".yaml", b.String(), time.Unix(1_000_000, 0))
	}
	_, errs := LoadDir(dir, LoadOptions{})
	if len(errs) != 2*(maxErrorsPerFile+1) {
		t.Fatalf("%d errors:\n%s", len(errs), errorLines(errs))
	}
	for k, name := range []string{"a", "b"} {
		last := errs[k*(maxErrorsPerFile+1)+maxErrorsPerFile]
		if want := fmt.Sprintf("%s/%s.yaml:63:18: dag %s: ... and 5 more", dir, name, name); last.Error() != want {
			t.Errorf("last error of %s = %q, want %q", name, last.Error(), want)
		}
	}
}

// TestErrorCapCountsCycles checks a file with more cycles than the cap: every cycle counts,
// and only the ones shown are named (the others are never searched for their path).
func TestErrorCapCountsCycles(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("tasks:\n")
	for i := range 30 {
		fmt.Fprintf(&b, "  - id: a%d\n    depends_on: [b%d]\n    bash: echo\n  - id: b%d\n    depends_on: [a%d]\n    bash: echo\n", i, i, i, i)
	}
	_, errs := Parse("cycles.yaml", []byte(b.String()), LoadOptions{})
	if len(errs) != maxErrorsPerFile+1 {
		t.Fatalf("%d errors:\n%s", len(errs), errorLines(errs))
	}
	if got, want := errs[0].Error(), "cycles.yaml:6:18: dag cycles, task b0: depends_on[0]: cycle: a0 -> b0 -> a0"; got != want {
		t.Errorf("first error = %q, want %q", got, want)
	}
	if got := errs[maxErrorsPerFile].Msg; got != "... and 10 more" {
		t.Errorf("last error = %q", got)
	}
}
