package postgres_test

import (
	"testing"

	"github.com/poolflow/poolflow/store/postgres"
	"github.com/poolflow/poolflow/store/storetest"
)

// TestConformance runs the store suite on PostgreSQL: a schema of its own per test in the
// server of POOLFLOW_TEST_POSTGRES (skipped loudly without it, required in CI).
func TestConformance(t *testing.T) { storetest.Run(t, storetest.Postgres(t)) }

func TestRedact(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://u:secret@h:5432/db?sslmode=disable": "postgres://u@h:5432/db?sslmode=disable",
		"postgres://h/db?password=secret&search_path=x": "postgres://h/db?search_path=x",
		"host=h user=u password=secret dbname=db":       "host=h user=u dbname=db",
		"postgresql://u@h/db":                           "postgresql://u@h/db",
	} {
		if got := postgres.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// BenchmarkPass is the store half of one admission pass on PostgreSQL (advisory lock, NOTIFY).
func BenchmarkPass(b *testing.B) { storetest.BenchPass(b, storetest.Postgres(b)) }
