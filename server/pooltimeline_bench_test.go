package server

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// BenchmarkPoolTimeline: a pool's week read from a history of n admissions spread over it
// (each held 10 minutes, so about n/1000 held at once), and who held the slots at an instant
// in its middle; it reports the answer's size, plain and gzipped.
func BenchmarkPoolTimeline(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			bd := setup(b, setupOpts{noStop: true})
			// The daemon's passes would take this made-up history for its own work (a run
			// without task instances): the store alone answers.
			if err := bd.daemon.Stop(); err != nil {
				b.Fatal(err)
			}
			end := time.Now().UTC().Truncate(time.Minute)
			from := end.Add(-7 * 24 * time.Hour)
			must := func(err error) {
				if err != nil {
					b.Fatal(err)
				}
			}
			var run int64
			must(bd.st.WithTx(context.Background(), func(tx store.Tx) error {
				r := &store.Run{DAGID: "held", RunID: "bench", RunType: vocab.RunManual, LogicalDate: from, State: vocab.RunRunning, QueuedAt: from}
				err := tx.InsertRun(r)
				run = r.PK
				return err
			}))
			// In transactions of 500: a store transaction has a time budget.
			for lo := 0; lo < n; lo += 500 {
				must(bd.st.WithTx(context.Background(), func(tx store.Tx) error {
					for i := lo; i < min(lo+500, n); i++ {
						at := from.Add(time.Duration(i) * (7 * 24 * time.Hour / time.Duration(n)))
						e := &store.Entry{Run: run, TaskID: "t" + strconv.Itoa(i), TryNumber: 1, Label: "bench", Priority: 1, Due: at,
							State: vocab.EntryWaiting, CreatedAt: at, Needs: []store.Requirement{{Pool: "db", Slots: 1}}}
						if err := tx.InsertEntry(e); err != nil {
							return err
						}
						if err := tx.Admit(e, "bench", 1, at, at.Add(time.Hour)); err != nil {
							return err
						}
						if _, err := tx.ReleaseHeld(e.ID, "bench", 1, at.Add(10*time.Minute)); err != nil {
							return err
						}
					}
					return nil
				}))
			}
			week, _ := TimelineWindowNamed("week")
			ctx := context.Background()
			var tl PoolTimelineJSON
			b.Run("week", func(b *testing.B) {
				defer cpuPerOp(b)()
				for b.Loop() {
					var err error
					if tl, err = bd.srv.PoolTimeline(ctx, "db", week, end); err != nil {
						b.Fatal(err)
					}
				}
				plain, zipped := sizes(b, tl)
				b.ReportMetric(float64(plain), "bytes")
				b.ReportMetric(float64(zipped), "gzip-bytes")
			})
			b.Run("holders", func(b *testing.B) {
				var hs PoolHoldersJSON
				defer cpuPerOp(b)()
				for b.Loop() {
					var err error
					if hs, err = bd.srv.PoolHoldersAt(ctx, "db", from.Add(84*time.Hour)); err != nil {
						b.Fatal(err)
					}
				}
				if len(hs.Holders) == 0 {
					b.Fatal("nobody held db in the middle of the week")
				}
				b.ReportMetric(float64(len(hs.Holders)), "holders")
			})
		})
	}
}

// cpuPerOp reports the process's CPU time (user and system) per operation from here to the
// call of what it returns: on a shared machine wall time says more about the neighbours.
func cpuPerOp(b *testing.B) func() {
	var r0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	return func() {
		var r1 syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
		cpu := time.Duration(r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano())
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
	}
}

func sizes(b *testing.B, v any) (plain, zipped int) {
	data, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	cw := &countWriter{}
	zw := gzip.NewWriter(cw)
	_, _ = zw.Write(data)
	_ = zw.Close()
	return len(data), cw.n
}

type countWriter struct{ n int }

func (c *countWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)

// benchSizes are the history sizes of BenchmarkPoolTimeline; POOLFLOW_BENCH_SIZES (n,n,…)
// picks others.
func benchSizes() []int {
	v := os.Getenv("POOLFLOW_BENCH_SIZES")
	if v == "" {
		return []int{1000, 10000, 50000, 500000}
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil {
			out = append(out, n)
		}
	}
	return out
}
