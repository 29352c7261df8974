package dag

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const sourceYAML = `# nightly export
dag_id: export
schedule: "@daily"
tasks:
  - {id: dump, bash: 'pg_dump db > /tmp/x'}
  - {id: ship, bash: 'ship /tmp/x', depends_on: [dump]}
`

// A YAML DAG's source is its file's text, byte for byte, from Parse and from the Loader; its
// hash follows the text, comments included, and no more.
func TestSourceOfAYAMLDAGIsItsText(t *testing.T) {
	t.Parallel()
	d, errs := Parse("export.yaml", []byte(sourceYAML), LoadOptions{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if f, text := d.Source(); f != SourceYAML || text != sourceYAML {
		t.Fatalf("source %s %q, want the file's text", f, text)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "export.yaml")
	if err := os.WriteFile(path, []byte(sourceYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	var l Loader
	dags, ierrs := l.LoadDir(dir, LoadOptions{})
	if len(ierrs) > 0 || len(dags) != 1 {
		t.Fatal(ierrs)
	}
	if _, text := dags[0].Source(); text != sourceYAML {
		t.Fatalf("loaded source %q", text)
	}
	if dags[0].SourceHash() != d.SourceHash() || len(d.SourceHash()) != 64 {
		t.Fatalf("hashes %s and %s of one text", dags[0].SourceHash(), d.SourceHash())
	}
	// A comment is a change of the text: the Code tab shows what the file said.
	c, _ := Parse("export.yaml", []byte(strings.Replace(sourceYAML, "nightly", "daily", 1)), LoadOptions{})
	if c.SourceHash() == d.SourceHash() {
		t.Fatal("a changed comment kept the hash")
	}
	// A position looked up for an error later (the source map built from the bytes) leaves
	// the source as it was.
	if d.src.get() == nil {
		t.Fatal("no source map")
	}
	if _, text := d.Source(); text != sourceYAML {
		t.Fatalf("source after the map was built %q", text)
	}
}

// A Go DAG's source is its canonical JSON: every default applied, YAML names, the function of
// a Go task by name; the same definition gives the same text, another definition another.
func TestSourceOfAGoDAGIsItsCanonicalJSON(t *testing.T) {
	t.Parallel()
	build := func(retries int) *DAG {
		d := New("gojob", Schedule("@hourly"), StartDate(time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)), Tags("go"))
		d.Go("extract", exampleExtract, Retries(retries), Pools(map[string]int{"db": 1}))
		d.Bash("load", "echo load", After("extract"), ExecutionTimeout(90*time.Second))
		d.AddSensor("wait", Sensor{FileExists: "/tmp/ready"})
		return d
	}
	d := build(1)
	f, text := d.Source()
	if f != SourceGo {
		t.Fatalf("format %s", f)
	}
	var v struct {
		DAGID string           `json:"dag_id"`
		Sched string           `json:"schedule"`
		Start string           `json:"start_date"`
		Tasks []map[string]any `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, text)
	}
	if v.DAGID != "gojob" || v.Sched != "@hourly" || v.Start != "2024-01-02T00:00:00Z" || len(v.Tasks) != 3 {
		t.Fatalf("canonical JSON:\n%s", text)
	}
	ex, load, wait := v.Tasks[0], v.Tasks[1], v.Tasks[2]
	if ex["id"] != "extract" || ex["kind"] != "go" || !strings.HasSuffix(ex["go"].(string), "dag.exampleExtract") ||
		ex["retries"] != 1.0 || ex["pool_requirements"].(map[string]any)["db"] != 1.0 || ex["retry_delay"] != "5m0s" {
		t.Fatalf("task extract: %v\n%s", ex, text)
	}
	if load["bash"] != "echo load" || load["execution_timeout"] != "1m30s" || load["depends_on"].([]any)[0] != "extract" {
		t.Fatalf("task load: %v", load)
	}
	if s := wait["sensor"].(map[string]any); s["file_exists"] != "/tmp/ready" || s["mode"] != ModePoke || s["poke_interval"] != "1m0s" {
		t.Fatalf("task wait: %v", wait)
	}
	if !strings.Contains(text, "\n  \"tasks\": [\n") {
		t.Fatalf("not indented for reading:\n%s", text)
	}
	if build(1).SourceHash() != d.SourceHash() {
		t.Fatal("one definition, two hashes")
	}
	if build(2).SourceHash() == d.SourceHash() {
		t.Fatal("another definition, the same hash")
	}
}

func exampleExtract(context.Context, *TaskContext) error { return nil }
