package executor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/poolflow/poolflow/dag"
)

// registry holds the loaded DAGs: YAML files from the DAGs folder, re-read when they change,
// plus the DAGs registered from Go. A broken file is reported and leaves the others loaded.
// The folder is watched and parsed off the scheduler loop (watch), and only files that changed
// are decoded again (dag.Loader), so a large DAG file never stalls a pass.
type registry struct {
	dir    string
	goDAGs []*dag.DAG
	opts   func() dag.LoadOptions
	loader dag.Loader

	mu     sync.RWMutex
	loaded bool
	dags   map[string]*dag.DAG
	errs   []*dag.ImportError
	stamp  string
	gen    uint64 // incremented by every reload that changed what is loaded
}

func newRegistry(dir string, goDAGs []*dag.DAG, opts func() dag.LoadOptions) *registry {
	return &registry{dir: dir, goDAGs: goDAGs, opts: opts, dags: map[string]*dag.DAG{}}
}

// dirStamp summarizes the DAG files' names, sizes and modification times; polling it is cheap
// and, unlike inotify, sees editors that replace files by rename.
func dirStamp(dir string) string {
	if dir == "" {
		return ""
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "error:" + err.Error()
	}
	var b strings.Builder
	for _, e := range ents {
		n := e.Name()
		if !strings.HasSuffix(n, ".yaml") && !strings.HasSuffix(n, ".yml") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "%s:%d:%d;", n, info.Size(), info.ModTime().UnixNano())
	}
	return b.String()
}

// reload re-reads the DAGs when the folder changed (or force) and reports whether it did.
func (r *registry) reload(force bool) bool {
	stamp := dirStamp(r.dir)
	r.mu.RLock()
	same := stamp == r.stamp && !force
	r.mu.RUnlock()
	if same {
		return false
	}
	opts := r.opts()
	var dags []*dag.DAG
	var errs []*dag.ImportError
	if r.dir != "" {
		dags, errs = r.loader.LoadDir(r.dir, opts)
	}
	m := map[string]*dag.DAG{}
	for _, d := range dags {
		m[d.ID] = d
	}
	for _, d := range r.goDAGs {
		if verrs := dag.Validate(d, opts); len(verrs) > 0 {
			errs = append(errs, verrs...)
			continue
		}
		if _, dup := m[d.ID]; dup {
			errs = append(errs, &dag.ImportError{DAGID: d.ID, Msg: "dag id already defined by a YAML file"})
			continue
		}
		m[d.ID] = d
	}
	r.mu.Lock()
	r.dags, r.errs, r.stamp, r.loaded = m, errs, stamp, true
	r.gen++
	r.mu.Unlock()
	return true
}

// generation counts the reloads so far; the loop compares it with the one it last applied.
func (r *registry) generation() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.gen
}

// watch checks the folder every period until ctx ends, reloading it off the loop when it
// changed and then calling changed. It returns when ctx is done.
func (r *registry) watch(ctx context.Context, every time.Duration, changed func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if r.reload(false) {
				changed()
			}
		}
	}
}

// ensure loads the DAGs unless they are loaded already.
func (r *registry) ensure() {
	r.mu.RLock()
	loaded := r.loaded
	r.mu.RUnlock()
	if !loaded {
		r.reload(true)
	}
}

func (r *registry) get(id string) *dag.DAG {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.dags[id]
}

func (r *registry) snapshot() ([]*dag.DAG, []*dag.ImportError) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*dag.DAG, 0, len(r.dags))
	for _, d := range r.dags {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, append([]*dag.ImportError(nil), r.errs...)
}

// importErrors groups the current errors by file for the store (Airflow's import errors).
func (r *registry) importErrors() map[string]string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := map[string]string{}
	for _, e := range r.errs {
		key := e.File
		if key == "" {
			key = "go:" + e.DAGID
		}
		if prev, ok := out[key]; ok {
			out[key] = prev + "\n" + e.Error()
		} else {
			out[key] = e.Error()
		}
	}
	return out
}

// absDir makes the DAG folder absolute so the stored file paths do not depend on the cwd.
func absDir(dir string) string {
	if dir == "" {
		return ""
	}
	if a, err := filepath.Abs(dir); err == nil {
		return a
	}
	return dir
}
