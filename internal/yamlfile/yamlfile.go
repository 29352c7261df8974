// Package yamlfile reads one YAML file, a DAG or poolflow.yaml, into the nodes of
// go.yaml.in/yaml/v3, which carry the line and column of every value, within limits that keep a
// hostile file from costing more than an ordinary one of its size. The limits are checked on the
// tree before anything is read from it; a file the parser refuses is explained by goccy/go-yaml,
// whose messages name the offending token's line and column (v3's name a line only, often the
// line where the enclosing collection began).
package yamlfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is a file that is not one YAML document within the limits, located at the offending
// token when there is one.
type Error struct {
	Line, Column int    // 0 when the problem is about the whole file
	Value        string // the offending token, when the parser names one
	Msg          string
}

func (e *Error) Error() string { return e.Msg }

// File is a parsed YAML file.
type File struct {
	// Docs are the bodies of its documents that hold something (not null): a DAG file or a
	// configuration has one, and an empty file none.
	Docs []*yaml.Node
	// Unknown are the aliases that name no anchor defined before them, by position, with the
	// name they gave. Each was read as a plain scalar (its '*' taken for another character) so
	// that the rest of the file could be read; the reader reports them where it meets them.
	Unknown map[Pos]string
	// Anchors tells whether the file defines an anchor or uses an alias.
	Anchors bool
}

// Check carries the limits over the parts of one file parsed apart (ParsePart).
type Check struct {
	Depth int // levels above each part's root in the file
	cost  int // the block mappings' cost so far
}

// Pos is a 1-based line and column.
type Pos struct{ Line, Column int }

// At is where n was written.
func At(n *yaml.Node) Pos { return Pos{n.Line, n.Column} }

// maxReparses bounds the parses again after unknown aliases were replaced: goccy's tokens
// find them all at once, so one is the rule.
const maxReparses = 3

// Parse reads data. A file over the size or token limit is refused before it is parsed, one
// whose tree breaks a limit before it is returned; the error is an *Error.
func Parse(data []byte) (*File, error) { return ParsePart(data, &Check{}) }

// ParsePart is Parse of a part of a file (a piece of dag's task list), whose limits add up
// with the other parts' in c: the nesting depth counts from c.Depth, the block mappings' cost
// goes on from the parts before. A part counts its own root sequence into the cost, so parts
// cost a little more than their file, never less.
func ParsePart(data []byte, c *Check) (*File, error) {
	if err := CheckSize(data); err != nil {
		return nil, err
	}
	f := &File{}
	var err error
	for range maxReparses + 1 {
		var docs []*yaml.Node
		docs, err = parse(data)
		if err == nil {
			anchors, err := checkTree(docs, c)
			if err != nil {
				return nil, err
			}
			f.Docs, f.Anchors = docs, anchors
			return f, nil
		}
		patched, unknown, ferr := explain(data, err)
		if ferr != nil {
			return nil, ferr
		}
		if f.Unknown == nil {
			f.Unknown = map[Pos]string{}
		}
		for p, name := range unknown {
			f.Unknown[p] = name
		}
		data = patched
	}
	return nil, v3Error(err)
}

// parse reads every document of data; a document holding only null is left out.
func parse(data []byte) (docs []*yaml.Node, err error) {
	defer func() {
		// A parser fed arbitrary files may panic; a broken file must not stop the daemon.
		if p := recover(); p != nil {
			docs, err = nil, fmt.Errorf("yaml parser failed: %v", p)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return nil, err
		}
		if len(doc.Content) == 0 {
			continue
		}
		body := doc.Content[0]
		if IsNull(body) && body.Anchor == "" {
			continue
		}
		docs = append(docs, body)
	}
}

// Describe names what a node holds, for "expected X, got Y" errors: a quoted string, a
// number or boolean as written, null, a mapping or a list.
func Describe(n *yaml.Node) string {
	switch {
	case n == nil:
		return "null"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.AliasNode:
		return "an alias"
	}
	switch Tag(n) {
	case "!!str", "!!timestamp", "!!binary":
		return fmt.Sprintf("%q", n.Value)
	}
	return n.Value
}

// Tag is the type of a node as its text resolves without an explicit tag of the file's own
// (a custom tag such as !env is looked through, as it was by the reader before): !!str,
// !!int, !!float, !!bool, !!null, !!timestamp, !!map, !!seq, !!merge.
func Tag(n *yaml.Node) string {
	if n.Tag == "" || strings.HasPrefix(n.Tag, "!!") || n.Kind != yaml.ScalarNode {
		return n.ShortTag()
	}
	plain := *n
	plain.Tag = ""
	return plain.ShortTag()
}

// IsNull reports a null value (`key:`, `~`, `null`).
func IsNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && Tag(n) == "!!null"
}
