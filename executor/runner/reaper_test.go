package runner

import (
	"slices"
	"testing"
)

func TestAppendPids(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]int{"": nil, "12 345 6\n": {12, 345, 6}, "7": {7}, "  8  9 ": {8, 9}} {
		if got := appendPids(nil, []byte(in)); !slices.Equal(got, want) {
			t.Errorf("appendPids(%q) = %v, want %v", in, got, want)
		}
	}
}
