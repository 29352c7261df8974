package e2e

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
)

// TestTwoDaemonsShareCapacity runs two daemons (two `dags test` processes) on one database file,
// admitting from the same pools at once: from the recorded start and end times, no pool ever
// had more holders' slots than its capacity.
func TestTwoDaemonsShareCapacity(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("dag_id: share\nmax_active_tasks: 100\ntasks:\n")
	reqs := []string{"{p: 1}", "{p: 1, q: 2}", "{q: 1}", "{p: 2}", "{q: 3}"}
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&b, "  - {id: t%02d, pool_requirements: %s, bash: 'sleep 0.05'}\n", i, reqs[i%len(reqs)])
	}
	p := newProject(t, "max_running: 32\npools:\n  p: 2\n  q:\n    slots: 3\n    ordering: strict\n", map[string]string{"share.yaml": b.String()})
	p.initStore(t) // creates the database before two processes race to migrate it
	var wg sync.WaitGroup
	errs := make([]error, 2)
	outs := make([]string, 2)
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := p.cmd("dags", "test", "share", "-o", "json")
			var out, errb bytes.Buffer
			c.Stdout, c.Stderr = &out, &errb
			errs[i] = c.Run()
			outs[i] = out.String() + errb.String()
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("daemon %d: %v\n%s", i, err, outs[i])
		}
	}
	st := p.open(t)
	runs, _, err := st.ListRuns(context.Background(), "share", 10, 0)
	if err != nil || len(runs) != 2 {
		t.Fatalf("runs: %v %v", runs, err)
	}
	var holds []hold
	for _, r := range runs {
		holds = append(holds, holdsOf(t, st, r)...)
	}
	checkCapacity(t, holds, map[string]int{"p": 2, "q": 3})
}

// hold is the interval during which an attempt held slots of its pools.
type hold struct {
	name       string
	start, end time.Time
	needs      map[string]int
}

func holdsOf(t *testing.T, st store.Store, r store.Run) []hold {
	t.Helper()
	ctx := context.Background()
	tis, err := st.ListTaskInstances(ctx, r.PK)
	if err != nil {
		t.Fatal(err)
	}
	var out []hold
	for _, ti := range tis {
		if ti.StartDate.IsZero() {
			continue
		}
		e, err := st.LatestEntry(ctx, r.PK, ti.TaskID)
		if err != nil {
			t.Fatal(err)
		}
		h := hold{name: r.RunID + "/" + ti.TaskID, start: ti.StartDate, end: ti.EndDate, needs: map[string]int{}}
		for _, n := range e.Needs {
			h.needs[n.Pool] = n.Slots
		}
		out = append(out, h)
	}
	return out
}

// checkCapacity sweeps the intervals and fails when a pool's held slots pass its capacity. It
// returns the most holders each pool had at once.
// Ends sort before starts at the same instant: an end is taken before the claim is released and
// a start after the next admission committed.
func checkCapacity(t *testing.T, holds []hold, capacity map[string]int) map[string]int {
	t.Helper()
	type edge struct {
		at    time.Time
		delta int
		h     hold
	}
	var edges []edge
	for _, h := range holds {
		edges = append(edges, edge{h.start, 1, h}, edge{h.end, -1, h})
	}
	sort.Slice(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return edges[i].delta < edges[j].delta
	})
	used, holders, peak := map[string]int{}, map[string]int{}, map[string]int{}
	for _, e := range edges {
		for pool, n := range e.h.needs {
			used[pool] += e.delta * n
			holders[pool] += e.delta
			if holders[pool] > peak[pool] {
				peak[pool] = holders[pool]
			}
			if c, ok := capacity[pool]; ok && used[pool] > c {
				t.Fatalf("pool %s held %d slots > capacity %d at %v (%s starting)", pool, used[pool], c, e.at, e.h.name)
			}
		}
	}
	return peak
}
