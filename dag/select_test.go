package dag

import (
	"slices"
	"strings"
	"testing"
)

// TestSelect: a clear's or mark's tasks: the roots, with what lies downstream and upstream of
// them when asked, in dependency order; an unknown root is an error naming it.
func TestSelect(t *testing.T) {
	t.Parallel()
	//   a → b → d
	//   c ──────┘   e (alone)
	d := New("s")
	d.Bash("a", "true")
	d.Bash("b", "true", After("a"))
	d.Bash("c", "true")
	d.Bash("d", "true", After("b", "c"))
	d.Bash("e", "true")
	for _, tt := range []struct {
		roots    []string
		down, up bool
		want     []string
	}{
		{[]string{"b"}, false, false, []string{"b"}},
		{[]string{"b"}, true, false, []string{"b", "d"}},
		{[]string{"b"}, false, true, []string{"a", "b"}},
		{[]string{"b"}, true, true, []string{"a", "b", "d"}},
		{[]string{"d"}, false, true, []string{"a", "b", "c", "d"}},
		{[]string{"e", "a"}, true, false, []string{"a", "b", "d", "e"}},
	} {
		got, err := d.Select(tt.roots, tt.down, tt.up)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Select(%v, down %v, up %v) = %v %v, want %v", tt.roots, tt.down, tt.up, got, err, tt.want)
		}
	}
	if _, err := d.Select([]string{"zz"}, false, false); err == nil || !strings.Contains(err.Error(), "task zz") {
		t.Errorf("unknown root: %v", err)
	}
}
