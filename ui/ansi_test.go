package ui

import (
	"strconv"
	"strings"
	"testing"
)

// TestANSIHTML: SGR colours become spans, every other escape sequence is dropped, and the
// text is escaped whatever the sequences around it.
func TestANSIHTML(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, in, want string
	}{
		{"plain", "a <b> & c\n", "a &lt;b&gt; &amp; c\n"},
		{"red then reset", "\x1b[31mred\x1b[0m plain", `<span class="a-fg-1">red</span> plain`},
		{"reset without a number", "\x1b[32mok\x1b[m.", `<span class="a-fg-2">ok</span>.`},
		{"bold and bright", "\x1b[1;92mPASS\x1b[22m still green\x1b[39m", `<span class="a-fg-10 a-b">PASS</span><span class="a-fg-10"> still green</span>`},
		{"background", "\x1b[41;37m FAIL \x1b[0m", `<span class="a-fg-7 a-bg-1"> FAIL </span>`},
		{"256 colours", "\x1b[38;5;208morange\x1b[0m \x1b[38;5;9mred\x1b[0m", `<span style="color:#ff8700">orange</span> <span class="a-fg-9">red</span>`},
		{"grey ramp background", "\x1b[48;5;240mx\x1b[0m", `<span style="background-color:#585858">x</span>`},
		{"true colour", "\x1b[38;2;255;0;128mpink\x1b[0m", `<span style="color:#ff0080">pink</span>`},
		{"true colour out of range", "\x1b[38;2;999;0;0mx", `x`},
		{"escaped inside a colour", "\x1b[33m<script>alert(1)</script>\x1b[0m", `<span class="a-fg-3">&lt;script&gt;alert(1)&lt;/script&gt;</span>`},
		{"cursor and erase dropped", "50%\x1b[2K\x1b[1G100%\x1b[?25h", "50%100%"},
		{"window title (OSC, BEL) dropped", "\x1b]0;title\x07after", "after"},
		{"hyperlink (OSC, ST) dropped", "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"cut at the end of a piece", "text\x1b[3", "text"},
		{"lone escape at the end", "text\x1b", "text"},
		{"two-byte escape", "a\x1b7b", "ab"},
		{"italic underline off again", "\x1b[3;4mx\x1b[23;24my", `<span class="a-i a-u">x</span>y`},
		{"a span does not run over a reset line", "\x1b[31ma\nb\x1b[0m\nc", "<span class=\"a-fg-1\">a\nb</span>\nc"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := string(ansiHTML(c.in)); got != c.want {
				t.Errorf("ansiHTML(%q)\n got %s\nwant %s", c.in, got, c.want)
			}
		})
	}
}

// TestANSIPaletteContrast: each of the 16 named colours reads at WCAG AA (4.5:1) on the log's
// background, as style.css has them.
func TestANSIPaletteContrast(t *testing.T) {
	t.Parallel()
	b, err := staticFS.ReadFile("static/style.css")
	if err != nil {
		t.Fatal(err)
	}
	css := string(b)
	for n := 0; n < 16; n++ {
		sel := "pre.log .a-fg-" + strconv.Itoa(n) + " { color: "
		i := strings.Index(css, sel)
		if i < 0 {
			t.Errorf("style.css has no colour for ANSI colour %d", n)
			continue
		}
		hex := css[i+len(sel) : i+len(sel)+7]
		if r := contrast(t, hex, "#0d1117"); r < 4.5 {
			t.Errorf("ANSI colour %d (%s) reads at %.2f:1 on the log's background, want 4.5", n, hex, r)
		}
	}
}
