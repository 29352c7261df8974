package procfs

import (
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, line string
		want       Stat
		ok         bool
	}{
		{"plain", "4242 (sleep) S 1 4242 4242 0 -1 4194560 106 0 0 0 0 0 0 0 20 0 1 0 987654 8318976 195 18446744073709551615\n",
			Stat{State: 'S', PPID: 1, Pgrp: 4242, Sid: 4242, Start: 987654}, true},
		{"name with spaces and parens", "7 (a) b (c)) Z 3 5 6 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12 0 0\n",
			Stat{State: 'Z', PPID: 3, Pgrp: 5, Sid: 6, Start: 12}, true},
		{"no newline", "7 (x) R 2 3 4 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99",
			Stat{State: 'R', PPID: 2, Pgrp: 3, Sid: 4, Start: 99}, true},
		{"too short", "7 (x) R 2 3 4\n", Stat{}, false},
		{"no name", "7 x R 2 3 4 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99\n", Stat{}, false},
		{"empty", "", Stat{}, false},
	} {
		got, ok := ParseStat([]byte(tt.line))
		if ok != tt.ok || ok && got != tt.want {
			t.Errorf("%s: %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// ReadStat of this process agrees with itself and reports this process's parent, and does
// not allocate beyond the path.
func TestReadStatSelf(t *testing.T) {
	st, ok := ReadStat(os.Getpid())
	if !ok || st.PPID != os.Getppid() || st.State == 0 || st.State == 'Z' || st.Start <= 0 {
		t.Fatalf("ReadStat(self) = %+v, %v", st, ok)
	}
	if _, ok := ReadStat(1 << 30); ok {
		t.Errorf("a pid that cannot exist was read")
	}
	if n := testing.AllocsPerRun(100, func() { ReadStat(os.Getpid()) }); n > 3 && !raceEnabled { // the path, its C copy and the pid
		t.Errorf("ReadStat allocates %v times", n)
	}
}
