package dag

import (
	"bytes"

	"go.yaml.in/yaml/v3"

	"github.com/poolflow/poolflow/internal/yamlfile"
)

// A big file's task list is parsed a piece at a time: v3's tree takes about 25 bytes per byte
// of file, and the tree of a whole 5 MB file was most of the peak of loading it. planPieces
// finds, by their lines, where the items of the top-level `tasks:` list start. The file without
// the list (the header) is parsed first, then each piece of chunking.items on its own, its
// nodes moved to the file's lines. The plan is a guess that the parses confirm: a header or
// piece that does not parse cleanly, holds an anchor or an alias, or does not hold the items
// planned makes the whole file be parsed instead, and the whole parse reports any error as it
// always has. A line the plan takes for an item start inside a multi-line scalar or flow
// collection leaves that token unfinished in the piece before it, which then fails to parse.
// The limits count as in the whole file: its size and tokens first, then the parts' depth
// and cost together (yamlfile.ParsePart). TestPiecesMatchWhole and
// FuzzPieces hold the two equal.
type chunking struct {
	minBytes int // smaller files are parsed whole; negative: none is cut
	items    int // tasks per piece
}

var (
	defaultChunking = chunking{minBytes: bigFile, items: 1_000}
	noChunking      = chunking{minBytes: -1}
)

// taskPieces is where the items of the top-level task list are.
type taskPieces struct {
	data   []byte
	starts []int // byte offset of the line of each item's '-'
	lines  []int // and its line number
	end    int   // byte offset of the line after the list
	col    int   // column of the items' '-'
	key    int   // line of `tasks:`
	items  int   // per piece
	check  yamlfile.Check
}

// planPieces finds the items of the top-level task list: after a line `tasks:` at the left
// margin, each line that starts, at the first item's indentation, with "- " (or is "-"). The
// list ends at the first line, not blank nor a comment, indented less or (at the margin) not
// an item. A file with a tab or a carriage return, whose list is not in block style or not
// most of the file, has no plan.
func planPieces(data []byte, ch chunking) (*taskPieces, bool) {
	if ch.minBytes < 0 || len(data) < ch.minBytes || bytes.ContainsAny(data, "\t\r") || yamlfile.CheckSize(data) != nil {
		return nil, false
	}
	p := &taskPieces{data: data, end: len(data), col: -1, items: max(ch.items, 1)}
	inList := false
	for off, line := 0, 1; off < len(data); line++ {
		next := len(data)
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			next = off + i + 1
		}
		text := bytes.TrimRight(data[off:next], "\n")
		body := bytes.TrimLeft(text, " ")
		indent := len(text) - len(body)
		switch {
		case !inList:
			if isKeyLine(text, "tasks") {
				inList, p.key = true, line
			}
		case len(body) == 0 || body[0] == '#':
			// blank or a comment: part of whatever is around it
		case p.col < 0 && isItem(body):
			p.col = indent + 1
			fallthrough
		case indent == p.col-1 && isItem(body):
			p.starts = append(p.starts, off)
			p.lines = append(p.lines, line)
		case p.col < 0:
			return nil, false // `tasks:` followed by something else than a block list
		case indent < p.col-1 || indent == 0:
			p.end = off
			return p, p.worth()
		}
		off = next
	}
	return p, p.worth()
}

// worth tells whether the list is most of the file: else the pieces would save little, and a
// header that fails (a limit, a syntax error) would be parsed twice.
func (p *taskPieces) worth() bool {
	return len(p.starts) > 0 && 2*(p.end-p.starts[0]) >= len(p.data)
}

// isKeyLine tells whether text is `key:` at the left margin, with nothing after it but a
// comment.
func isKeyLine(text []byte, key string) bool {
	rest, ok := bytes.CutPrefix(text, []byte(key+":"))
	rest = bytes.TrimLeft(rest, " ")
	return ok && (len(rest) == 0 || rest[0] == '#')
}

func isItem(body []byte) bool {
	return len(body) == 1 && body[0] == '-' || bytes.HasPrefix(body, []byte("- "))
}

// header parses the file without its task list, its nodes at the file's lines; ok is false
// unless it parses cleanly into one mapping whose key `tasks`, on the planned line, has no
// value left.
func (p *taskPieces) header() (body *yaml.Node, ok bool) {
	h := make([]byte, 0, p.starts[0]+len(p.data)-p.end)
	h = append(append(h, p.data[:p.starts[0]]...), p.data[p.end:]...)
	f, err := yamlfile.ParsePart(h, &p.check)
	if err != nil || f.Unknown != nil || f.Anchors || len(f.Docs) != 1 || f.Docs[0].Kind != yaml.MappingNode {
		return nil, false
	}
	body = f.Docs[0]
	shift(body, bytes.Count(p.data[p.starts[0]:p.end], []byte{'\n'}), p.lines[0])
	for i := 0; i+1 < len(body.Content); i += 2 {
		if k := body.Content[i]; k.Value == "tasks" && k.Line == p.key && k.Column == 1 {
			return body, yamlfile.IsNull(body.Content[i+1])
		}
	}
	return nil, false
}

// count is the number of pieces.
func (p *taskPieces) count() int { return (len(p.starts) + p.items - 1) / p.items }

// piece parses piece k and returns its items, at the file's lines; ok is false when it does
// not hold exactly the items planned, cleanly.
func (p *taskPieces) piece(k int) ([]*yaml.Node, bool) {
	first, last := k*p.items, min((k+1)*p.items, len(p.starts))
	end := p.end
	if last < len(p.starts) {
		end = p.starts[last]
	}
	p.check.Depth = 1 // under the file's mapping
	f, err := yamlfile.ParsePart(p.data[p.starts[first]:end], &p.check)
	if err != nil || f.Unknown != nil || f.Anchors || len(f.Docs) != 1 {
		return nil, false
	}
	seq := f.Docs[0]
	if seq.Kind != yaml.SequenceNode || seq.Style&yaml.FlowStyle != 0 || len(seq.Content) != last-first {
		return nil, false
	}
	shift(seq, p.lines[first]-1, 0)
	return seq.Content, true
}

// shift moves the nodes of a part to the file's lines: those from line `from` on go down by
// lines.
func shift(n *yaml.Node, lines, from int) {
	if n.Line >= from {
		n.Line += lines
	}
	for _, c := range n.Content {
		shift(c, lines, from)
	}
}
