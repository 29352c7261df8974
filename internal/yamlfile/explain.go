package yamlfile

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// maxExplainBytes bounds the files goccy is asked to explain: its parser keeps about 100 bytes
// per byte of file and grows with the square of a block mapping's keys. A larger file gets
// v3's message, at the line it names.
const maxExplainBytes = 1 << 20

// explain says why the parser refused data (err). goccy/go-yaml parses it again, and its first
// error, which names the offending token's line and column, is the answer. A file goccy reads
// whole whose aliases name anchors not defined before them is the exception: v3 stops at the
// first, while the reader reports each where it is. The returned data then has the '*' of each
// such alias replaced, and unknown gives their positions, for another parse. When goccy cannot
// say more, v3's message stands.
func explain(data []byte, err error) (patched []byte, unknown map[Pos]string, ferr *Error) {
	if strings.Contains(err.Error(), "exceeded max depth") {
		// v3 refuses 10,000 levels before the tree can be checked (goccy's parser would take
		// gigabytes on them).
		e := v3Error(err)
		e.Msg = fmt.Sprintf("nested too deeply: over %d levels", maxDepth)
		return nil, nil, e
	}
	if e := longKey(data); e != nil {
		return nil, nil, e // v3 refuses an implicit key over 1024 characters; goccy does not
	}
	if len(data) > maxExplainBytes {
		return nil, nil, v3Error(err)
	}
	defer func() {
		if p := recover(); p != nil {
			patched, unknown, ferr = nil, nil, v3Error(err)
		}
	}()
	tokens := lexer.Tokenize(string(data))
	if _, perr := parser.Parse(tokens, 0); perr != nil {
		e := &Error{Msg: perr.Error()}
		if pe, ok := perr.(interface {
			GetMessage() string
			GetToken() *token.Token
		}); ok {
			e.Msg = pe.GetMessage()
			if tk := pe.GetToken(); tk != nil && tk.Position != nil {
				e.Line, e.Column, e.Value = tk.Position.Line, tk.Position.Column, tk.Value
			}
		}
		return nil, nil, e
	}
	if strings.Contains(err.Error(), "unknown anchor") {
		if patched, unknown := patchUnknownAliases(data, tokens); len(unknown) > 0 {
			return patched, unknown, nil
		}
	}
	return nil, nil, v3Error(err)
}

// patchUnknownAliases finds the aliases whose anchor is not defined before them and replaces
// their '*' with '_', so that each reads as a plain scalar at the alias's own position.
func patchUnknownAliases(data []byte, tokens token.Tokens) ([]byte, map[Pos]string) {
	defined := map[string]bool{}
	unknown := map[Pos]string{}
	var at []token.Position
	for i, tk := range tokens {
		if i+1 >= len(tokens) || tk.Position == nil {
			continue
		}
		switch name := tokens[i+1].Value; tk.Type {
		case token.AnchorType:
			defined[name] = true
		case token.AliasType:
			if !defined[name] {
				unknown[Pos{tk.Position.Line, tk.Position.Column}] = name
				at = append(at, *tk.Position)
			}
		}
	}
	if len(unknown) == 0 {
		return nil, nil
	}
	out := bytes.Clone(data)
	line, off := 1, 0
	for _, p := range at {
		for line < p.Line && off < len(out) {
			i := bytes.IndexByte(out[off:], '\n')
			if i < 0 {
				off = len(out)
				break
			}
			off, line = off+i+1, line+1
		}
		o := off
		for c := 1; c < p.Column && o < len(out); c++ {
			_, size := utf8.DecodeRune(out[o:])
			o += size
		}
		if o < len(out) && out[o] == '*' {
			out[o] = '_'
		} else {
			delete(unknown, Pos{p.Line, p.Column})
		}
	}
	return out, unknown
}

// longKey finds a line whose key, before its ": ", is over maxKeyBytes: the likely reason
// why v3 refused a file (an implicit key cannot be longer, while an explicit "? key" can and
// is checked on the tree).
func longKey(data []byte) *Error {
	for line, off := 1, 0; off < len(data); line++ {
		end := len(data)
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			end = off + i
		}
		text := data[off:end]
		off = end + 1
		if len(text) <= maxKeyBytes {
			continue
		}
		start := len(text) - len(bytes.TrimLeft(text, " -?{[,"))
		colon := bytes.Index(text[start:], []byte(": "))
		if colon < 0 && bytes.HasSuffix(text, []byte(":")) {
			colon = len(text) - 1 - start
		}
		if colon > maxKeyBytes {
			return &Error{Line: line, Column: utf8.RuneCount(text[:start]) + 1,
				Msg: fmt.Sprintf("mapping key too long: %d bytes, at most %d", colon, maxKeyBytes)}
		}
	}
	return nil
}

var v3Line = regexp.MustCompile(`^yaml: (?:line (\d+): )?`)

// v3Error is v3's own message, placed at the start of the line it names (v3 leaves out a
// line of 1).
func v3Error(err error) *Error {
	msg := err.Error()
	e := &Error{Msg: msg}
	if m := v3Line.FindStringSubmatch(msg); m != nil {
		e.Msg, e.Line, e.Column = msg[len(m[0]):], 1, 1
		if m[1] != "" {
			e.Line, _ = strconv.Atoi(m[1])
		}
	}
	return e
}
