package dag

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"
)

// Loader loads a DAG folder again and again, decoding only the files that changed since the
// last call. A file whose size and modification time are unchanged is not read; one that was
// touched but holds the same bytes (same SHA-256) is not decoded. Validation runs on every
// call, since it depends on the pools, which may have changed. An unchanged file gives back the
// same *DAG as before, so what is memoized on it (Order, Weights) is computed once per
// version of the file. The zero Loader is ready to use; a Loader is safe for concurrent use.
type Loader struct {
	mu    sync.Mutex
	files map[string]*cachedFile
	// now is the clock that tells a recent modification time apart; nil means time.Now.
	now func() time.Time
}

// cachedFile is one file's decoded result, before validation against the pools.
type cachedFile struct {
	size  int64
	mtime time.Time
	sum   [sha256.Size]byte
	dag   *DAG           // nil when the file could not be decoded at all
	errs  []*ImportError // decode errors
}

// racyWindow is how close to now a modification time must be for the file to be read and
// hashed even though its size and time match: a write within the file system's timestamp
// granularity of the previous one may keep both.
const racyWindow = 2 * time.Second

// bigFile is the size past which a decode is followed by a collection that returns the memory:
// the parser's tokens and tree take about a hundred times the file's size, all garbage once
// the DAG is built, and without it the run that follows grows the heap on top of them (a
// 3.7 MB file of 100,000 tasks leaves about 400 MB).
const bigFile = 1 << 20

// ready makes the cache usable and returns the clock; l.mu is held.
func (l *Loader) ready() func() time.Time {
	if l.files == nil {
		l.files = map[string]*cachedFile{}
	}
	if l.now != nil {
		return l.now
	}
	return time.Now
}

// LoadDir is [LoadDir] with the decoding of unchanged files reused from earlier calls.
func (l *Loader) LoadDir(dir string, opts LoadOptions) ([]*DAG, []*ImportError) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.ready()
	seen := map[string]bool{}
	dags, errs := loadDir(dir, func(path string) (*DAG, []*ImportError) {
		seen[path] = true
		d, derrs := l.decoded(path, now())
		return validated(d, derrs, opts)
	})
	for path := range l.files {
		if !seen[path] {
			delete(l.files, path) // removed, or no longer a DAG file
		}
	}
	return dags, errs
}

// LoadFiles is LoadDir over the listed files, in the order given (`poolflow dags validate
// FILE...`): the same decoding, validation and duplicate-id check as a folder gets.
func (l *Loader) LoadFiles(paths []string, opts LoadOptions) ([]*DAG, []*ImportError) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.ready()
	return loadPaths(paths, func(path string) (*DAG, []*ImportError) {
		d, derrs := l.decoded(path, now())
		return validated(d, derrs, opts)
	})
}

// decoded returns the decode result of path, from the cache when the file is unchanged.
func (l *Loader) decoded(path string, now time.Time) (*DAG, []*ImportError) {
	info, err := os.Stat(path)
	if err != nil {
		delete(l.files, path)
		return nil, []*ImportError{{File: path, Msg: fmt.Sprintf("read file: %v", err)}}
	}
	if !info.Mode().IsRegular() {
		// A FIFO or a device named *.yaml would block the read forever (and the daemon's
		// watcher with it).
		delete(l.files, path)
		return nil, []*ImportError{{File: path, Msg: fmt.Sprintf("read file: not a regular file (%s)", info.Mode().Type())}}
	}
	c := l.files[path]
	if c != nil && c.size == info.Size() && c.mtime.Equal(info.ModTime()) && now.Sub(info.ModTime()) > racyWindow {
		return c.dag, c.errs
	}
	data, err := os.ReadFile(path)
	if err != nil {
		delete(l.files, path)
		return nil, []*ImportError{{File: path, Msg: fmt.Sprintf("read file: %v", err)}}
	}
	sum := sha256.Sum256(data)
	if c != nil && bytes.Equal(c.sum[:], sum[:]) {
		c.size, c.mtime = info.Size(), info.ModTime()
		return c.dag, c.errs
	}
	d, derrs := decode(path, data)
	if d != nil && len(derrs) == 0 {
		d.shed(data)
	}
	if len(data) >= bigFile {
		debug.FreeOSMemory()
	}
	l.files[path] = &cachedFile{size: info.Size(), mtime: info.ModTime(), sum: sum, dag: d, errs: derrs}
	return d, derrs
}

// validated runs the checks that depend on opts on a decoded DAG and returns it when nothing
// at all is wrong, as Parse does. The decode errors are shared with the cache and not changed.
func validated(d *DAG, derrs []*ImportError, opts LoadOptions) (*DAG, []*ImportError) {
	errs := append([]*ImportError(nil), derrs...)
	if d != nil {
		errs = append(errs, validate(d, opts)...)
	}
	if len(errs) > 0 {
		return nil, finishErrors(errs)
	}
	return d, nil
}

// Len is the number of files whose decoding the Loader keeps.
func (l *Loader) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.files)
}
