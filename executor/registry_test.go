package executor

import (
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/poolflow/poolflow/config"
)

// TestRegistryWaitsForWriters: a poolflow.yaml caught between its truncation and its write is
// not read (an empty file is a valid configuration without any file pool), and neither is a DAG
// file caught half written; what is read is the finished file.
func TestRegistryWaitsForWriters(t *testing.T) {
	t.Parallel()
	cfgPath, dagPath, r := registryOver(t, "pools:\n  fa: 1\n", "tasks:\n  - {id: t, bash: 'true', pool_requirements: {fa: 1}}\n", 0)
	r.reload(true)
	next := []byte("pools:\n  fa: 1\n  fb: 2\n")
	// slowWrite is a writer that stalls: it truncates the file (and says so), then writes half,
	// then the rest, a third of the settle window apart. The stalls are what is under test, not
	// a wait for anything.
	slowWrite := func(path string, data []byte, truncated chan<- struct{}) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0o644) // empty from here on
		close(truncated)
		if err != nil {
			t.Error(err)
			return
		}
		time.Sleep(settleWindow / 3)
		f.Write(data[:len(data)/2])
		time.Sleep(settleWindow / 3)
		f.Write(data[len(data)/2:])
		f.Close()
	}
	for _, write := range []func(chan<- struct{}){
		func(c chan<- struct{}) { slowWrite(cfgPath, next, c) },
		func(c chan<- struct{}) {
			slowWrite(dagPath, []byte("tasks:\n  - {id: t, bash: 'true', pool_requirements: {fb: 2}}\n  - {id: u, bash: 'true'}\n"), c)
		},
	} {
		truncated := make(chan struct{})
		go write(truncated)
		<-truncated // the truncation is done; the data is not
		r.refresh(&refreshReq{})
		if got := r.configStatus().SHA256; got != fmt.Sprintf("%x", sha256.Sum256(next)) {
			t.Fatalf("in force: %s, want the finished file's %x", got, sha256.Sum256(next))
		}
		if dags, errs := r.snapshot(); len(errs) != 0 || len(dags) != 1 {
			t.Fatalf("DAGs %v, errors %v", dags, errs)
		}
	}
	if d := r.get("a"); d == nil || len(d.Tasks) != 2 {
		t.Fatalf("a = %+v, want the finished file's two tasks", d)
	}
}

// TestRegistrySettledFilesAreReadAtOnce: at the first load, DAG files nobody wrote for a whole
// settle window are read without waiting (a daemon's or dags test's start); a file written after
// that, and any change of poolflow.yaml even with an old modification time (a writer stalled
// after truncating it), are looked at twice.
func TestRegistrySettledFilesAreReadAtOnce(t *testing.T) {
	t.Parallel()
	cfgPath, dagPath, r := registryOver(t, "pools:\n  fa: 1\n", "tasks:\n  - {id: t, bash: 'true'}\n", time.Second)
	waits := 0
	r.sleep = func(time.Duration) { waits++ }
	r.refresh(&refreshReq{})
	if waits != 0 {
		t.Fatalf("first load of settled files waited %d times, want 0", waits)
	}
	if d := r.get("a"); d == nil {
		t.Fatal("a not loaded")
	}
	os.WriteFile(dagPath, []byte("tasks:\n  - {id: t, bash: 'true'}\n  - {id: u, bash: 'true'}\n"), 0o644)
	r.refresh(&refreshReq{})
	if waits != 1 {
		t.Fatalf("a file written just now was looked at after %d waits, want 1", waits)
	}
	if d := r.get("a"); d == nil || len(d.Tasks) != 2 {
		t.Fatalf("a = %+v, want the new file's two tasks", d)
	}
	os.WriteFile(cfgPath, nil, 0o644) // truncated by a writer that stalls before writing
	old := time.Now().Add(-time.Second)
	os.Chtimes(cfgPath, old, old)
	r.refresh(&refreshReq{rereadFile: true})
	if waits != 2 {
		t.Fatalf("a changed poolflow.yaml was read after %d waits, want 2 (two looks)", waits)
	}
}

// registryOver writes a poolflow.yaml and one DAG file, a.yaml, modified age ago, and returns
// their paths and a registry over them, not loaded yet.
func registryOver(t *testing.T, cfgYAML, dagYAML string, age time.Duration) (cfgPath, dagPath string, r *registry) {
	t.Helper()
	dir := t.TempDir()
	cfgPath, dags := filepath.Join(dir, "poolflow.yaml"), filepath.Join(dir, "dags")
	os.MkdirAll(dags, 0o755)
	dagPath = filepath.Join(dags, "a.yaml")
	os.WriteFile(cfgPath, []byte(cfgYAML), 0o644)
	os.WriteFile(dagPath, []byte(dagYAML), 0o644)
	if age > 0 {
		old := time.Now().Add(-age)
		for _, p := range []string{cfgPath, dagPath} {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg, err := config.LoadChecked(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	return cfgPath, dagPath, newRegistry(dags, nil, nil, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
}
