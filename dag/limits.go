package dag

import (
	"fmt"

	"github.com/goccy/go-yaml/token"
)

// Limits on what one DAG file may cost to read. They are checked before the structure they
// protect is built: the size and an estimate of the token count before the YAML is tokenized,
// the nesting depth and the size of block mappings on the tokens before they are parsed, and
// alias expansion on the syntax tree before it is read. The parser allocates about 5 KB per
// task of an ordinary file; these bounds keep a small hostile file from costing more than an
// ordinary one of its size. They are far above what a 100,000-task DAG needs.
const (
	// maxFileBytes bounds the size of a DAG file.
	maxFileBytes = 8 << 20
	// maxTokens bounds the tokens of a file (a task of the usual shape is about 10).
	maxTokens = 1_500_000
	// maxDepth bounds the nesting of collections, counted after alias expansion.
	maxDepth = 100
	// maxAliasNodes bounds the nodes that aliases add to a document (the "billion laughs").
	maxAliasNodes = 100_000
	// maxMappingKeys bounds the keys of one block-style mapping, and maxMappingCost the sum of
	// the squares of the key counts of all block mappings of a file: the YAML parser's cost for
	// a block mapping grows with the square of its keys (a flow mapping {a: 1, b: 2} is linear).
	maxMappingKeys = 5_000
	maxMappingCost = 2 * maxMappingKeys * maxMappingKeys
)

// limitError is a file refused by a limit before it was parsed.
type limitError struct {
	pos srcPos // zero when the limit is about the whole file
	msg string
}

func (e *limitError) Error() string { return e.msg }

// checkSize refuses a file that is too large, or has too many tokens, to tokenize. The token
// estimate counts the starts of words and the indicator bytes that make tokens of their own; a
// quoted string containing them counts more than it holds, so the bound errs on the safe side.
func checkSize(data []byte) error {
	if len(data) > maxFileBytes {
		return &limitError{msg: fmt.Sprintf("file too large: %d bytes, at most %d", len(data), maxFileBytes)}
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
		return &limitError{msg: fmt.Sprintf("file too large: about %d tokens, at most %d", n, maxTokens)}
	}
	return nil
}

// blockLevel is an open block collection while scanning tokens: the column of its entries.
type blockLevel struct {
	col   int
	isMap bool
	keys  int
}

// tokenCheck refuses nesting deeper than maxDepth and block mappings too large for the
// parser, looking only at the tokens: a block collection is a column at which '-' entries or
// keys line up, a flow collection a bracket. A task list parsed in pieces carries one from the
// header through the pieces (chunked.go): the mapping cost adds up over the whole file.
type tokenCheck struct {
	stack []blockLevel
	flow  int
	cost  int
	base  int // levels above the tokens checked (a piece of the task list is one down)
}

// all checks the tokens of one document (or piece) from a fresh stack; the cost carries on.
func (c *tokenCheck) all(tks token.Tokens) error {
	c.stack, c.flow = c.stack[:0], 0
	for _, tk := range tks {
		if err := c.add(tk); err != nil {
			return err
		}
	}
	return nil
}

func (c *tokenCheck) add(tk *token.Token) error {
	deep := func(tk *token.Token) error {
		if c.base+len(c.stack)+c.flow > maxDepth {
			return &limitError{pos: tokenPos(tk), msg: fmt.Sprintf("nested too deeply: over %d levels", maxDepth)}
		}
		return nil
	}
	switch tk.Type {
	case token.SequenceStartType, token.MappingStartType:
		c.flow++
		return deep(tk)
	case token.SequenceEndType, token.MappingEndType:
		if c.flow > 0 {
			c.flow--
		}
		return nil
	case token.DocumentHeaderType, token.DocumentEndType:
		c.stack, c.flow = c.stack[:0], 0
		return nil
	}
	if c.flow > 0 {
		return nil
	}
	var col int
	var isMap bool
	var key *token.Token // of a ':'
	switch tk.Type {
	case token.SequenceEntryType:
		col = tk.Position.Column
	case token.MappingValueType:
		key = tk.Prev
		for key != nil && key.Type == token.CommentType {
			key = key.Prev
		}
		if key == nil || key.Position == nil || key.Position.Line != tk.Position.Line {
			return nil // "? key" on an earlier line, or a malformed file the parser will report
		}
		col, isMap = key.Position.Column, true
	default:
		return nil
	}
	for len(c.stack) > 0 {
		top := &c.stack[len(c.stack)-1]
		if top.col > col || top.col == col && !top.isMap && isMap {
			// Deeper collections ended; so did a sequence written at its key's column
			// ("tasks:\n- a\nnext: 1").
			c.stack = c.stack[:len(c.stack)-1]
			continue
		}
		break
	}
	if n := len(c.stack); n > 0 && c.stack[n-1].col == col && c.stack[n-1].isMap == isMap {
		if isMap {
			top := &c.stack[n-1]
			top.keys++
			c.cost += 2*top.keys - 1 // keys² so far
			switch {
			case top.keys > maxMappingKeys:
				return &limitError{pos: tokenPos(key), msg: fmt.Sprintf(
					"block mapping with over %d keys; write a large mapping in flow style {key: value, ...}", maxMappingKeys)}
			case c.cost > maxMappingCost:
				return &limitError{pos: tokenPos(key), msg: fmt.Sprintf(
					"block mappings too large together (their key counts squared add up to over %d); write large mappings in flow style {key: value, ...}", maxMappingCost)}
			}
		}
		return nil
	}
	c.stack = append(c.stack, blockLevel{col: col, isMap: isMap, keys: 1})
	c.cost++
	return deep(tk)
}

func tokenPos(tk *token.Token) srcPos {
	if tk == nil || tk.Position == nil {
		return srcPos{}
	}
	return srcPos{tk.Position.Line, tk.Position.Column}
}
