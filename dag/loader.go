package dag

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// LoadFiles validates the listed files (`poolflow dags validate FILE...`) as LoadDir validates
// them in dir, the DAGs folder: dir's other files are loaded too, in the folder's order, so
// that a dag_id an earlier file defines is an error of the listed file, as in the folder. A
// listed file outside dir comes after the folder's. Only the listed files' DAGs and errors
// are returned. With dir "", the files are loaded on their own, in the order given.
func (l *Loader) LoadFiles(dir string, paths []string, opts LoadOptions) ([]*DAG, []*ImportError) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.ready()
	all, listed := paths, map[string]bool{}
	for _, p := range paths {
		listed[p] = true
	}
	if dir != "" {
		folder, err := dagFiles(dir)
		if err != nil {
			return nil, []*ImportError{err}
		}
		all = withListed(folder, paths)
	}
	dags, errs := loadPaths(all, func(path string) (*DAG, []*ImportError) {
		d, derrs := l.decoded(path, now())
		return validated(d, derrs, opts)
	})
	dags = slices.DeleteFunc(dags, func(d *DAG) bool { return !listed[d.File] })
	errs = slices.DeleteFunc(errs, func(e *ImportError) bool { return !listed[e.File] })
	return dags, errs
}

// withListed is the folder's files with each listed file in its place, under the name it was
// given, and the listed files outside the folder after them.
func withListed(folder, paths []string) []string {
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			return p
		}
		return a
	}
	given := map[string]string{}
	for _, p := range paths {
		given[abs(p)] = p
	}
	out := make([]string, 0, len(folder)+len(paths))
	for _, p := range folder {
		if g, ok := given[abs(p)]; ok {
			p = g
			delete(given, abs(p))
		}
		out = append(out, p)
	}
	for _, p := range paths {
		if _, outside := given[abs(p)]; outside {
			delete(given, abs(p))
			out = append(out, p)
		}
	}
	return out
}

// decoded returns the decode result of path, from the cache when the file is unchanged.
func (l *Loader) decoded(path string, now time.Time) (*DAG, []*ImportError) {
	info, err := os.Stat(path)
	if err != nil {
		delete(l.files, path)
		return nil, []*ImportError{{File: path, Msg: fmt.Sprintf("read file: %v", err)}}
	}
	if !info.Mode().IsRegular() {
		delete(l.files, path)
		return nil, []*ImportError{notRegular(path, info.Mode())}
	}
	c := l.files[path]
	if c != nil && c.size == info.Size() && c.mtime.Equal(info.ModTime()) && now.Sub(info.ModTime()) > racyWindow {
		return c.dag, c.errs
	}
	data, info, ierr := readFile(path)
	if ierr != nil {
		delete(l.files, path)
		return nil, []*ImportError{ierr}
	}
	sum := sha256.Sum256(data)
	if c != nil && bytes.Equal(c.sum[:], sum[:]) {
		c.size, c.mtime = info.Size(), info.ModTime()
		return c.dag, c.errs
	}
	d, derrs := decode(path, data)
	l.files[path] = &cachedFile{size: info.Size(), mtime: info.ModTime(), sum: sum, dag: d, errs: derrs}
	return d, derrs
}

// validated runs the checks that depend on opts on a decoded DAG and returns it when nothing
// at all is wrong, as Parse does. The decode errors are shared with the cache and not changed.
func validated(d *DAG, derrs []*ImportError, opts LoadOptions) (*DAG, []*ImportError) {
	errs := append([]*ImportError(nil), derrs...)
	if d != nil && len(d.Tasks) >= bigDAG {
		frugally(func() { errs = append(errs, validate(d, opts)...) })
	} else if d != nil {
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
