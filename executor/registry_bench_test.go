package executor

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/store"
)

// benchRegistry is a registry over n DAG files of three tasks each, loaded once.
func benchRegistry(b *testing.B, n int) *registry {
	b.Helper()
	dir := b.TempDir()
	for i := range n {
		body := fmt.Sprintf("tasks:\n  - {id: a, bash: 'true', pool_requirements: {sp: 1}}\n"+
			"  - {id: b, depends_on: [a], bash: 'true', pool_requirements: {fp: %d}}\n  - {id: c, depends_on: [a, b], bash: 'true'}\n", 1+i%2)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("d%05d.yaml", i)), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cfg, err := config.Parse("poolflow.yaml", []byte("pools:\n  fp: 2\n"))
	if err != nil {
		b.Fatal(err)
	}
	r := newRegistry(dir, nil, nil, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	r.refresh(&refreshReq{stored: []store.Pool{storedPool("sp", 1)}, haveStored: true, force: true})
	if dags, errs := r.snapshot(); len(dags) != n || len(errs) != 0 {
		b.Fatalf("%d DAGs, %d errors", len(dags), len(errs))
	}
	return r
}

// BenchmarkRevalidate is the cost of a stored pool change: every DAG re-validated, no file
// decoded again.
func BenchmarkRevalidate(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			r := benchRegistry(b, n)
			b.ResetTimer()
			for i := range b.N {
				r.refresh(&refreshReq{stored: []store.Pool{storedPool("sp", 1+i%2)}, haveStored: true})
			}
		})
	}
}

// BenchmarkWatcherTick is the cost of one look when nothing changed: tick = poolflow.yaml only
// (file notifications watch the folder), full = the folder listed too (every 10 s, or every
// tick without notifications).
func BenchmarkWatcherTick(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		r := benchRegistry(b, n)
		for _, mode := range []string{"tick", "full"} {
			b.Run(fmt.Sprintf("files=%d/%s", n, mode), func(b *testing.B) {
				for range b.N {
					if r.refresh(&refreshReq{skipDir: mode == "tick"}) {
						b.Fatal("changed")
					}
				}
			})
		}
	}
}
