// Package procfs reads what /proc says about a process on this host: its state, parent,
// process group, session and start time. The daemon's liveness checks (package owners) and the
// runner's sweeps of an attempt's processes both read it, on every attempt's end, so it reads
// into a buffer on the stack and parses in place.
package procfs

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// Stat is what /proc/<pid>/stat says about a process.
type Stat struct {
	State     byte  // R, S, D, Z, …
	PPID      int   // parent
	Pgrp, Sid int   // process group and session
	Start     int64 // start time in clock ticks after boot
}

// ReadStat parses /proc/<pid>/stat; ok is false when the process is gone.
func ReadStat(pid int) (Stat, bool) {
	var buf [1024]byte
	b, ok := readSmall("/proc/"+strconv.Itoa(pid)+"/stat", buf[:])
	if !ok {
		return Stat{}, false
	}
	return ParseStat(b)
}

// readSmall reads a file that fits in buf (one read of a /proc file returns it whole), or
// reads it with os.ReadFile when it does not.
func readSmall(path string, buf []byte) ([]byte, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	n, err := syscall.Read(fd, buf)
	syscall.Close(fd)
	if err != nil || n < 0 {
		return nil, false
	}
	if n == len(buf) {
		b, err := os.ReadFile(path)
		return b, err == nil
	}
	return buf[:n], true
}

// ParseStat reads the fields of a /proc/<pid>/stat line. The command name may hold spaces and
// parentheses: the fields start after the last ')'.
func ParseStat(b []byte) (Stat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return Stat{}, false
	}
	var st Stat
	field := 0 // field 0 is the state, after the command name
	for rest := b[i+2:]; len(rest) > 0 && field <= 19; field++ {
		f := rest
		if j := bytes.IndexAny(rest, " \n"); j >= 0 {
			f, rest = rest[:j], bytes.TrimLeft(rest[j:], " \n")
		} else {
			rest = nil
		}
		if len(f) == 0 {
			return Stat{}, false
		}
		switch field {
		case 0:
			st.State = f[0]
		case 1:
			st.PPID = int(atoiBytes(f))
		case 2:
			st.Pgrp = int(atoiBytes(f))
		case 3:
			st.Sid = int(atoiBytes(f))
		case 19:
			st.Start = atoiBytes(f)
		}
	}
	return st, field > 19
}

// atoiBytes is strconv.ParseInt of a decimal field, without a string; a malformed one is 0.
// Negative values (a stat field may be -1) are read.
func atoiBytes(f []byte) int64 {
	neg := len(f) > 0 && f[0] == '-'
	if neg {
		f = f[1:]
	}
	var n int64
	for _, c := range f {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		return -n
	}
	return n
}

// SelfStart is this process's start time, recorded on its owner row so a reused pid is not
// taken for it.
var SelfStart = sync.OnceValue(func() int64 {
	st, _ := ReadStat(os.Getpid())
	return st.Start
})

// SelfSession is this process's session.
var SelfSession = sync.OnceValue(func() int {
	st, _ := ReadStat(os.Getpid())
	return st.Sid
})

// Alive reports whether pid runs and, when start is known, is the process that started then
// (not a later one that reused the pid). A zombie is dead.
func Alive(pid int, start int64) bool {
	if pid <= 0 {
		return false
	}
	st, ok := ReadStat(pid)
	if !ok || st.State == 'Z' || st.State == 'X' {
		return false
	}
	return start == 0 || st.Start == start
}
