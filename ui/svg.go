package ui

import (
	"fmt"
	"html"
	"html/template"
	"strings"
	"time"
)

// svg builds an inline SVG picture. Every piece of text that comes from data goes through text
// or attr, which escape it; numbers are formatted by num.
type svg struct{ b strings.Builder }

func (s *svg) open(w, h float64, class, label string) {
	aspect := ""
	if class == "occupancy" || class == "progress" {
		aspect = ` preserveAspectRatio="none"` // stretched to the card's width
	}
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" class="%s" viewBox="0 0 %s %s" width="%s" height="%s"%s role="img" aria-label="%s">`,
		attr(class), num(w), num(h), num(w), num(h), aspect, attr(label))
}

// openGroup opens a picture whose parts are links (the graph): a group, not an image, so that
// screen readers reach its nodes.
func (s *svg) openGroup(w, h float64, class, label string) {
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" class="%s" viewBox="0 0 %s %s" width="%s" height="%s" role="group" aria-label="%s">`,
		attr(class), num(w), num(h), num(w), num(h), attr(label))
}

// raw appends markup whose arguments are numbers or text already escaped.
func (s *svg) raw(format string, args ...any) { fmt.Fprintf(&s.b, format, args...) }

func (s *svg) text(x, y float64, class, anchor, content string) {
	fmt.Fprintf(&s.b, `<text x="%s" y="%s" class="%s" text-anchor="%s">%s</text>`, num(x), num(y), attr(class),
		attr(anchor), html.EscapeString(content))
}

func (s *svg) title(content string) {
	s.b.WriteString("<title>" + html.EscapeString(content) + "</title>")
}

func (s *svg) html() template.HTML {
	s.b.WriteString("</svg>")
	return template.HTML(s.b.String()) // every dynamic part above is escaped
}

func attr(v string) string { return html.EscapeString(v) }

func num(f float64) string {
	s := fmt.Sprintf("%.1f", f)
	return strings.TrimSuffix(s, ".0")
}

// truncate shortens a label to n runes with an ellipsis.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// niceStep picks a tick step giving at most max ticks over d.
func niceStep(d time.Duration, max int) time.Duration {
	steps := []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second,
		30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute,
		30 * time.Minute, time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour}
	for _, s := range steps {
		if d/s <= time.Duration(max) {
			return s
		}
	}
	return 7 * 24 * time.Hour
}

func clock(t time.Time, step time.Duration) string {
	if step < time.Minute {
		return t.UTC().Format("15:04:05")
	}
	if step >= 24*time.Hour {
		return t.UTC().Format("Jan 2")
	}
	return t.UTC().Format("15:04")
}
