package dag

import (
	"bytes"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// A large DAG file's task list is parsed a piece at a time. The YAML parser keeps every token
// and node of a document until it is done, about 100 bytes per byte of file: 400 MB for a
// 100,000-task file, all live at once. planTasks finds, by their lines, where the items of the
// top-level tasks list start. The file is then parsed with those lines left blank but the
// last piece's, and the items before it in pieces of chunking.items, each padded with blank
// lines so that every position is the file's own and followed by the start of an empty item
// so that the parser ends its last item as it does in the file. The plan is only a guess:
// any piece or header that does not parse into what it planned, holds an anchor or an alias
// (which may refer across pieces), or was read with an unexpected shape makes the file parse
// whole, and the whole parse then reports any error as it always has. Limits are counted as
// in the whole file (the depth from the top, the block-mapping cost over all pieces).
// TestChunkedDecodeMatchesWhole and FuzzChunkedDecode hold the two equal.

// chunking says which files are parsed in pieces, and how large the pieces are.
type chunking struct {
	minBytes int // smaller files are parsed whole; negative: none is split
	items    int // tasks per piece
}

var (
	defaultChunking = chunking{minBytes: 256 << 10, items: 1000}
	noChunking      = chunking{minBytes: -1}
)

// taskPlan is where the items of the top-level tasks list are.
type taskPlan struct {
	starts []int // byte offset of the line of each item's '-'
	lines  []int // and its line number
	end    int   // byte offset of the line after the list (len(data) at the end of the file)
	first  srcPos
	col    int // column of the items' '-'
}

// planTasks finds the items of the top-level tasks list by their lines: after a line
// "tasks:" at the left margin, each line that starts, at the first item's indentation, with
// "- ". ok is false when the file must be parsed whole. A line the plan takes for an item start
// that is not one lies in a token that spans lines (a quoted string, a flow collection: a
// block scalar's lines are indented deeper), and the piece before it then fails to parse.
func planTasks(data []byte) (plan taskPlan, ok bool) {
	const (
		beforeTasks = iota
		afterKey    // "tasks:" seen, its list not yet
		inList
		afterList
	)
	if n := bytes.Count(data, []byte{'\r'}); n > 0 && n != bytes.Count(data, []byte("\r\n")) {
		return plan, false // a lone CR breaks a line for the parser, not for the plan
	}
	state, indent := beforeTasks, 0
	for off, line := 0, 1; off < len(data); line++ {
		text := data[off:]
		next := len(data)
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			text, next = text[:i], off+i+1
		}
		text = bytes.TrimSuffix(text, []byte{'\r'})
		body := bytes.TrimLeft(text, " ")
		n := len(text) - len(body)
		switch {
		case len(bytes.TrimSpace(body)) == 0:
		case body[0] == '\t':
			if state == afterKey || state == inList {
				return plan, false // a tab in the indentation: the columns are not the file's
			}
		case state == beforeTasks || state == afterList:
			if n == 0 && bytes.HasPrefix(body, []byte("tasks:")) {
				rest := bytes.TrimSpace(body[len("tasks:"):])
				if state == afterList || len(rest) > 0 && rest[0] != '#' {
					return plan, false // twice, or a list in flow style
				}
				state = afterKey
			}
		case body[0] == '#' && (state == afterKey || n >= indent):
			// a comment between "tasks:" and the list, or in an item
		case state == afterKey:
			if !isItem(body) {
				return plan, false // not a block list
			}
			state, indent = inList, n
			plan.first, plan.col = srcPos{line, n + 1}, n+1
			plan.starts, plan.lines = append(plan.starts, off), append(plan.lines, line)
		case n > indent:
			// inside an item
		case n == indent && isItem(body):
			plan.starts, plan.lines = append(plan.starts, off), append(plan.lines, line)
		default:
			// The list ends at a key at the left margin, or the plan does not hold.
			if n != 0 || body[0] == '#' || body[0] == '-' || body[0] == '.' {
				return plan, false
			}
			plan.end, state = off, afterList
		}
		off = next
	}
	switch state {
	case inList:
		plan.end = len(data)
	case afterList:
	default:
		return plan, false
	}
	return plan, len(plan.starts) > 1
}

// isItem reports whether a line (without its indentation) starts a block list item.
func isItem(body []byte) bool {
	return len(body) > 0 && body[0] == '-' && (len(body) == 1 || body[1] == ' ' || body[1] == '\r')
}

// blankLines returns n newlines.
func blankLines(n int) string { return strings.Repeat("\n", n) }

// lastPiece is the index of the first item of the last piece: that piece stays in the header,
// so that what follows the list in the file follows it in the parse too.
func (p taskPlan) lastPiece(items int) int { return (len(p.starts) - 1) / items * items }

// header is data with the lines of the task list's items before the last piece left blank:
// the rest of the file, every line where it was.
func (p taskPlan) header(data []byte, items int) []byte {
	first, last := p.starts[0], p.starts[p.lastPiece(items)]
	lines := bytes.Count(data[first:last], []byte{'\n'})
	out := make([]byte, 0, first+lines+len(data)-last)
	out = append(out, data[:first]...)
	out = append(out, blankLines(lines)...)
	return append(out, data[last:]...)
}

// piece returns the text of items [i, j), padded so that it starts on its own line, and
// followed by an empty item where the next one starts in the file, so that the parser ends
// the last item as it does in the file.
func (p taskPlan) piece(data []byte, i, j int) string {
	return blankLines(p.lines[i]-1) + string(data[p.starts[i]:p.starts[j]]) + strings.Repeat(" ", p.col-1) + "-\n"
}

// taskPieces hands the reader the items of a planned file, piece by piece.
type taskPieces struct {
	plan   taskPlan
	data   []byte
	items  int
	failed bool // a piece did not parse as its planned items: the file is parsed whole
	done   bool // every item was handed over
	// check carries the block-mapping cost from the header through the pieces, whose items
	// are one level less deep than in the file (the top-level mapping is not in them).
	check tokenCheck
}

// each calls f with the index and node of every item before the last piece, parsing one piece
// at a time, then with the items of the header's list (the last piece); it stops and marks
// the pieces failed when one does not parse into the items planned for it.
func (tp *taskPieces) each(header []ast.Node, f func(i int, item ast.Node)) {
	last := tp.plan.lastPiece(tp.items)
	if len(header) != len(tp.plan.starts)-last {
		tp.failed = true
		return
	}
	for i := 0; i < last; i += tp.items {
		j := min(i+tp.items, last)
		body, anchors, err := parseYAMLWith([]byte(tp.plan.piece(tp.data, i, j)), &tp.check)
		seq, ok := body.(*ast.SequenceNode)
		if err != nil || !ok || seq.IsFlowStyle || len(seq.Values) != j-i+1 || len(anchors) > 0 ||
			len(ast.Filter(ast.AliasType, body)) > 0 {
			tp.failed = true
			return
		}
		if _, null := seq.Values[j-i].(*ast.NullNode); !null {
			tp.failed = true
			return
		}
		for k, item := range seq.Values[:j-i] {
			f(i+k, item)
		}
	}
	for k, item := range header {
		f(last+k, item)
	}
	tp.done = true
}
