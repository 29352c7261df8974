package ui

import (
	"slices"
	"strings"
	"sync"

	"github.com/poolflow/poolflow/dag"
)

// The graph's layout (its nodes, groups and layers) depends only on the DAG's version and on
// which groups are open, not on the run shown: it is computed once per DAG definition and kept,
// so that a page of a 500-task DAG costs its states and its markup, not a topological sort and
// two barycentre sweeps per request. A new version of the DAG is a new *dag.DAG, hence a new key;
// the cache drops everything when full (the combinations of open groups a user can make are
// unbounded, the DAGs shown at once are not).

// graphLayout is a DAG's picture without the states: its nodes and their layers.
type graphLayout struct {
	nodes  []*vnode   // read only once cached
	layers [][]*vnode // vlayers(nodes)
}

type layoutKey struct {
	def      *dag.DAG
	collapse bool
	open     string // the open groups' ids, sorted, joined by NUL
}

// layoutCache holds the layouts of the DAGs shown lately.
type layoutCache struct {
	mu sync.Mutex
	m  map[layoutKey]*graphLayout
}

// layoutCacheSize bounds the layouts kept.
const layoutCacheSize = 256

// layout returns def's layout with grouping on or off and the groups in open opened.
func (c *layoutCache) layout(def *dag.DAG, collapse bool, open map[string]bool) *graphLayout {
	ids := make([]string, 0, len(open))
	for id, on := range open {
		if on {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	k := layoutKey{def, collapse, strings.Join(ids, "\x00")}
	c.mu.Lock()
	l, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return l
	}
	nodes := viewNodes(def, collapse, open)
	l = &graphLayout{nodes: nodes, layers: vlayers(nodes)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= layoutCacheSize {
		c.m = map[layoutKey]*graphLayout{}
	}
	c.m[k] = l
	return l
}
