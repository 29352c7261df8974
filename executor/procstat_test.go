package executor

import (
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, line string
		want       procStat
		ok         bool
	}{
		{"plain", "4242 (sleep) S 1 4242 4242 0 -1 4194560 106 0 0 0 0 0 0 0 20 0 1 0 987654 8318976 195 18446744073709551615\n",
			procStat{state: 'S', ppid: 1, pgrp: 4242, sid: 4242, start: 987654}, true},
		{"name with spaces and parens", "7 (a) b (c)) Z 3 5 6 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12 0 0\n",
			procStat{state: 'Z', ppid: 3, pgrp: 5, sid: 6, start: 12}, true},
		{"no newline", "7 (x) R 2 3 4 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99",
			procStat{state: 'R', ppid: 2, pgrp: 3, sid: 4, start: 99}, true},
		{"too short", "7 (x) R 2 3 4\n", procStat{}, false},
		{"no name", "7 x R 2 3 4 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99\n", procStat{}, false},
		{"empty", "", procStat{}, false},
	} {
		got, ok := parseStat([]byte(tt.line))
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("%s: %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// readStat of this process agrees with itself and reports this process's parent, and does
// not allocate beyond the path.
func TestReadStatSelf(t *testing.T) {
	st, ok := readStat(os.Getpid())
	if !ok || st.ppid != os.Getppid() || st.state == 0 || st.state == 'Z' || st.start <= 0 {
		t.Fatalf("readStat(self) = %+v, %v", st, ok)
	}
	if _, ok := readStat(1 << 30); ok {
		t.Errorf("a pid that cannot exist was read")
	}
	if n := testing.AllocsPerRun(100, func() { readStat(os.Getpid()) }); n > 3 && !raceEnabled { // the path, its C copy and the pid
		t.Errorf("readStat allocates %v times", n)
	}
}
