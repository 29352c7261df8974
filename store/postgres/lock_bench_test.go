package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/postgres"
	"github.com/poolflow/poolflow/store/storetest"
)

// BenchmarkLocking compares the two ways a PostgreSQL admission pass can stay one correct
// transaction when several daemons pass at once: the installation's advisory lock under READ
// COMMITTED (what the driver does: passes queue behind each other), and SERIALIZABLE with a
// bounded retry (passes overlap; the server aborts one of two that read the claims the other
// wrote). Each of three daemons (its own connection) runs passes that read every pool's held
// slots, debit two pools for one entry and release an earlier one. It reports passes per second
// over all daemons, the mean time of a pass, the retries per pass and the share of passes that
// failed after maxRetries.
func BenchmarkLocking(b *testing.B) {
	for _, mode := range []string{"advisory", "serializable"} {
		b.Run(mode, func(b *testing.B) {
			const daemons = 3
			dsn := storetest.PostgresSchema(b, storetest.PostgresDSN(b))
			st, err := store.Open(context.Background(), dsn, store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			var run int64
			var ids []int64
			err = st.WithTx(context.Background(), func(tx store.Tx) error {
				r := &store.Run{DAGID: "bench", RunID: "r", RunType: "manual", State: "running"}
				if err := tx.InsertRun(r); err != nil {
					return err
				}
				run = r.PK
				for i := 0; i < daemons*(b.N+1); i++ {
					e := &store.Entry{Run: run, TaskID: fmt.Sprint(i), TryNumber: 1, Label: "b", State: "waiting"}
					if err := tx.InsertEntry(e); err != nil {
						return err
					}
					ids = append(ids, e.ID)
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			var schema string
			dbs := make([]*sql.DB, daemons)
			for i := range dbs {
				if dbs[i], err = sql.Open("pgx", dsn); err != nil {
					b.Fatal(err)
				}
				defer dbs[i].Close()
			}
			if err := dbs[0].QueryRow(`SELECT current_schema()`).Scan(&schema); err != nil {
				b.Fatal(err)
			}
			key := postgres.WriterLock(schema)
			var retries, gaveUp atomic.Int64
			var busy atomic.Int64 // nanoseconds spent in passes, over all daemons
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for d := 0; d < daemons; d++ {
				wg.Add(1)
				go func(d int) {
					defer wg.Done()
					mine := ids[d*(b.N+1) : (d+1)*(b.N+1)]
					for i := 1; i <= b.N; i++ {
						t0 := time.Now()
						for try := 0; ; try++ {
							err := lockPass(dbs[d], mode, key, mine[i], mine[i-1])
							if err == nil {
								break
							}
							var pe *pgconn.PgError
							if !errors.As(err, &pe) || pe.Code != "40001" {
								b.Error(err)
								return
							}
							if try == maxRetries {
								gaveUp.Add(1) // the pass fails: the loop would back off and pass again
								break
							}
							retries.Add(1)
						}
						busy.Add(int64(time.Since(t0)))
					}
				}(d)
			}
			wg.Wait()
			elapsed := time.Since(start)
			passes := float64(daemons * b.N)
			b.ReportMetric(passes/elapsed.Seconds(), "passes/s")
			b.ReportMetric(float64(busy.Load())/passes/1e3, "µs/pass")
			b.ReportMetric(float64(retries.Load())/passes, "retries/pass")
			b.ReportMetric(float64(gaveUp.Load())/passes, "failed/pass")
		})
	}
}

// maxRetries bounds the retries of a serialization failure.
const maxRetries = 10

func lockPass(db *sql.DB, mode string, key, admit, release int64) error {
	ctx := context.Background()
	opts := &sql.TxOptions{}
	if mode == "serializable" {
		opts.Isolation = sql.LevelSerializable
	}
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if mode == "advisory" {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, key); err != nil {
			return err
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT pool, SUM(slots)::bigint FROM claims GROUP BY pool`)
	if err != nil {
		return err
	}
	held := map[string]int64{}
	for rows.Next() {
		var p string
		var n int64
		if err := rows.Scan(&p, &n); err != nil {
			return err
		}
		held[p] = n
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if held["a"] < 1000 && held["b"] < 1000 {
		if _, err := tx.ExecContext(ctx, `INSERT INTO claims (entry, pool, slots, daemon, epoch, lease_until)
			VALUES ($1, 'a', 1, 'd', 1, 0), ($1, 'b', 1, 'd', 1, 0)`, admit); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM claims WHERE entry = $1`, release); err != nil {
		return err
	}
	return tx.Commit()
}
