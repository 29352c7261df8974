package yamlfile

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestParseRefuses covers the limits checked on the tree and the errors explained by goccy's
// parser, each at its position.
func TestParseRefuses(t *testing.T) {
	t.Parallel()
	longKey := strings.Repeat("k", 2000)
	flowKeys := func(n int) string {
		var b strings.Builder
		b.WriteString("params: {")
		for i := range n {
			fmt.Fprintf(&b, "k%d: %d, ", i, i)
		}
		b.WriteString("}\n")
		return b.String()
	}
	big := strings.TrimSuffix(flowKeys(40), "}\n")
	tests := []struct {
		name, src string
		want      string // line:column: message
	}{
		{"duplicate key", "a: 1\nb: 2\na: 3\n", `3:1: mapping key "a" already defined at [1:1]`},
		{"duplicate key in a small flow mapping", "x: {k1: 1, k2: 2, k1: 3}\n", `1:19: mapping key "k1" already defined at [1:5]`},
		{"duplicate key in a large mapping", big + "k5: 9}\n", fmt.Sprintf(`1:%d: mapping key "k5" already defined at [1:45]`, len(big)+1)},
		{"long implicit key", longKey + ": 1\n", "1:1: mapping key too long: 2000 bytes, at most 1024"},
		{"long explicit key", "? " + longKey + "\n: 1\n", "1:3: mapping key too long: 2000 bytes, at most 1024"},
		{"long flow key", "{" + longKey + ": 1}\n", "1:2: mapping key too long: 2000 bytes, at most 1024"},
		{"flow mapping of too many keys", flowKeys(50_001), "1:727790: mapping with over 50000 keys"},
		{"syntax", "a: [1, 2\n", "1:4: sequence end token ']' not found"},
		{"deep", strings.Repeat("[", 101) + strings.Repeat("]", 101), "1:101: nested too deeply: over 100 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.src))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v, want %s", err, tt.want)
			}
			if got := fmt.Sprintf("%d:%d: %s", e.Line, e.Column, e.Msg); got != tt.want {
				t.Errorf("got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestUnknownAliases: every alias that names no anchor defined before it is read as a scalar
// at its own position and listed, so that the reader can report each.
func TestUnknownAliases(t *testing.T) {
	t.Parallel()
	f, err := Parse([]byte("a: *x\nb: &y [1]\nc: *y\nd: [*z, *x]\ne: *later\nf: &later 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[Pos]string{{1, 4}: "x", {4, 5}: "z", {4, 9}: "x", {5, 4}: "later"}
	if fmt.Sprint(f.Unknown) != fmt.Sprint(want) {
		t.Errorf("unknown %v, want %v", f.Unknown, want)
	}
	if c := f.Docs[0].Content[5]; c.Kind != yaml.AliasNode || c.Alias == nil {
		t.Errorf("c is %v, want an alias of y", c.Kind)
	}
}

// FuzzYAMLFile: Parse never panics, and gives documents or an *Error with a message.
func FuzzYAMLFile(f *testing.F) {
	for _, s := range []string{"a: 1\n", "a: *x\n", "- [1, {b: &c 2}]\n- *c\n", "? a\n: b\n", "a: |\n  x\n---\nb: 2\n", "{a: [}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Msg == "" {
				t.Fatalf("error %#v", err)
			}
			return
		}
		for _, d := range file.Docs {
			if d == nil {
				t.Fatal("nil document")
			}
		}
	})
}
