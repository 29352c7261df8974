package dag

import (
	"fmt"

	"github.com/goccy/go-yaml/ast"
)

// aliasCheck measures what the aliases of a document expand to before anything is read from
// it: the nodes they add (each alias adds its anchor's value, with the aliases inside that
// expanded too) and the depth of the expanded tree. A node is counted once per expansion, so a
// file that uses no alias costs nothing here beyond one walk.
type aliasCheck struct {
	anchors map[string]ast.Node
	size    map[ast.Node]int // expanded node count of an anchored value
	depth   map[ast.Node]int // expanded depth of an anchored value
	open    map[ast.Node]bool
	added   int
	err     *limitError
}

// checkAliases reports an alias to its own anchor, aliases adding more than maxAliasNodes nodes
// and an expanded depth over maxDepth. anchors maps each anchor name to its value (the last
// definition wins, as in the reader).
func checkAliases(body ast.Node, anchors map[string]ast.Node) *limitError {
	c := &aliasCheck{anchors: anchors, size: map[ast.Node]int{}, depth: map[ast.Node]int{}, open: map[ast.Node]bool{}}
	c.walk(body, true)
	return c.err
}

// walk returns the expanded size and depth of n; inDoc is false inside an alias's target,
// whose nodes are counted by the alias rather than one by one.
func (c *aliasCheck) walk(n ast.Node, inDoc bool) (size, depth int) {
	if c.err != nil || n == nil {
		return 0, 0
	}
	switch v := n.(type) {
	case *ast.AliasNode:
		name := ""
		if v.Value != nil {
			name = v.Value.GetToken().Value
		}
		target, ok := c.anchors[name]
		if !ok {
			return 1, 1 // the reader reports the unknown alias
		}
		if c.open[target] {
			c.err = &limitError{pos: position(v), msg: fmt.Sprintf("alias *%s is inside its own anchor", name)}
			return 0, 0
		}
		s, known := c.size[target]
		d := c.depth[target]
		if !known {
			c.open[target] = true
			s, d = c.walk(target, false)
			delete(c.open, target)
			c.size[target], c.depth[target] = s, d
		}
		if inDoc {
			c.added = min(c.added+s, maxAliasNodes+1)
			if c.added > maxAliasNodes && c.err == nil {
				c.err = &limitError{pos: position(v), msg: fmt.Sprintf(
					"document too large after alias expansion (aliases add over %d nodes)", maxAliasNodes)}
			}
		}
		return s, d
	case *ast.AnchorNode:
		if c.open[v.Value] {
			// The anchor's own value, reached through an alias inside it.
			return c.walk(v.Value, inDoc)
		}
		c.open[v.Value] = true
		s, d := c.walk(v.Value, inDoc)
		delete(c.open, v.Value)
		return s, d
	case *ast.TagNode:
		return c.walk(v.Value, inDoc)
	case *ast.MappingNode:
		return c.children(v, len(v.Values), func(i int) ast.Node { return v.Values[i] }, inDoc)
	case *ast.MappingValueNode:
		ks, kd := c.walk(v.Key, inDoc)
		vs, vd := c.walk(v.Value, inDoc)
		return ks + vs, max(kd, vd)
	case *ast.SequenceNode:
		return c.children(v, len(v.Values), func(i int) ast.Node { return v.Values[i] }, inDoc)
	}
	return 1, 0
}

// children sums the expanded sizes of a collection's items; sizes saturate above the limit so
// that exponential expansions cannot overflow.
func (c *aliasCheck) children(at ast.Node, n int, item func(int) ast.Node, inDoc bool) (size, depth int) {
	size = 1
	for i := range n {
		s, d := c.walk(item(i), inDoc)
		size = min(size+s, 2*maxAliasNodes)
		depth = max(depth, d)
	}
	depth++
	if depth > maxDepth && c.err == nil {
		c.err = &limitError{pos: nodePos(at), msg: fmt.Sprintf("nested too deeply after alias expansion: over %d levels", maxDepth)}
	}
	return size, depth
}
