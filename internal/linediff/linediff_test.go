package linediff

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// render writes a diff as " x", "-x", "+x" lines.
func render(ls []Line) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString([]string{" ", "-", "+"}[l.Kind] + l.Text + "\n")
	}
	return b.String()
}

// check verifies a diff: its old and new lines, in order, are the two texts, with their
// numbers.
func check(t *testing.T, old, new []string, d []Line) {
	t.Helper()
	var gotOld, gotNew []string
	for _, l := range d {
		if l.Kind != Added {
			gotOld = append(gotOld, l.Text)
			if l.Old != len(gotOld) {
				t.Fatalf("line %q numbered %d in the old text, want %d", l.Text, l.Old, len(gotOld))
			}
		}
		if l.Kind != Removed {
			gotNew = append(gotNew, l.Text)
			if l.New != len(gotNew) {
				t.Fatalf("line %q numbered %d in the new text, want %d", l.Text, l.New, len(gotNew))
			}
		}
	}
	if !slices.Equal(gotOld, old) || !slices.Equal(gotNew, new) {
		t.Fatalf("diff does not rebuild the texts:\n%s", render(d))
	}
}

func edits(d []Line) int {
	n := 0
	for _, l := range d {
		if l.Kind != Same {
			n++
		}
	}
	return n
}

func TestDiff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, old, new, want string
	}{
		{"same", "a\nb\n", "a\nb\n", " a\n b\n"},
		{"changed line", "a\nb\nc\n", "a\nB\nc\n", " a\n-b\n+B\n c\n"},
		{"added", "a\nc\n", "a\nb\nc\n", " a\n+b\n c\n"},
		{"removed", "a\nb\nc\n", "a\nc\n", " a\n-b\n c\n"},
		{"from nothing", "", "a\n", "+a\n"},
		{"to nothing", "a\n", "", "-a\n"},
		{"moved", "a\nb\nc\nd\n", "b\nc\nd\na\n", "-a\n b\n c\n d\n+a\n"},
		{"interleaved", "x\na\ny\nb\nz\n", "a\nb\nc\n", "-x\n a\n-y\n b\n-z\n+c\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, new := Lines(tt.old), Lines(tt.new)
			d := Diff(old, new)
			check(t, old, new, d)
			if got := render(d); got != tt.want {
				t.Errorf("diff:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestDiffRandom: random edits of random texts; every diff rebuilds both texts, and finds no
// more edits than were made.
func TestDiffRandom(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		old := make([]string, r.IntN(30))
		for i := range old {
			old[i] = string(rune('a' + r.IntN(5)))
		}
		new := slices.Clone(old)
		made := r.IntN(8)
		for range made {
			switch i := r.IntN(len(new) + 1); {
			case r.IntN(2) == 0 || len(new) == 0 || i == len(new):
				new = slices.Insert(new, i, string(rune('a'+r.IntN(6))))
			default:
				new = slices.Delete(new, i, i+1)
			}
		}
		d := Diff(old, new)
		check(t, old, new, d)
		if edits(d) > made {
			t.Fatalf("%d edits found for %d made:\n%s", edits(d), made, render(d))
		}
	}
}

// TestDiffBounded: two long texts with nothing in common cost at most MaxEdits rounds and still
// give a correct diff.
func TestDiffBounded(t *testing.T) {
	t.Parallel()
	old, new := make([]string, 5000), make([]string, 5000)
	for i := range old {
		old[i], new[i] = "old "+strings.Repeat("x", i%7), "new "+strings.Repeat("y", i%5)
	}
	d := Diff(old, new)
	check(t, old, new, d)
	if edits(d) != 10000 {
		t.Fatalf("%d edits", edits(d))
	}
}
