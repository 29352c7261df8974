package dag

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// loaderSetup is a DAG folder with one file and a Loader whose clock is far past every
// modification time, so that unchanged files are not read.
func loaderSetup(t *testing.T) (dir, file string, l *Loader) {
	t.Helper()
	dir = t.TempDir()
	file = filepath.Join(dir, "a.yaml")
	writeFile(t, file, "tasks:\n  - id: x\n    bash: echo x\n    pool: db\n", time.Unix(1_000_000, 0))
	l = &Loader{now: func() time.Time { return time.Unix(2_000_000, 0) }}
	return dir, file, l
}

func writeFile(t *testing.T, path, content string, mtime time.Time) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func loadOne(t *testing.T, l *Loader, dir string, opts LoadOptions) *DAG {
	t.Helper()
	dags, errs := l.LoadDir(dir, opts)
	if len(errs) > 0 || len(dags) != 1 {
		t.Fatalf("LoadDir: %d dags, errors:\n%s", len(dags), errorLines(errs))
	}
	return dags[0]
}

func TestLoaderReusesUnchangedFiles(t *testing.T) {
	t.Parallel()
	dir, file, l := loaderSetup(t)
	first := loadOne(t, l, dir, testOptions())
	if again := loadOne(t, l, dir, testOptions()); again != first {
		t.Errorf("an unchanged file was decoded again")
	}
	// Touched, same bytes: read and hashed, not decoded.
	writeFile(t, file, "tasks:\n  - id: x\n    bash: echo x\n    pool: db\n", time.Unix(1_500_000, 0))
	if again := loadOne(t, l, dir, testOptions()); again != first {
		t.Errorf("a touched file with the same content was decoded again")
	}
	// Changed: decoded again.
	writeFile(t, file, "tasks:\n  - id: y\n    bash: echo y\n", time.Unix(1_600_000, 0))
	if changed := loadOne(t, l, dir, testOptions()); changed == first || changed.Tasks[0].ID != "y" {
		t.Errorf("a changed file was not decoded again: %v", changed.Tasks[0].ID)
	}
}

func TestLoaderValidatesAgainstCurrentPools(t *testing.T) {
	t.Parallel()
	dir, file, l := loaderSetup(t)
	none := LoadOptions{Pools: func(string) (int, bool) { return 0, false }}
	dags, errs := l.LoadDir(dir, none)
	if len(dags) != 0 || len(errs) != 1 || errs[0].Error() != file+`:4:11: dag a, task x: pool: unknown pool "db"` {
		t.Fatalf("without pool db: %d dags, errors:\n%s", len(dags), errorLines(errs))
	}
	d := loadOne(t, l, dir, testOptions())
	if again := loadOne(t, l, dir, testOptions()); again != d {
		t.Errorf("validation with the same pools decoded again")
	}
}

func TestLoaderRereadsRecentFiles(t *testing.T) {
	t.Parallel()
	dir, file, l := loaderSetup(t)
	mtime := time.Unix(1_000_000, 0)
	l.now = func() time.Time { return mtime.Add(time.Second) } // within the racy window
	loadOne(t, l, dir, testOptions())
	// Same size and time, other bytes: only a read sees it.
	writeFile(t, file, "tasks:\n  - id: z\n    bash: echo z\n    pool: db\n", mtime)
	if d := loadOne(t, l, dir, testOptions()); d.Tasks[0].ID != "z" {
		t.Errorf("a file rewritten within the timestamp granularity was not read: task %s", d.Tasks[0].ID)
	}
}

func TestLoaderForgetsRemovedFiles(t *testing.T) {
	t.Parallel()
	dir, file, l := loaderSetup(t)
	writeFile(t, filepath.Join(dir, "b.yaml"), "tasks: [{id: b, bash: echo}]\n", time.Unix(1_000_000, 0))
	if dags, errs := l.LoadDir(dir, testOptions()); len(dags) != 2 || len(errs) != 0 || l.Len() != 2 {
		t.Fatalf("%d dags, %d cached, errors:\n%s", len(dags), l.Len(), errorLines(errs))
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if d := loadOne(t, l, dir, testOptions()); d.ID != "b" || l.Len() != 1 {
		t.Errorf("loaded %s, %d cached after removing a.yaml", d.ID, l.Len())
	}
}

func TestLoaderMatchesLoadDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "loaddir")
	var l Loader
	for range 2 {
		dags, errs := l.LoadDir(dir, testOptions())
		wantDags, wantErrs := LoadDir(dir, testOptions())
		if errorLines(errs) != errorLines(wantErrs) || len(dags) != len(wantDags) {
			t.Fatalf("Loader: %d dags, errors:\n%s\nLoadDir: %d dags, errors:\n%s",
				len(dags), errorLines(errs), len(wantDags), errorLines(wantErrs))
		}
		for i := range dags {
			if dags[i].ID != wantDags[i].ID || dags[i].File != wantDags[i].File {
				t.Errorf("dag %d: %s from %s, want %s from %s", i, dags[i].ID, dags[i].File, wantDags[i].ID, wantDags[i].File)
			}
		}
	}
}
