package dag

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestHostileEntriesAreImportErrors (issue 25): a FIFO named x.yaml blocked `dags validate`
// for good, and a folder named x.yaml was passed over in silence. Both are import errors, from
// LoadDir, the daemon's Loader and LoadFiles alike, and the other files load.
func TestHostileEntriesAreImportErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ok.yaml"), "tasks:\n  - {id: a, bash: x}\n", time.Unix(1_000_000, 0))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "folder.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join(dir, "fifo.yaml") + ": read file: not a regular file (a named pipe)",
		filepath.Join(dir, "folder.yaml") + ": read file: not a regular file (a folder)",
	}
	l := &Loader{now: func() time.Time { return time.Unix(2_000_000, 0) }}
	loads := map[string]func() ([]*DAG, []*ImportError){
		"LoadDir":        func() ([]*DAG, []*ImportError) { return LoadDir(dir, LoadOptions{}) },
		"Loader.LoadDir": func() ([]*DAG, []*ImportError) { return l.LoadDir(dir, LoadOptions{}) },
		"LoadFiles": func() ([]*DAG, []*ImportError) {
			return l.LoadFiles(dir, []string{filepath.Join(dir, "fifo.yaml"), filepath.Join(dir, "folder.yaml")}, LoadOptions{})
		},
	}
	for name, load := range loads {
		done := make(chan struct{})
		var dags []*DAG
		var errs []*ImportError
		go func() {
			defer close(done)
			dags, errs = load()
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s blocks", name)
		}
		if got := slices.Collect(func(yield func(string) bool) {
			for _, e := range errs {
				yield(e.Error())
			}
		}); !slices.Equal(got, want) {
			t.Errorf("%s: errors\n%q\nwant\n%q", name, got, want)
		}
		wantDAGs := 1 // ok.yaml
		if name == "LoadFiles" {
			wantDAGs = 0 // only the hostile entries are listed
		}
		if len(dags) != wantDAGs {
			t.Errorf("%s: %d DAGs, want %d", name, len(dags), wantDAGs)
		}
	}
}

// TestReadFileBoundsTheRead (issue 25): a DAG file is read with the size bound, not read whole
// and then measured. A sparse 1 GiB file used to be read into memory first.
func TestReadFileBoundsTheRead(t *testing.T) {
	// Not parallel: it measures the allocations of the whole process.
	dir := t.TempDir()
	path := filepath.Join(dir, "huge.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var errs []*ImportError
	cost := allocated(func() { _, errs = LoadDir(dir, LoadOptions{}) })
	want := path + ": dag huge: file too large: 1073741824 bytes, at most 8388608"
	if len(errs) != 1 || errs[0].Error() != want {
		t.Fatalf("errors:\n%s\nwant %s", errorLines(errs), want)
	}
	if cost > 1<<20 {
		t.Errorf("refusing a 1 GiB file allocated %d MB", cost>>20)
	}
}

// TestValidateFilesAgreesWithTheFolder (issue 25): `dags validate FILE` passed a file whose
// dag_id an earlier file of the DAGs folder defines, which the daemon reports. The listed
// files are checked in the folder's order; only their DAGs and errors come back.
func TestValidateFilesAgreesWithTheFolder(t *testing.T) {
	t.Parallel()
	dir, outside := t.TempDir(), t.TempDir()
	at := time.Unix(1_000_000, 0)
	writeFile(t, filepath.Join(dir, "a.yaml"), "dag_id: x\ntasks:\n  - {id: a, bash: x}\n", at)
	writeFile(t, filepath.Join(dir, "b.yaml"), "dag_id: x\ntasks:\n  - {id: b, bash: x}\n", at)
	writeFile(t, filepath.Join(dir, "c.yaml"), "dag_id: x\ntasks: []\n", at) // invalid: claims no id
	writeFile(t, filepath.Join(outside, "new.yaml"), "dag_id: x\ntasks:\n  - {id: n, bash: x}\n", at)
	writeFile(t, filepath.Join(outside, "y.yaml"), "dag_id: y\ntasks:\n  - {id: n, bash: x}\n", at)
	dup := func(file string) string {
		return file + ":1:9: dag x: dag_id: dag x is already defined in " + filepath.Join(dir, "a.yaml")
	}
	tests := []struct {
		name  string
		files []string
		dags  []string // their files
		errs  []string
	}{
		{"the first of the folder", []string{filepath.Join(dir, "a.yaml")}, []string{filepath.Join(dir, "a.yaml")}, nil},
		{"a later one", []string{filepath.Join(dir, "b.yaml")}, nil, []string{dup(filepath.Join(dir, "b.yaml"))}},
		{"spelled otherwise", []string{dir + "/./b.yaml"}, nil, []string{dup(dir + "/./b.yaml")}},
		{"outside the folder", []string{filepath.Join(outside, "new.yaml")}, nil, []string{dup(filepath.Join(outside, "new.yaml"))}},
		{"outside, its own id", []string{filepath.Join(outside, "y.yaml")}, []string{filepath.Join(outside, "y.yaml")}, nil},
	}
	l := &Loader{now: func() time.Time { return time.Unix(2_000_000, 0) }}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dags, errs := l.LoadFiles(dir, tt.files, LoadOptions{})
			var files, msgs []string
			for _, d := range dags {
				files = append(files, d.File)
			}
			for _, e := range errs {
				msgs = append(msgs, e.Error())
			}
			if !slices.Equal(files, tt.dags) || !slices.Equal(msgs, tt.errs) {
				t.Errorf("DAGs %q, errors %q; want %q, %q", files, msgs, tt.dags, tt.errs)
			}
		})
	}
}

// TestBigFilesTakeTurns (issue 25): four large files loaded at once (the daemon's loader and
// requests' validations) took the daemon from 26 to 913 MiB, their parser trees live together.
// Big files are decoded one at a time, each tree returned before the next: the peak of four
// at once stays near one file's decode plus the four DAGs.
func TestBigFilesTakeTurns(t *testing.T) {
	// Not parallel: it measures the heap of the whole process.
	dir := t.TempDir()
	var paths []string
	for i := range 4 {
		p := filepath.Join(dir, fmt.Sprintf("f%d.yaml", i))
		// 1.6 MB, read whole: an anchor keeps its task list from being parsed in pieces.
		data := genFile("chain", 30_000)
		if err := os.WriteFile(p, append([]byte(fmt.Sprintf("dag_id: f%d\nx-whole: &whole 1\n", i)), data...), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	one, _ := heapPeak(func() any { return loadEach(t, paths[:1]) })
	var four [4]any
	peak, live := heapPeak(func() any {
		var wg sync.WaitGroup
		for i, p := range paths {
			wg.Add(1)
			go func() {
				defer wg.Done()
				four[i] = loadEach(t, []string{p})
			}()
		}
		wg.Wait()
		return four
	})
	t.Logf("one file's load peaks at %d MiB; four at once at %d MiB, keeping %d MiB", one>>20, peak>>20, live>>20)
	if limit := one + live; peak > limit+limit/4 {
		t.Errorf("four files at once peak at %d MiB, over one file's load and the four DAGs (%d MiB)", peak>>20, limit>>20)
	}
}

func loadEach(t *testing.T, paths []string) []*DAG {
	dags, errs := (&Loader{}).LoadFiles("", paths, LoadOptions{})
	if len(errs) > 0 {
		t.Error(errs[0])
	}
	return dags
}
