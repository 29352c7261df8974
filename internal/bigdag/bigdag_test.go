package bigdag

import (
	"testing"

	"github.com/poolflow/poolflow/dag"
)

func TestWarehouse(t *testing.T) {
	d := Warehouse("big", []string{"true"})
	if n := len(d.Tasks); n != 500 {
		t.Fatalf("%d tasks, want 500", n)
	}
	if errs := dag.Validate(d, dag.LoadOptions{}); len(errs) > 0 {
		t.Fatal(errs[0])
	}
}
