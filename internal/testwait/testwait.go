// Package testwait holds what tests wait on instead of sleeping or polling: a named pipe a
// task's script writes to, the exit of a process, the growth of a log, the change of a file.
// Each wait blocks on the event itself (a read, a pidfd, a channel, inotify) until it comes or
// a limit passes. Only tests import it.
package testwait

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"
)

// Pipe is a named pipe (a FIFO) that a task's script writes lines to — `echo started >
// "$PIPE"` — and that the test reads them from: Line blocks until the task has written one.
// The other way, Send writes a line that a script waiting with `read _ < "$PIPE"` takes.
// A script that keeps it open (`exec 3>"$PIPE"; echo started >&3; ...`) lets Closed wait for
// every process of the attempt that inherited it to end.
type Pipe struct {
	Path string
	mu   sync.Mutex
	rw   *os.File // open for reading and writing: a writer's open never blocks, a read waits
	r    *bufio.Reader
	ro   *os.File // open for reading only, once Closed was called
}

// NewPipe makes a named pipe at path and opens it. Close it when the test ends.
func NewPipe(path string) (*Pipe, error) {
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		return nil, fmt.Errorf("mkfifo %s: %w", path, err)
	}
	// Also open for writing, so the pipe never reads as ended while no task has it open, and a
	// task's open for writing does not wait for a reader. A FIFO is pollable: reads take a
	// deadline.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return &Pipe{Path: path, rw: f, r: bufio.NewReader(f)}, nil
}

// Line waits up to limit for the next line a writer wrote, and returns it without its newline.
func (p *Pipe) Line(limit time.Duration) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rw == nil {
		return "", errors.New("testwait: pipe closed")
	}
	if err := p.rw.SetReadDeadline(time.Now().Add(limit)); err != nil {
		return "", err
	}
	line, err := p.r.ReadString('\n')
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return "", fmt.Errorf("no line on %s within %v", p.Path, limit)
		}
		return "", err
	}
	return strings.TrimSuffix(line, "\n"), nil
}

// Send writes a line into the pipe for a task's script to read (`read _ < "$PIPE"` waits for
// it): a gate the test opens. It never blocks on a line no one reads yet (the pipe holds 64 KiB).
func (p *Pipe) Send(line string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rw == nil {
		return errors.New("testwait: pipe closed")
	}
	_, err := p.rw.WriteString(line + "\n")
	return err
}

// Closed waits up to limit until no process holds the pipe open for writing any more: the
// processes that opened it have ended (their descriptors close when they exit). Call it once a
// Line showed that a writer holds it; no line can be read after it (it may be called again).
func (p *Pipe) Closed(limit time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ro == nil {
		if p.rw == nil {
			return errors.New("testwait: pipe closed")
		}
		// A reader that is no writer sees the end once the last writer is gone.
		r, err := os.OpenFile(p.Path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return err
		}
		p.rw.Close()
		p.rw, p.ro = nil, r
	}
	if err := p.ro.SetReadDeadline(time.Now().Add(limit)); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	for {
		_, err := p.ro.Read(buf)
		switch {
		case err == nil:
			continue // lines nobody read
		case errors.Is(err, os.ErrDeadlineExceeded):
			return fmt.Errorf("%s still held open for writing after %v", p.Path, limit)
		case errors.Is(err, io.EOF):
			return nil
		default:
			return err
		}
	}
}

// Close closes the test's end of the pipe.
func (p *Pipe) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var err error
	for _, f := range []*os.File{p.rw, p.ro} {
		if f != nil {
			err = errors.Join(err, f.Close())
		}
	}
	p.rw, p.ro = nil, nil
	return err
}

// Exit waits up to limit for process pid to end (a zombie has ended), watching a pidfd. It is
// nil when the process has ended or was gone already.
func Exit(pid int, limit time.Duration) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(limit)
	for {
		ms := int(time.Until(deadline) / time.Millisecond)
		if ms <= 0 {
			return fmt.Errorf("process %d still runs after %v", pid, limit)
		}
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("poll pidfd %d: %w", pid, err)
		}
		if n > 0 {
			return nil
		}
	}
}

// Until waits up to limit until cond holds, checking it at once and again each time the file
// at path changes (inotify): for what a process writes to a file that nothing else tells of.
// While the file does not exist yet, the nearest of its folders that does is watched instead,
// and the watch moves down as they appear.
func Until(path string, limit time.Duration, cond func() bool) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	watched := ""
	// follow watches the deepest existing one of path and its folders. It looks again after
	// each Add, so what was created before the watch began is not missed.
	follow := func() error {
		for {
			p := path
			for {
				if _, err := os.Stat(p); err == nil {
					break
				}
				if p = filepath.Dir(p); p == filepath.Dir(p) {
					break
				}
			}
			if p == watched {
				return nil
			}
			if err := w.Add(p); err != nil {
				return err
			}
			if watched != "" {
				_ = w.Remove(watched)
			}
			watched = p
		}
	}
	if err := follow(); err != nil {
		return err
	}
	timeout := time.After(limit)
	for !cond() {
		select {
		case <-w.Events:
			if err := follow(); err != nil {
				return err
			}
		case err := <-w.Errors:
			return err
		case <-timeout:
			return fmt.Errorf("%s did not change as awaited within %v", path, limit)
		}
	}
	return nil
}

// Log is an io.Writer for a logger that a test reads while another goroutine writes it, and
// waits on: Wait blocks until a text is in it, woken by each write.
type Log struct {
	mu   sync.Mutex
	b    bytes.Buffer
	grew chan struct{} // closed at the next write
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.grew != nil {
		close(l.grew)
		l.grew = nil
	}
	return l.b.Write(p)
}

// String is what was written so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Wait waits up to limit until the log holds s, and reports whether it does.
func (l *Log) Wait(s string, limit time.Duration) bool {
	timeout := time.After(limit)
	for {
		l.mu.Lock()
		found := strings.Contains(l.b.String(), s)
		if l.grew == nil {
			l.grew = make(chan struct{})
		}
		grew := l.grew
		l.mu.Unlock()
		if found {
			return true
		}
		select {
		case <-grew:
		case <-timeout:
			return false
		}
	}
}
