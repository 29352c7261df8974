package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/internal/bigdag"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// TestUIBench prints the UI's table of `make bench` (issue 21): for 1,000, 10,000 and 100,000
// runs in the store, and for the 500-task DAG, each page's server render time (the median of
// several requests, in process, store reads included) and its size, raw and gzipped; the pools
// page with 10,000 waiting entries; and what following a running 500-task run costs a second.
// It runs only with POOLFLOW_UI_BENCH set (POOLFLOW_UI_BENCH_RUNS=1000,10000 picks the sizes).
func TestUIBench(t *testing.T) {
	if os.Getenv("POOLFLOW_UI_BENCH") == "" {
		t.Skip("set POOLFLOW_UI_BENCH=1 (make bench) to print the UI's figures")
	}
	sizes := []int{1000, 10000, 100000}
	if s := os.Getenv("POOLFLOW_UI_BENCH_RUNS"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	fmt.Printf("\nUI: server render time (median wall and CPU of the process per request) and bytes per page\n")
	fmt.Printf("%-36s %10s %10s %10s %10s\n", "page", "time", "cpu", "raw", "gzip")
	row := func(name string, m measure) {
		fmt.Printf("%-36s %10s %10s %10s %10s\n", name, m.median.Round(10*time.Microsecond), m.cpu.Round(10*time.Microsecond),
			kb(m.raw), kb(m.gz))
	}
	var load syscall.Sysinfo_t
	if syscall.Sysinfo(&load) == nil {
		// Wall times on a shared machine follow its load; the CPU column does not.
		fmt.Printf("(load average %.1f on %d CPUs)\n", float64(load.Loads[0])/65536, runtime.NumCPU())
	}
	for _, n := range sizes {
		b := setup(t, setupOpts{dags: []*dag.DAG{bigdag.Warehouse("warehouse_500", []string{"true"})}})
		start := time.Now()
		fillLight(t, b, n)
		for i := range gridRuns {
			bigRun(t, b, "warehouse_500", fmt.Sprintf("w%02d", i))
		}
		quiet(t, b)
		fmt.Printf("-- %d runs of diamond (+25 of warehouse_500), filled in %s\n", n, time.Since(start).Round(time.Second))
		for _, p := range benchPages(n) {
			row(p.title, measurePage(t, b, p.path))
		}
	}

	poolsRows(t, row) // bench_pools_test.go

	// Following a running 500-task run in chromium: the bytes the server sent in 20 s while the
	// daemon ran the run's tasks (live_bytes_test.go).
	fmt.Printf("-- following a running 500-task run on its DAG page in chromium, 20 s\n")
	for _, p := range []struct{ name, path string }{{"live update (grouped)", "/ui/dags/warehouse_500"},
		{"live update (ungrouped)", "/ui/dags/warehouse_500?groups=off"}} {
		cost := followLiveRun(t, 20*time.Second, p.path)
		fmt.Printf("%-36s %s/s (%s)\n", p.name, kb(int(cost.perSecond())), cost)
	}
}

type measure struct {
	median, cpu time.Duration // wall and process CPU time per request, medians
	raw, gz     int
}

func kb(n int) string { return fmt.Sprintf("%.1f KB", float64(n)/1000) }

// measurePage requests path a few times, in process, and keeps the median time and the sizes.
func measurePage(t *testing.T, b *bundle, path string) measure {
	t.Helper()
	get := func(gzip bool) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if gzip {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		rec := httptest.NewRecorder()
		b.srv.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d", path, rec.Code)
		}
		return rec
	}
	m := measure{raw: get(false).Body.Len(), gz: get(true).Body.Len()}
	var times, cpus []time.Duration
	for range 9 {
		cpu0, start := cpuTime(), time.Now()
		get(true)
		times, cpus = append(times, time.Since(start)), append(cpus, cpuTime()-cpu0)
	}
	slices.Sort(times)
	slices.Sort(cpus)
	m.median, m.cpu = times[len(times)/2], cpus[len(cpus)/2]
	return m
}

// cpuTime is the CPU time the process has used, user and system (the daemon's idle loop
// included: a little noise, but no other process's).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fillLight writes n finished runs of diamond with their task instances, in big transactions:
// the pages read runs and task instances; fill (bench_test.go) adds attempts and pool history.
func fillLight(t testing.TB, b *bundle, n int) {
	t.Helper()
	now := time.Now().UTC()
	const batch = 250 // short transactions: the store bounds one at 5 s, which a loaded machine exceeds at 2,000 runs
	for lo := 0; lo < n; lo += batch {
		err := b.st.WithTx(context.Background(), func(tx store.Tx) error {
			for i := lo; i < min(lo+batch, n); i++ {
				at := now.Add(-time.Duration(n-i) * 3 * time.Second)
				run := store.Run{DAGID: "diamond", RunID: fmt.Sprintf("bench_%06d", i), RunType: vocab.RunManual, LogicalDate: at,
					State: vocab.RunSuccess, QueuedAt: at, StartDate: at, EndDate: at.Add(2 * time.Second)}
				if i%7 == 0 {
					run.State = vocab.RunFailed
				}
				if err := tx.InsertRun(&run); err != nil {
					return err
				}
				for k, task := range []string{"start", "left", "right", "join"} {
					s := at.Add(time.Duration(k) * 400 * time.Millisecond)
					if err := tx.InsertTI(&store.TaskInstance{Run: run.PK, TaskID: task, State: vocab.TaskSuccess, TryNumber: 1,
						StartDate: s, EndDate: s.Add(300 * time.Millisecond)}); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// quiet stops b's daemon once the store is filled: it would otherwise spend the measured time
// reading the 100,000 runs the fill wrote behind its back (a real daemon wrote them itself),
// and the process's CPU time, which is all the table can measure, would be its as much as the
// pages'. The pages read the store and the DAGs it loaded, which stay.
func quiet(t testing.TB, b *bundle) {
	t.Helper()
	if err := b.daemon.Stop(); err != nil {
		t.Fatal(err)
	}
}

// queue writes n open runs of dagID, each with its task scheduled and an entry waiting for db.
func queue(t testing.TB, b *bundle, dagID string, n int) {
	t.Helper()
	now := time.Now().UTC()
	err := b.st.WithTx(context.Background(), func(tx store.Tx) error {
		var es []*store.Entry
		for i := range n {
			at := now.Add(-time.Duration(n-i) * time.Second)
			run := store.Run{DAGID: dagID, RunID: fmt.Sprintf("q_%05d", i), RunType: vocab.RunManual, LogicalDate: at,
				State: vocab.RunRunning, QueuedAt: at, StartDate: at, Owner: "ui-test"}
			if err := tx.InsertRun(&run); err != nil {
				return err
			}
			if err := tx.InsertTI(&store.TaskInstance{Run: run.PK, TaskID: "load", State: vocab.TaskScheduled}); err != nil {
				return err
			}
			es = append(es, &store.Entry{Run: run.PK, TaskID: "load", TryNumber: 1, Label: dagID + ".load try 1", Priority: 1,
				Due: at, State: vocab.EntryWaiting, CreatedAt: at, Owner: "ui-test", Needs: []store.Requirement{{Pool: "db", Slots: 1},
					{Pool: "_global", Slots: 1, Implicit: true, Capacity: 8}}})
		}
		return tx.InsertEntries(es)
	})
	if err != nil {
		t.Fatal(err)
	}
}
