package ui

import (
	"testing"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/internal/bigdag"
)

// TestLayoutCache: a DAG's layout is computed once per definition, grouping and set of open
// groups (in any order), and a new definition (a reload: a new *dag.DAG) gets its own.
func TestLayoutCache(t *testing.T) {
	var c layoutCache
	d := bigdag.Warehouse("w", []string{"true"})
	a := c.layout(d, true, nil)
	if b := c.layout(d, true, map[string]bool{}); b != a {
		t.Error("the same layout is computed twice")
	}
	if len(a.nodes) != len(viewNodes(d, true, nil)) || len(a.layers) != len(vlayers(a.nodes)) {
		t.Errorf("cached layout: %d nodes in %d layers", len(a.nodes), len(a.layers))
	}
	open := c.layout(d, true, map[string]bool{"prefix:3:load_table_": true, "prefix:1:extract_table_": true})
	if open == a || len(open.nodes) <= len(a.nodes) {
		t.Errorf("opened groups: %d nodes, closed %d", len(open.nodes), len(a.nodes))
	}
	if again := c.layout(d, true, map[string]bool{"prefix:1:extract_table_": true, "prefix:3:load_table_": true,
		"prefix:9:x_": false}); again != open {
		t.Error("the same open groups in another order are another layout")
	}
	if off := c.layout(d, false, nil); off == a || len(off.nodes) != 500 {
		t.Errorf("ungrouped: %d nodes", len(off.nodes))
	}
	reloaded := bigdag.Warehouse("w", []string{"true"})
	if c.layout(reloaded, true, nil) == a {
		t.Error("a new definition reuses the old one's layout")
	}
	for range layoutCacheSize + 1 {
		small := dag.New("small")
		small.Command("only", []string{"true"})
		c.layout(small, true, nil)
	}
	if len(c.m) > layoutCacheSize {
		t.Errorf("%d layouts kept, bound %d", len(c.m), layoutCacheSize)
	}
}
