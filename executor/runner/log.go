package runner

import (
	"os"
	"path/filepath"
	"sync"
)

// attemptLog is one attempt's log file, <state>/logs/<dag>/<run>/<task>/<try>.log. It is
// created at the attempt's first output (or at once for a replay, whose first line marks it), so
// an attempt that prints nothing costs no files: on a slow file system the folder and file were
// most of a short task's overhead. Output is appended as it arrives, so the log can be read while
// the attempt runs.
type attemptLog struct {
	path   string
	replay bool

	mu sync.Mutex
	f  *os.File
}

// newAttemptLog prepares an attempt's log. A replay opens it at once to write its marker line;
// a log that cannot be opened is tried again at the next write (a full disk may free up), and
// the attempt runs on meanwhile.
func newAttemptLog(path string, replay bool) *attemptLog {
	l := &attemptLog{path: path, replay: replay}
	if replay {
		l.mu.Lock()
		defer l.mu.Unlock()
		_ = l.open()
	}
	return l
}

// open creates the file; mu is held.
func (l *attemptLog) open() error {
	if l.f != nil {
		return nil
	}
	dir := filepath.Dir(l.path)
	// Mkdir first: usually only the task's folder is missing, and MkdirAll would stat every level.
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	marker := "--- replay ---\n"
	if l.replay && endsMidLine(l.path) {
		marker = "\n" + marker // the killed attempt stopped in the middle of a line
	}
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	l.f = f
	if l.replay {
		_, _ = f.WriteString(marker)
	}
	return nil
}

// endsMidLine reports whether the file at path ends with a byte other than a newline; an empty
// or missing file does not.
func endsMidLine(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.Size() == 0 {
		return false
	}
	var last [1]byte
	_, err = f.ReadAt(last[:], info.Size()-1)
	return err == nil && last[0] != '\n'
}

func (l *attemptLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.open(); err != nil {
		return 0, err
	}
	return l.f.Write(p)
}

// Close closes the file if the attempt wrote one.
func (l *attemptLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}
