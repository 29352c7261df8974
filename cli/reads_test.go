package cli

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/poolflow/poolflow/executor"
)

// TestReadsLeaveTheStoreAlone: the read commands, run with another configuration than the
// daemon's (here none: the defaults), commit nothing; `dags test` with that configuration adds
// what it lacks but leaves the daemon's pools as they are.
func TestReadsLeaveTheStoreAlone(t *testing.T) {
	t.Parallel()
	p := newProject(t, "pools:\n  fp: 3\n  default: 5\n", map[string]string{
		"u.yaml":  "tasks:\n  - {id: a, bash: 'true', pool_requirements: {fp: 1}}\n",
		"ok.yaml": "tasks:\n  - {id: a, bash: 'true'}\n",
	})
	d, st := p.daemon(t, "reads", nil)
	ctx := context.Background()
	if _, err := d.Trigger(ctx, executor.TriggerRequest{DAGID: "u", RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	before, err := st.ListPools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dv, err := st.DataVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other := *p
	other.config = filepath.Join(t.TempDir(), "poolflow.yaml") // an empty file: the defaults
	if err := os.WriteFile(other.config, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"pools", "list"}, {"pools", "list", "-o", "json"}, {"dags", "list"}, {"dags", "validate"},
		{"dags", "validate", filepath.Join(p.dags, "ok.yaml")}, {"rules", "test", "--attr", "dag_id=u"},
		{"tasks", "explain", "u", "r1", "a"},
	} {
		// The folder does not validate under the defaults (fp is the daemon's file pool): exit 1.
		if out, errOut, code := other.run(args...); code != 0 && !(len(args) == 2 && args[1] == "validate") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		if now, _ := st.DataVersion(ctx); now != dv {
			t.Errorf("%v committed to the store", args)
			dv = now
		}
	}
	if out, errOut, code := other.run("dags", "test", "ok"); code != 0 {
		t.Fatalf("dags test: %d %s%s", code, out, errOut)
	}
	after, _ := st.ListPools(ctx)
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("pools changed:\nbefore %+v\nafter  %+v", before, after)
	}
	if out, _, _ := other.run("pools", "list"); !strings.Contains(out, "fp") {
		t.Errorf("pools list:\n%s", out)
	}
}
