package ui

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestContrast computes, for the light and the dark theme, the contrast ratio (WCAG 2.x
// relative luminance) of every pair of text and background colour the pages use for words:
// body and muted text, links, buttons (plain, ghost, danger, approve), every state badge, the
// "needs you" mark. WCAG AA asks 4.5:1 for text; each pair must reach it.
func TestContrast(t *testing.T) {
	themes := cssThemes(t)
	white, black := "#ffffff", "#111111"
	for _, theme := range []string{"light", "dark"} {
		v := themes[theme]
		get := func(name string) string {
			c, ok := v[name]
			if !ok {
				t.Fatalf("%s theme: no --%s", theme, name)
			}
			return c
		}
		buttonText := white
		dangerText, okText := white, white
		if theme == "dark" {
			buttonText, dangerText, okText = "#06201d", "#1b0505", "#1b0505"
		}
		pairs := []struct{ what, fg, bg string }{
			{"text on the page", get("text"), get("bg")},
			{"text on a card", get("text"), get("panel")},
			{"muted text on a card", get("muted"), get("panel")},
			{"muted text on the page", get("muted"), get("bg")},
			{"muted text on a chip or code", get("muted"), get("panel-2")},
			{"a link on a card", get("accent"), get("panel")},
			{"a button", buttonText, get("accent")},
			{"a ghost button", get("accent"), get("panel")},
			{"a danger ghost button", get("danger"), get("panel")},
			{"the Reject (danger) button", dangerText, get("danger")},
			{"the Approve button", okText, get("ok")},
			{"a warning", get("warn"), get("warn-soft")},
			{"a refusal", get("danger"), get("danger-soft")},
			{"needs you", white, get("badge-awaiting-approval")},
		}
		for _, s := range []string{"success", "failed", "queued", "awaiting-approval"} {
			pairs = append(pairs, struct{ what, fg, bg string }{"badge " + s, white, get("badge-" + s)})
		}
		for _, s := range []string{"scheduled", "running", "up-for-retry", "up-for-reschedule", "upstream-failed", "skipped", "removed"} {
			pairs = append(pairs, struct{ what, fg, bg string }{"badge " + s, black, get("st-" + s)})
		}
		for _, p := range pairs {
			r := contrast(t, p.fg, p.bg)
			if r < 4.5 {
				t.Errorf("%s theme: %s: %s on %s is %.2f:1, want at least 4.5:1", theme, p.what, p.fg, p.bg, r)
			}
		}
	}
}

var (
	cssVar   = regexp.MustCompile(`--([a-z0-9-]+):\s*(#[0-9a-fA-F]{6}|#[0-9a-fA-F]{3})\b`)
	darkOpen = "@media (prefers-color-scheme: dark)"
)

// cssThemes reads the colour variables of the stylesheets: the light theme is every :root
// block outside the dark media query, the dark one those inside it over the light ones.
func cssThemes(t *testing.T) map[string]map[string]string {
	t.Helper()
	light, dark := map[string]string{}, map[string]string{}
	for _, name := range []string{"static/style.css", "static/scale.css"} {
		b, err := staticFS.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		css := string(b)
		for len(css) > 0 {
			i := strings.Index(css, darkOpen)
			if i < 0 {
				addVars(light, css)
				break
			}
			addVars(light, css[:i])
			// The media block ends where its braces balance.
			depth, j := 0, i
			for ; j < len(css); j++ {
				if css[j] == '{' {
					depth++
				} else if css[j] == '}' {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			addVars(dark, css[i:j])
			css = css[min(j+1, len(css)):]
		}
	}
	for k, v := range light {
		if _, ok := dark[k]; !ok {
			dark[k] = v
		}
	}
	return map[string]map[string]string{"light": light, "dark": dark}
}

func addVars(m map[string]string, css string) {
	for _, sub := range cssVar.FindAllStringSubmatch(css, -1) {
		m[sub[1]] = strings.ToLower(sub[2])
	}
}

// contrast is the WCAG contrast ratio of two #rrggbb colours.
func contrast(t *testing.T, a, b string) float64 {
	la, lb := luminance(t, a), luminance(t, b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

func luminance(t *testing.T, hex string) float64 {
	hex = strings.TrimPrefix(hex, "#")
	if len(hex) == 3 {
		hex = string([]byte{hex[0], hex[0], hex[1], hex[1], hex[2], hex[2]})
	}
	n, err := strconv.ParseUint(hex, 16, 32)
	if err != nil {
		t.Fatalf("colour %q: %v", hex, err)
	}
	ch := func(c uint64) float64 {
		s := float64(c) / 255
		if s <= 0.03928 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*ch(n>>16&0xff) + 0.7152*ch(n>>8&0xff) + 0.0722*ch(n&0xff)
}

func TestContrastFormula(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want float64
	}{{"#000000", "#ffffff", 21}, {"#ffffff", "#ffffff", 1}, {"#ff0000", "#ffffff", 4.0}, {"#9370db", "#ffffff", 3.76}} {
		if got := contrast(t, c.a, c.b); fmt.Sprintf("%.2f", got) != fmt.Sprintf("%.2f", c.want) && math.Abs(got-c.want) > 0.01 {
			t.Errorf("contrast(%s, %s) = %.3f, want %.2f", c.a, c.b, got, c.want)
		}
	}
}
