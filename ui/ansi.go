package ui

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"
)

// ANSI colours in logs: a task's output often carries the SGR escape sequences of a terminal
// (ESC [ 31 m …) that a log file keeps raw. ansiHTML turns them into spans with classes (the 16
// named colours follow the log's theme in style.css) or, for the 256-colour and true-colour
// forms, an inline colour; every other escape sequence (cursor moves, erasing, window titles,
// hyperlinks) is dropped, and all the text is HTML-escaped. It is hand-written because it is
// small and the Go libraries that do this render a whole terminal screen (cursor moves, line
// rewrites), which a log read in pieces (a tail, earlier pages, followed bytes) cannot feed.

// sgr is the text style in force.
type sgr struct {
	fg, bg                       string // a class ("a-fg-1") or an inline colour ("#ff8700"); "" default
	bold, dim, italic, underline bool
}

func (s sgr) plain() bool { return s == sgr{} }

// open is the span that starts text in style s.
func (s sgr) open() string {
	var class, style []string
	colour := func(v, prop, prefix string) {
		switch {
		case v == "":
		case strings.HasPrefix(v, "#"):
			style = append(style, prop+":"+v)
		default:
			class = append(class, prefix+v)
		}
	}
	colour(s.fg, "color", "a-fg-")
	colour(s.bg, "background-color", "a-bg-")
	for _, f := range []struct {
		on   bool
		name string
	}{{s.bold, "a-b"}, {s.dim, "a-d"}, {s.italic, "a-i"}, {s.underline, "a-u"}} {
		if f.on {
			class = append(class, f.name)
		}
	}
	out := "<span"
	if len(class) > 0 {
		out += ` class="` + strings.Join(class, " ") + `"`
	}
	if len(style) > 0 {
		out += ` style="` + strings.Join(style, ";") + `"`
	}
	return out + ">"
}

// ansiHTML renders log text with its SGR colours as spans; the style starts plain (a piece of
// a log read from its middle loses the colour set before it, as a terminal that joins late
// would).
func ansiHTML(text string) template.HTML {
	if !strings.ContainsRune(text, 0x1b) {
		return template.HTML(template.HTMLEscapeString(text))
	}
	var b strings.Builder
	b.Grow(len(text) + len(text)/8)
	var cur sgr
	open := false
	scanANSI(text, func(s string) {
		if !open && !cur.plain() {
			b.WriteString(cur.open())
			open = true
		}
		b.WriteString(template.HTMLEscapeString(s))
	}, func(params string) {
		next := applySGR(cur, params)
		if next == cur {
			return
		}
		if open {
			b.WriteString("</span>")
			open = false
		}
		cur = next
	})
	if open {
		b.WriteString("</span>")
	}
	return template.HTML(b.String())
}

// ansiStrip is text without its escape sequences: what a reader sees of it.
func ansiStrip(text string) string {
	if !strings.ContainsRune(text, 0x1b) {
		return text
	}
	var b strings.Builder
	scanANSI(text, func(s string) { b.WriteString(s) }, func(string) {})
	return b.String()
}

// scanANSI walks text: onText gets each run of text between escape sequences (never empty),
// onSGR the parameters of each SGR sequence; every other sequence is skipped.
func scanANSI(text string, onText func(string), onSGR func(params string)) {
	for {
		i := strings.IndexByte(text, 0x1b)
		if i < 0 {
			if text != "" {
				onText(text)
			}
			return
		}
		if i > 0 {
			onText(text[:i])
		}
		text = text[i+1:]
		if text == "" {
			return
		}
		switch text[0] {
		case '[': // CSI: parameters, intermediates, one final byte in @–~
			j := 1
			for j < len(text) && (text[j] < 0x40 || text[j] > 0x7e) {
				j++
			}
			if j == len(text) { // cut off at the end of the piece
				return
			}
			if text[j] == 'm' {
				onSGR(text[1:j])
			}
			text = text[j+1:]
		case ']': // OSC (a title, a hyperlink): up to BEL or ESC \
			end := strings.IndexAny(text, "\a\x1b")
			switch {
			case end < 0:
				return
			case text[end] == '\a':
				text = text[end+1:]
			default:
				text = text[end+1:]
				if strings.HasPrefix(text, `\`) {
					text = text[1:]
				}
			}
		default: // a two-byte escape (ESC 7, ESC =, …)
			text = text[1:]
		}
	}
}

// applySGR is style s after the SGR parameters params ("1;31", "38;5;208", "" = reset).
func applySGR(s sgr, params string) sgr {
	if params == "" {
		return sgr{}
	}
	if strings.ContainsAny(params, "<=>?") { // a private sequence, not a style
		return s
	}
	ps := strings.FieldsFunc(params, func(r rune) bool { return r == ';' || r == ':' })
	num := func(i int) int {
		if i >= len(ps) {
			return -1
		}
		n, err := strconv.Atoi(ps[i])
		if err != nil {
			return -1
		}
		return n
	}
	for i := 0; i < len(ps); i++ {
		n := num(i)
		switch {
		case n == 0:
			s = sgr{}
		case n == 1:
			s.bold = true
		case n == 2:
			s.dim = true
		case n == 3:
			s.italic = true
		case n == 4:
			s.underline = true
		case n == 22:
			s.bold, s.dim = false, false
		case n == 23:
			s.italic = false
		case n == 24:
			s.underline = false
		case n >= 30 && n <= 37:
			s.fg = strconv.Itoa(n - 30)
		case n >= 90 && n <= 97:
			s.fg = strconv.Itoa(n - 90 + 8)
		case n == 39:
			s.fg = ""
		case n >= 40 && n <= 47:
			s.bg = strconv.Itoa(n - 40)
		case n >= 100 && n <= 107:
			s.bg = strconv.Itoa(n - 100 + 8)
		case n == 49:
			s.bg = ""
		case n == 38 || n == 48:
			var c string
			switch num(i + 1) {
			case 5: // 38;5;n: the 256-colour palette
				c = palette256(num(i + 2))
				i += 2
			case 2: // 38;2;r;g;b
				r, g, bl := num(i+2), num(i+3), num(i+4)
				if r >= 0 && r < 256 && g >= 0 && g < 256 && bl >= 0 && bl < 256 {
					c = fmt.Sprintf("#%02x%02x%02x", r, g, bl)
				}
				i += 4
			default:
				i = len(ps)
			}
			if n == 38 {
				s.fg = c
			} else {
				s.bg = c
			}
		}
	}
	return s
}

// palette256 is colour n of xterm's 256: the 16 named ones as classes, the 6×6×6 cube and the
// grey ramp as colours; "" (default) when n is out of range.
func palette256(n int) string {
	switch {
	case n < 0 || n > 255:
		return ""
	case n < 16:
		return strconv.Itoa(n)
	case n < 232:
		n -= 16
		level := func(v int) int {
			if v == 0 {
				return 0
			}
			return 55 + 40*v
		}
		return fmt.Sprintf("#%02x%02x%02x", level(n/36), level(n/6%6), level(n%6))
	default:
		g := 8 + 10*(n-232)
		return fmt.Sprintf("#%02x%02x%02x", g, g, g)
	}
}
