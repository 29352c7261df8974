package runner

import (
	"bytes"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/poolflow/poolflow/internal/procfs"
)

// Orphans an attempt leaves behind. Every attempt leader runs in its own session and process
// group; killing the group at the attempt's end stops what stayed in it. A descendant that
// started its own session (setsid, a daemonizing script) left the group, so the daemon is a child
// subreaper (PR_SET_CHILD_SUBREAPER): such processes come to it when their parent dies instead
// of to init. At each attempt's end it looks only at its own children (one /proc read, not a
// scan of every process), kills those that carry the attempt's tag or belong to its group, and
// reaps the zombies of attempt processes. Children in the daemon's own session (what a Go task
// starts with os/exec) are never touched: os/exec waits for them.

const prSetChildSubreaper = 36

// becomeSubreaper makes this process the child subreaper of its descendants.
var becomeSubreaper = sync.OnceFunc(func() {
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
})

// leaders are the attempt leaders os/exec is waiting for, across every daemon of this process:
// the sweep must never reap one. spawnMu keeps a sweep from running between a leader's fork and
// its registration.
var leaders = struct {
	sync.Mutex
	m map[int]bool
}{m: map[int]bool{}}

var spawnMu sync.RWMutex

// startLeader starts cmd and registers its pid as a leader, both under spawnMu's read side.
func startLeader(start func() error, pid func() int) error {
	spawnMu.RLock()
	defer spawnMu.RUnlock()
	if err := start(); err != nil {
		return err
	}
	leaders.Lock()
	leaders.m[pid()] = true
	leaders.Unlock()
	return nil
}

// leaderDone forgets a leader once os/exec has waited for it.
func leaderDone(pid int) {
	leaders.Lock()
	delete(leaders.m, pid)
	leaders.Unlock()
}

// children lists this process's children attached to its main thread, where the kernel puts
// the orphans it reparents to a subreaper; all threads are read when full is set.
func children(full bool) []int {
	self := strconv.Itoa(os.Getpid())
	tids := []string{self}
	if full {
		if ents, err := os.ReadDir("/proc/self/task"); err == nil {
			tids = tids[:0]
			for _, e := range ents {
				tids = append(tids, e.Name())
			}
		}
	}
	var out []int
	var buf [4096]byte // an attempt's end reads this file: no allocation for its usual few pids
	for _, tid := range tids {
		f, err := os.Open("/proc/" + self + "/task/" + tid + "/children")
		if err != nil {
			continue
		}
		b := buf[:0]
		for {
			n, err := f.Read(buf[len(b):cap(buf)])
			b = buf[:len(b)+n]
			if err != nil || n == 0 || len(b) == cap(buf) {
				if len(b) == cap(buf) && err == nil { // more than fits: read the rest the slow way
					rest, _ := io.ReadAll(f)
					b = append(slices.Clip(b), rest...)
				}
				break
			}
		}
		f.Close()
		out = appendPids(out, b)
	}
	return out
}

// appendPids parses the space-separated pids of a children file.
func appendPids(out []int, b []byte) []int {
	pid, digits := 0, false
	for _, c := range b {
		if c >= '0' && c <= '9' {
			pid, digits = pid*10+int(c-'0'), true
			continue
		}
		if digits {
			out = append(out, pid)
		}
		pid, digits = 0, false
	}
	if digits {
		out = append(out, pid)
	}
	return out
}

// sweepOnce kills this process's children that belong to the attempt (its tag in their
// environment, its group or session) and reaps attempt processes that have ended. match nil
// matches every attempt process (shutdown). It reports whether a matching child was alive.
func sweepOnce(match func(pid int, st procfs.Stat) bool, full bool) bool {
	spawnMu.Lock()
	defer spawnMu.Unlock()
	alive := false
	for _, pid := range children(full) {
		leaders.Lock()
		leader := leaders.m[pid]
		leaders.Unlock()
		if leader {
			continue
		}
		st, ok := procfs.ReadStat(pid)
		if !ok || st.Sid == procfs.SelfSession() {
			continue
		}
		if st.State == 'Z' {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
			continue
		}
		if match != nil && !match(pid, st) {
			continue
		}
		alive = true
		if st.Pgrp > 1 && st.Pgrp != syscall.Getpgrp() {
			_ = syscall.Kill(-st.Pgrp, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return alive
}

// sweepAttempt stops what an ended attempt left: its group (already SIGKILLed by the caller)
// and the orphans that carry its tag, until none is alive or limit passes. It reports whether
// everything is gone; its claims are released only then.
func sweepAttempt(tag string, pgid int, limit time.Duration) bool {
	want := []byte("\x00" + envAttempt + "=" + tag + "\x00")
	match := func(pid int, st procfs.Stat) bool {
		if st.Pgrp == pgid || st.Sid == pgid {
			return true
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		return err == nil && bytes.Contains(append(append([]byte{0}, b...), 0), want)
	}
	deadline := time.Now().Add(limit)
	for wait := 500 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		orphans := sweepOnce(match, false)
		if !orphans && !groupLive(pgid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait) // a SIGKILLed process ends on its own time; nothing to wait on
	}
}
