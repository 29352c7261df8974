package yamlfile

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Limits on what one file may cost to read. The size and an estimate of the token count are
// checked before the file is parsed, the rest on the tree before anything is read from it (or,
// for a file the parser refuses, on goccy's tokens: explain.go). They are far above what a
// 100,000-task DAG needs. The block-mapping bounds were first set for goccy's parser, whose
// cost grew with the square of a block mapping's keys; they stay as the limits users know.
const (
	// MaxFileBytes bounds the size of a file.
	MaxFileBytes = 8 << 20
	// maxTokens bounds the tokens of a file (a task of the usual shape is about 10).
	maxTokens = 1_500_000
	// maxDepth bounds the nesting of collections, counted after alias expansion.
	maxDepth = 100
	// maxAliasNodes bounds the nodes that aliases add to a document (the "billion laughs").
	maxAliasNodes = 100_000
	// maxBlockKeys bounds the keys of one block-style mapping, and maxBlockCost the sum of the
	// squares of the key counts of all block mappings of a file.
	maxBlockKeys = 5_000
	maxBlockCost = 2 * maxBlockKeys * maxBlockKeys
	// maxMapKeys bounds the keys of any one mapping, flow style too: a 5 MB params map of
	// 350,000 keys passed every other limit and cost 668 MiB to read.
	maxMapKeys = 50_000
	// maxKeyBytes bounds a mapping key, as YAML bounds an implicit key (1024 characters).
	maxKeyBytes = 1024
)

// CheckSize refuses a file that is too large, or has too many tokens, to parse. The token
// estimate counts the starts of words and the indicator bytes that make tokens of their own; a
// quoted string containing them counts more than it holds, so the bound errs on the safe side.
func CheckSize(data []byte) *Error {
	if len(data) > MaxFileBytes {
		return TooLarge(int64(len(data)))
	}
	n, space := 0, true
	for _, c := range data {
		switch c {
		case ' ', '\t', '\n', '\r':
			space = true
			continue
		case ',', '[', ']', '{', '}', ':':
			n++
			space = true // what follows starts a token of its own
			continue
		default:
			if space {
				n++
			}
		}
		space = false
	}
	if n > maxTokens {
		return &Error{Msg: fmt.Sprintf("file too large: about %d tokens, at most %d", n, maxTokens)}
	}
	return nil
}

// TooLarge is the error of a file of size bytes, over MaxFileBytes.
func TooLarge(size int64) *Error {
	return &Error{Msg: fmt.Sprintf("file too large: %d bytes, at most %d", size, MaxFileBytes)}
}

func errAt(n *yaml.Node, format string, args ...any) *Error {
	return &Error{Line: n.Line, Column: n.Column, Msg: fmt.Sprintf(format, args...)}
}

// treeCheck walks the documents in file order, as the tokens were written.
type treeCheck struct {
	cost    int
	dup     *Error // the first duplicate key, reported if no limit is broken
	anchors bool   // an anchor or an alias was seen
}

// checkTree checks the limits on the documents, then the first duplicate key, then aliases,
// and tells whether the documents hold anchors or aliases. The cost goes on from part's.
func checkTree(docs []*yaml.Node, part *Check) (anchors bool, err *Error) {
	c := &treeCheck{cost: part.cost}
	for _, d := range docs {
		if err := c.walk(d, 1+part.Depth); err != nil {
			return false, err
		}
	}
	part.cost = c.cost
	if c.dup != nil {
		return false, c.dup
	}
	if !c.anchors {
		return false, nil
	}
	for _, d := range docs {
		if err := checkAliases(d); err != nil {
			return false, err
		}
	}
	return true, nil
}

