package main

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// watched is one open pidfd.
type watched struct {
	fd int
	p  *proc
}

// nowNS is CLOCK_REALTIME in nanoseconds, the clock bash's EPOCHREALTIME reads.
func nowNS() int64 { return time.Now().UnixNano() }

// pollEvery bounds how long a watched process can be dead before its pidfd is looked at: it is
// the width of the (alive, gone] window of a process that exits while watched.
const pollEvery = 3 // milliseconds

// watch opens a pidfd for every recorded process and polls them all.
//
// Why the bounds are sound:
//   - alive only ever takes instants at which the process certainly ran: its own line (it read
//     the clock itself), the instant before a pidfd_open whose identity check then succeeded,
//     and the instant before a poll that found the pidfd not readable. A process alive at two
//     instants was alive in between (a pidfd pins one process; a pid is checked against the
//     attempt's POOLFLOW_ tags right after opening it, so a reused pid is never mistaken).
//   - A process already gone when its line is read (short-lived, or the pid reused) keeps
//     alive = its line time and gets gone = the open time. That over-estimate only widens its
//     "maybe" span; the spans that count violations end at alive, so a late open can never
//     fake an over-capacity instant or a double run. What it can hide is an overlap shorter
//     than the tail latency plus the poll period (a few ms), which the report shows as the
//     uncertainty window.
func (r *recorder) watch(tailDone <-chan struct{}) {
	for {
		stopping := false
		select {
		case <-tailDone:
			stopping = true
		default:
		}
		r.mu.Lock()
		pend := r.pending
		r.pending = nil
		r.mu.Unlock()
		for _, p := range pend {
			r.open(p)
		}
		r.mu.Lock()
		fds := make([]unix.PollFd, len(r.watching))
		for i, w := range r.watching {
			fds[i] = unix.PollFd{Fd: int32(w.fd), Events: unix.POLLIN}
		}
		r.mu.Unlock()
		timeout := pollEvery
		if stopping {
			timeout = 0
		}
		t0 := nowNS()
		_, err := unix.Poll(fds, timeout)
		t1 := nowNS()
		if errors.Is(err, unix.EINTR) {
			continue
		}
		r.mu.Lock()
		kept := r.watching[:0]
		for i, w := range r.watching { // only this goroutine adds to watching
			if err == nil && fds[i].Revents != 0 {
				w.p.gone = t1
				r.windows = append(r.windows, window{t1 - w.p.alive, true})
				unix.Close(w.fd)
				continue
			}
			if err == nil {
				w.p.alive = max(w.p.alive, t0)
			}
			kept = append(kept, w)
		}
		r.watching = kept
		if stopping {
			for _, w := range r.watching {
				unix.Close(w.fd)
			}
			r.watching = nil
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
	}
}

// open starts watching p, or records it as gone when its pid no longer names it.
func (r *recorder) open(p *proc) {
	before := nowNS()
	fd, err := unix.PidfdOpen(p.pid, 0)
	same := err == nil && sameAttempt(p.pid, p.key)
	after := nowNS()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !same {
		if err == nil {
			unix.Close(fd)
		}
		p.gone = after
		r.windows = append(r.windows, window{after - p.alive, false})
		return
	}
	p.alive = max(p.alive, before)
	r.watching = append(r.watching, &watched{fd: fd, p: p})
}

// sameAttempt tells whether the live process pid carries the attempt's POOLFLOW_ tags. A zombie
// or an exiting process has an empty environ and is reported gone.
func sameAttempt(pid int, k attemptKey) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil || len(env) == 0 {
		return false
	}
	env = append(append([]byte{0}, env...), 0)
	for _, kv := range []string{"POOLFLOW_DAG_ID=" + k.dag, "POOLFLOW_RUN_ID=" + k.run, "POOLFLOW_TASK_ID=" + k.task,
		"POOLFLOW_TRY_NUMBER=" + strconv.Itoa(k.try)} {
		if !bytes.Contains(env, []byte("\x00"+kv+"\x00")) {
			return false
		}
	}
	return true
}
