package dag

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

const (
	fieldsBegin = "<!-- task fields: generated from dag.taskFields by `go test ./dag/ -run TestDesignDocListsTaskFields -update` -->\n"
	fieldsEnd   = "<!-- end of task fields -->\n"
)

// taskFieldsDoc renders the field list of docs/design.md from taskFields.
func taskFieldsDoc() string {
	var b strings.Builder
	b.WriteString(fieldsBegin)
	b.WriteString("| field | in a task | in default_args | in a job | an approval gate takes it from default_args | in the fingerprint |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return ""
	}
	for i := range taskFields {
		f := &taskFields[i]
		if f.name == "" {
			continue
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", f.name, yes(f.use&inTask != 0), yes(f.use&inDefaults != 0),
			yes(f.use&inJob != 0), yes(f.use&inDefaults != 0 && f.use&notApproval == 0), yes(f.fp != ""))
	}
	b.WriteString(fieldsEnd)
	return b.String()
}

// TestDesignDocListsTaskFields holds the field list of docs/design.md to taskFields.
func TestDesignDocListsTaskFields(t *testing.T) {
	t.Parallel()
	const path = "../docs/design.md"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, j := strings.Index(doc, fieldsBegin), strings.Index(doc, fieldsEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no generated task field list (%q ... %q)", path, fieldsBegin, fieldsEnd)
	}
	want := taskFieldsDoc()
	got := doc[i : j+len(fieldsEnd)]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(doc[:i]+want+doc[j+len(fieldsEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the task field list of %s is not taskFields'; run go test ./dag/ -run TestDesignDocListsTaskFields -update\ngot:\n%s\nwant:\n%s", path, got, want)
}
