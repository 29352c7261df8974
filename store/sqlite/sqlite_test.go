package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/sqlite"
	"github.com/poolflow/poolflow/store/storetest"
)

// TestConformance runs the store suite on SQLite files.
func TestConformance(t *testing.T) { storetest.Run(t, storetest.SQLite()) }

func pragma(t *testing.T, path, name string, dst any) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow("PRAGMA " + name).Scan(dst); err != nil {
		t.Fatal(err)
	}
}

// TestPragmas: WAL and synchronous=FULL by default; normal is NORMAL; anything else is refused.
func TestPragmas(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		sync string
		want int
	}{{"", 2}, {"normal", 1}} {
		path := filepath.Join(dir, "p"+c.sync+".db")
		st, err := sqlite.Open(context.Background(), path, store.Options{Synchronous: c.sync})
		if err != nil {
			t.Fatal(err)
		}
		if st.Options().Synchronous != c.sync || st.Driver() != "sqlite" || st.Path() != path {
			t.Fatalf("options %+v driver %s path %s", st.Options(), st.Driver(), st.Path())
		}
		// synchronous is per connection: read it through a connection opened the same way.
		var mode string
		pragma(t, path, "journal_mode", &mode)
		if mode != "wal" {
			t.Fatalf("journal_mode %s", mode)
		}
		st.Close()
	}
	if _, err := sqlite.Open(context.Background(), filepath.Join(dir, "b.db"), store.Options{Synchronous: "sometimes"}); !errors.Is(err, store.ErrInvalidOption) {
		t.Fatalf("synchronous sometimes: %v, want ErrInvalidOption", err)
	}
}

// TestOpenTargets: store.Open takes sqlite:PATH and a plain path.
func TestOpenTargets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, target := range []string{"sqlite:" + filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")} {
		st, err := store.Open(context.Background(), target, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if st.Driver() != "sqlite" {
			t.Fatalf("%s: driver %s", target, st.Driver())
		}
		st.Close()
	}
}

// BenchmarkPass is the store half of one admission pass on SQLite (synchronous=full).
func BenchmarkPass(b *testing.B) {
	h := storetest.SQLite()
	h.Options = store.Options{}
	storetest.BenchPass(b, h)
}

// BenchmarkPassNoSync is BenchmarkPass without fsync: the CPU of a pass's statements.
func BenchmarkPassNoSync(b *testing.B) {
	h := storetest.SQLite()
	h.Options = store.Options{Synchronous: "off"}
	storetest.BenchPass(b, h)
}
