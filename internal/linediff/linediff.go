// Package linediff compares two texts line by line (the UI's diff of two versions of a DAG,
// §12): Myers' O(ND) algorithm over the lines between the common prefix and suffix, bounded so
// that two texts with little in common cost no more than a bounded amount of time and memory.
// Past the bound the differing middle is reported as removed, then added: still a correct
// diff, not a minimal one.
//
// It is written here rather than taken from a library: what exists is either unmaintained
// (pmezard/go-difflib, archived hexops/gotextdiff) or character-based (sergi/go-diff), and the
// algorithm is short.
package linediff

import "strings"

// Kind says what a line of a diff is.
type Kind int8

const (
	Same    Kind = iota // in both texts
	Removed             // in the old text only
	Added               // in the new text only
)

// Line is one line of a diff: its text and its number in the old and the new text (from 1; 0
// where it is not in that text).
type Line struct {
	Kind     Kind
	Text     string
	Old, New int
}

// MaxEdits bounds the edits the algorithm looks for (its time is O((N+M)·D) and its memory
// O(D²) for D edits): past it, the differing middle is reported whole.
const MaxEdits = 1000

// Lines splits a text into lines without their ending newline; a final newline ends the last
// line rather than starting an empty one.
func Lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// Diff compares old and new line by line.
func Diff(old, new []string) []Line {
	// Lines as numbers, so comparing two is comparing two ints.
	ids := map[string]int{}
	intern := func(ls []string) []int {
		out := make([]int, len(ls))
		for i, l := range ls {
			id, ok := ids[l]
			if !ok {
				id = len(ids)
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	a, b := intern(old), intern(new)
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	out := make([]Line, 0, max(len(a), len(b))+8)
	for i := range pre {
		out = append(out, Line{Same, old[i], i + 1, i + 1})
	}
	mid := myers(a[pre:len(a)-suf], b[pre:len(b)-suf])
	if mid == nil {
		mid = replaced(len(a)-pre-suf, len(b)-pre-suf)
	}
	for _, e := range mid {
		l := Line{Kind: e.kind}
		if e.kind != Added {
			l.Old, l.Text = pre+e.i+1, old[pre+e.i]
		}
		if e.kind != Removed {
			l.New, l.Text = pre+e.j+1, new[pre+e.j]
		}
		out = append(out, l)
	}
	for k := suf; k > 0; k-- {
		i, j := len(a)-k, len(b)-k
		out = append(out, Line{Same, old[i], i + 1, j + 1})
	}
	return out
}

// edit is one step of the middle: a line of a (i), of b (j), or of both.
type edit struct {
	kind Kind
	i, j int
}

// replaced reports n lines of a removed, then m lines of b added.
func replaced(n, m int) []edit {
	out := make([]edit, 0, n+m)
	for i := range n {
		out = append(out, edit{Removed, i, 0})
	}
	for j := range m {
		out = append(out, edit{Added, 0, j})
	}
	return out
}

// myers is Myers' greedy algorithm ("An O(ND) Difference Algorithm and Its Variations", 1986)
// with the frontier of each round kept for the walk back; nil past MaxEdits.
func myers(a, b []int) []edit {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return replaced(n, m)
	}
	limit := min(n+m, MaxEdits)
	off := limit + 1
	v := make([]int, 2*limit+3)
	var trace [][]int
	for d := 0; d <= limit; d++ {
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...)) // v before round d, k in [-d-1, d+1]
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || k != d && v[off+k-1] < v[off+k+1] {
				x = v[off+k+1] // down: a line of b added
			} else {
				x = v[off+k-1] + 1 // right: a line of a removed
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				return walkBack(trace, a, b, d, k)
			}
		}
	}
	return nil
}

// walkBack follows the rounds' frontiers from the end (round d, diagonal k) to the start and
// returns the edits in order.
func walkBack(trace [][]int, a, b []int, d, k int) []edit {
	x, y := len(a), len(b)
	var rev []edit
	for ; d > 0; d-- {
		prev := trace[d] // v before round d: the frontier of round d-1
		at := func(k int) int { return prev[k+d+1] }
		var pk int
		if k == -d || k != d && at(k-1) < at(k+1) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		start := px // where the snake of round d began: after the move down, or right
		if pk == k-1 {
			start = px + 1
		}
		for x > start {
			x, y = x-1, y-1
			rev = append(rev, edit{Same, x, y})
		}
		if pk == k+1 {
			y--
			rev = append(rev, edit{Added, x, y})
		} else {
			x--
			rev = append(rev, edit{Removed, x, y})
		}
		k = pk
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		rev = append(rev, edit{Same, x, y})
	}
	out := make([]edit, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}
	return out
}
