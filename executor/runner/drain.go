package runner

import (
	"fmt"
	"io"
	"sync"
)

// drainBufs are the copy buffers of drain: an attempt's 32 KiB buffer is used again by the next
// instead of being allocated anew (32 MB for a 1,000-task run).
var drainBufs = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// drain copies an attempt's output pipe to its log until the pipe closes. Writing the log must
// never block the task: when a write fails (a full disk, say), drain keeps reading the pipe and
// drops the output, and once a write succeeds again it first writes one marker line saying how
// much was lost and why, on a line of its own: after output that stopped mid-line it begins
// with a newline. report hears the first error of each episode. It returns the bytes dropped in
// all.
func drain(dst io.Writer, src io.Reader, report func(error)) int64 {
	b := drainBufs.Get().(*[32 << 10]byte)
	defer drainBufs.Put(b)
	buf := b[:]
	var dropped, episode int64
	var cause error
	midLine := false // the last byte written to dst is not a newline
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			if cause != nil {
				// Space may be back: the marker goes first, or the chunk is dropped too.
				marker := fmt.Sprintf("poolflow: %d bytes of output dropped: %v\n", episode, cause)
				if midLine {
					marker = "\n" + marker
				}
				if w, err := io.WriteString(dst, marker); err == nil {
					cause, episode, midLine = nil, 0, false
				} else if w > 0 {
					midLine = marker[w-1] != '\n'
				}
			}
			lost := n
			if cause == nil {
				w, err := dst.Write(buf[:n])
				lost = n - w
				if w > 0 {
					midLine = buf[w-1] != '\n'
				}
				if err != nil {
					cause = err
					if report != nil {
						report(err)
					}
				}
			}
			if cause != nil {
				dropped += int64(lost)
				episode += int64(lost)
			}
		}
		if rerr != nil {
			return dropped
		}
	}
}
