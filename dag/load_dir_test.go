package dag

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestLoadDirKeepsLoadingPastBrokenFiles(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "loaddir")
	dags, errs := LoadDir(dir, testOptions())

	var ids []string
	for _, d := range dags {
		ids = append(ids, d.ID)
	}
	// Sorted by id, not by file; the duplicate alpha of c_duplicate.yaml, the broken file, the
	// dot file, the text file and the subfolder are not loaded.
	if want := []string{"alpha", "d", "zulu"}; !slices.Equal(ids, want) {
		t.Errorf("loaded %v, want %v", ids, want)
	}
	if a := dags[0]; a.File != filepath.Join(dir, "a.yaml") || a.Tasks[0].ID != "a" {
		t.Errorf("alpha comes from the first file by name: %s", a.File)
	}
	if !dags[1].IsJob {
		t.Errorf("d.yml is a job")
	}

	want := []string{
		filepath.Join(dir, "b_broken.yaml") + ":4:5: dag b_broken, task a: colour: unknown field",
		filepath.Join(dir, "c_duplicate.yaml") + ":1:9: dag alpha: dag_id: dag alpha is already defined in " + filepath.Join(dir, "a.yaml"),
	}
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n got %q\nwant %q", got, want)
	}
}

func TestLoadDirMissingFolder(t *testing.T) {
	t.Parallel()
	dags, errs := LoadDir(filepath.Join(t.TempDir(), "nope"), LoadOptions{})
	if len(dags) != 0 || len(errs) != 1 || errs[0].Line != 0 {
		t.Errorf("dags %v, errs %v", dags, errs)
	}
}

func TestLoadDirEmptyFolder(t *testing.T) {
	t.Parallel()
	dags, errs := LoadDir(t.TempDir(), LoadOptions{})
	if len(dags) != 0 || len(errs) != 0 {
		t.Errorf("dags %v, errs %v", dags, errs)
	}
}