func (c *treeCheck) walk(n *yaml.Node, depth int) *Error {
	if n.Anchor != "" || n.Kind == yaml.AliasNode {
		c.anchors = true
	}
	switch n.Kind {
	case yaml.SequenceNode:
		if depth > maxDepth {
			return errAt(n, "nested too deeply: over %d levels", maxDepth)
		}
		if n.Style&yaml.FlowStyle == 0 {
			c.cost++
		}
		for _, it := range n.Content {
			if err := c.walk(it, depth+1); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		if depth > maxDepth {
			return errAt(n, "nested too deeply: over %d levels", maxDepth)
		}
		block := n.Style&yaml.FlowStyle == 0
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, keys := n.Content[i], i/2+1
			switch {
			case keys > maxMapKeys:
				return errAt(k, "mapping with over %d keys", maxMapKeys)
			case k.Kind == yaml.ScalarNode && len(k.Value) > maxKeyBytes:
				return errAt(k, "mapping key too long: %d bytes, at most %d", len(k.Value), maxKeyBytes)
			}
			if block {
				c.cost += 2*keys - 1 // keys² so far
				switch {
				case keys == 1:
				case keys > maxBlockKeys:
					return errAt(k, "block mapping with over %d keys; write a large mapping in flow style {key: value, ...}", maxBlockKeys)
				case c.cost > maxBlockCost:
					return errAt(k, "block mappings too large together (their key counts squared add up to over %d); write large mappings in flow style {key: value, ...}", maxBlockCost)
				}
			}
			if c.dup == nil {
				c.dup = duplicate(n, i)
			}
			if err := c.walk(k, depth+1); err != nil {
				return err
			}
			if err := c.walk(n.Content[i+1], depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// duplicate reports key i of m when an earlier key has the same text. Mappings are searched in
// order up to a few keys and indexed past that, once, when their second key is checked.
func duplicate(m *yaml.Node, i int) *Error {
	k := m.Content[i]
	if k.Kind != yaml.ScalarNode || Tag(k) == "!!merge" {
		return nil
	}
	dupe := func(e *yaml.Node) *Error {
		return &Error{Line: k.Line, Column: k.Column, Value: k.Value,
			Msg: fmt.Sprintf("mapping key %q already defined at [%d:%d]", k.Value, e.Line, e.Column)}
	}
	if len(m.Content) <= 32 {
		for j := 0; j < i; j += 2 {
			if e := m.Content[j]; e.Kind == yaml.ScalarNode && e.Value == k.Value && Tag(e) != "!!merge" {
				return dupe(e)
			}
		}
		return nil
	}
	if i != 0 {
		return nil // the whole mapping was checked with its first key
	}
	seen := make(map[string]*yaml.Node, len(m.Content)/2)
	for j := 0; j+1 < len(m.Content); j += 2 {
		e := m.Content[j]
		if e.Kind != yaml.ScalarNode || Tag(e) == "!!merge" {
			continue
		}
		if first, ok := seen[e.Value]; ok {
			k = e
			return dupe(first)
		}
		seen[e.Value] = e
	}
	return nil
}

// aliasCheck measures what the aliases of a document expand to: the nodes they add (each
// alias adds its anchor's value, with the aliases inside that expanded too) and the depth of
// the expanded tree. A node is counted once per expansion, so a file that uses no alias costs
// one walk.
type aliasCheck struct {
	size  map[*yaml.Node]int // expanded node count of an anchored value
	depth map[*yaml.Node]int // expanded depth of an anchored value
	open  map[*yaml.Node]bool
	added int
	err   *Error
}

// checkAliases reports an alias inside its own anchor, aliases adding more than maxAliasNodes
// nodes and an expanded depth over maxDepth.
func checkAliases(body *yaml.Node) *Error {
	c := &aliasCheck{size: map[*yaml.Node]int{}, depth: map[*yaml.Node]int{}, open: map[*yaml.Node]bool{}}
	c.walk(body, true)
	return c.err
}

// walk returns the expanded size and depth of n; inDoc is false inside an alias's target,
// whose nodes are counted by the alias rather than one by one.
func (c *aliasCheck) walk(n *yaml.Node, inDoc bool) (size, depth int) {
	if c.err != nil || n == nil {
		return 0, 0
	}
	if n.Kind == yaml.AliasNode {
		target := n.Alias
		if target == nil {
			return 1, 1
		}
		if c.open[target] {
			c.err = errAt(n, "alias *%s is inside its own anchor", n.Value)
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
				c.err = errAt(n, "document too large after alias expansion (aliases add over %d nodes)", maxAliasNodes)
			}
		}
		return s, d
	}
	if n.Kind != yaml.MappingNode && n.Kind != yaml.SequenceNode {
		return 1, 0
	}
	anchored := n.Anchor != "" && !c.open[n]
	if anchored {
		c.open[n] = true
		defer delete(c.open, n)
	}
	size = 1
	for _, it := range n.Content {
		s, d := c.walk(it, inDoc)
		size = min(size+s, 2*maxAliasNodes)
		depth = max(depth, d)
	}
	depth++
	if depth > maxDepth && c.err == nil {
		c.err = errAt(n, "nested too deeply after alias expansion: over %d levels", maxDepth)
	}
	return size, depth
}
