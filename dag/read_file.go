package dag

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"

	"github.com/poolflow/poolflow/internal/yamlfile"
)

// notRegular is the import error of a path that is not a regular file: a FIFO named x.yaml
// would block a read forever (and the daemon's watcher with it), a folder named x.yaml would be
// passed over in silence.
func notRegular(path string, mode fs.FileMode) *ImportError {
	kind := "a " + strings.TrimPrefix(mode.Type().String(), "-")
	switch {
	case mode.IsDir():
		kind = "a folder"
	case mode&fs.ModeNamedPipe != 0:
		kind = "a named pipe"
	case mode&fs.ModeSocket != 0:
		kind = "a socket"
	case mode&fs.ModeDevice != 0:
		kind = "a device"
	}
	return &ImportError{File: path, Msg: fmt.Sprintf("read file: not a regular file (%s)", kind)}
}

// readFile reads a DAG file of at most yamlfile.MaxFileBytes, never more: it is opened without
// blocking, refused unless the opened file is regular, and read with that bound, so that a
// file swapped for a FIFO after a stat, or one growing while read, costs nothing.
func readFile(path string) ([]byte, os.FileInfo, *ImportError) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, &ImportError{File: path, Msg: fmt.Sprintf("read file: %v", err)}
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, &ImportError{File: path, Msg: fmt.Sprintf("read file: %v", err)}
	}
	if !info.Mode().IsRegular() {
		return nil, nil, notRegular(path, info.Mode())
	}
	tooLarge := func(size int64) *ImportError {
		return &ImportError{File: path, DAGID: fileID(path), Msg: yamlfile.TooLarge(size).Msg}
	}
	if info.Size() > yamlfile.MaxFileBytes {
		return nil, nil, tooLarge(info.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, yamlfile.MaxFileBytes+1))
	if err != nil {
		return nil, nil, &ImportError{File: path, Msg: fmt.Sprintf("read file: %v", err)}
	}
	if len(data) > yamlfile.MaxFileBytes {
		return nil, nil, tooLarge(int64(len(data)))
	}
	return data, info, nil
}

// fileID is the DAG id a file gets without dag_id: its name without extension.
func fileID(path string) string {
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}

// bigFile is the size from which a file is decoded alone in the process, and its garbage
// returned before the next one: the parser's tree takes about 25 times the file's size, and
// four large files dropped in at once had their trees (goccy's, 2.5 times larger) live
// together on top of the loaded DAGs.
const bigFile = 1 << 20

// bigDecode makes the decodes of big files take turns: the daemon's loader, a request's
// validation and the mapped decode of a clean file that a check needs positions of.
var bigDecode sync.Mutex

// decode builds the DAG from the file. It returns the DAG, with defaults applied, even when
// some fields failed, so that the model checks can still report the other problems.
func decode(path string, data []byte) (*DAG, []*ImportError) { return decodeBig(path, data, false) }

// decodeBig is decode with the source map built or not (decodeFile), big files in turn.
func decodeBig(path string, data []byte, mapped bool) (*DAG, []*ImportError) {
	if len(data) < bigFile {
		return decodeFile(path, data, mapped)
	}
	bigDecode.Lock()
	defer bigDecode.Unlock()
	// The loaded DAGs and the tree are most of the heap here, and the tree becomes garbage a
	// task at a time.
	var d *DAG
	var errs []*ImportError
	frugally(func() { d, errs = decodeFile(path, data, mapped) })
	return d, errs
}

// bigDAG is the task count from which a DAG's checks run frugally: they make garbage of
// several times the DAG's size (dependency sets, compiled templates, the cycle check).
const bigDAG = 10_000

// frugal counts the frugal calls under way; the collector's percentage before the first is
// put back after the last, so calls that overlap (a decode, another DAG's checks) do not
// restore each other's setting.
var frugal struct {
	sync.Mutex
	n, old int
}

// frugally runs f with the collector working at a quarter of the live heap rather than the
// whole, so that f's garbage on top of the loaded DAGs does not double the peak, and returns
// the garbage to the system afterwards: without that, the work that follows (the next file, a
// run) grows the heap on top of it. With four 95,000-task files dropped in at once, the checks
// run at the default took serve's peak 50 MB above a validate's.
func frugally(f func()) {
	frugal.Lock()
	if frugal.n == 0 {
		frugal.old = debug.SetGCPercent(25)
	}
	frugal.n++
	frugal.Unlock()
	defer func() {
		frugal.Lock()
		if frugal.n--; frugal.n == 0 {
			debug.SetGCPercent(frugal.old)
		}
		frugal.Unlock()
		debug.FreeOSMemory()
	}()
	f()
}
