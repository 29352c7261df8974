package dag

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// LoadDir loads every *.yaml and *.yml file of dir (not its subfolders, not dot files), in file
// name order; a folder, FIFO or device named like a DAG file is an import error. A broken file does not stop the others; a dag_id already defined by an earlier
// file is an error of the later one, which is not loaded. The DAGs come back sorted by id. To
// load the same folder repeatedly, a [Loader] decodes only the files that changed.
func LoadDir(dir string, opts LoadOptions) ([]*DAG, []*ImportError) {
	return loadDir(dir, func(path string) (*DAG, []*ImportError) {
		data, _, ierr := readFile(path)
		if ierr != nil {
			return nil, []*ImportError{ierr}
		}
		return Parse(path, data, opts)
	})
}

// loadDir lists the DAG files of dir and loads each with load.
func loadDir(dir string, load func(path string) (*DAG, []*ImportError)) ([]*DAG, []*ImportError) {
	paths, err := dagFiles(dir)
	if err != nil {
		return nil, []*ImportError{err}
	}
	return loadPaths(paths, load)
}

// dagFiles lists the *.yaml and *.yml entries of dir in name order, whatever they are, but dot
// files (editors' backups and lock files).
func dagFiles(dir string) ([]string, *ImportError) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, &ImportError{File: dir, Msg: fmt.Sprintf("read dags folder: %v", err)}
	}
	var paths []string
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if strings.HasPrefix(e.Name(), ".") || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		paths = append(paths, filepath.Join(dir, e.Name()))
	}
	return paths, nil
}

// loadPaths loads each file with load, in the given order; a dag_id already defined by an
// earlier file is an error of the later one.
func loadPaths(paths []string, load func(path string) (*DAG, []*ImportError)) ([]*DAG, []*ImportError) {
	var (
		dags []*DAG
		errs []*ImportError
		from = map[string]string{} // dag id -> file that defined it
	)
	for _, path := range paths {
		d, ferrs := load(path)
		errs = append(errs, ferrs...)
		if d == nil {
			continue
		}
		if other, dup := from[d.ID]; dup {
			p := d.src.get().at(srcDAG, "dag_id")
			errs = append(errs, &ImportError{
				File: path, Line: p.line, Column: p.col, DAGID: d.ID, Field: "dag_id", Value: d.ID,
				Msg: fmt.Sprintf("dag %s is already defined in %s", d.ID, other),
			})
			continue
		}
		from[d.ID] = path
		dags = append(dags, d)
	}
	slices.SortFunc(dags, func(a, b *DAG) int { return cmp.Compare(a.ID, b.ID) })
	sortErrors(errs)
	return dags, errs
}
