package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestRandomMultiPoolDAG runs a DAG of 200 tasks with random multi-pool requirements over 4
// pools and checks, from the recorded start and end times, that no pool ever held more than its
// capacity, that at least 3 tasks ran at once, and that each pool of capacity ≥ 2 had two
// holders at once at some instant.
func TestRandomMultiPoolDAG(t *testing.T) {
	t.Parallel()
	capacity := map[string]int{"a": 2, "b": 3, "c": 4, "d": 1}
	names := []string{"a", "b", "c", "d"}
	rng := rand.New(rand.NewPCG(7, 11))
	var b strings.Builder
	b.WriteString("dag_id: random_pools\nmax_active_tasks: 64\ntasks:\n")
	for i := 0; i < 200; i++ {
		req := map[string]int{}
		for _, k := range rng.Perm(4)[:1+rng.IntN(3)] {
			req[names[k]] = 1 + rng.IntN(capacity[names[k]])
		}
		var parts []string
		for _, n := range names {
			if s, ok := req[n]; ok {
				parts = append(parts, fmt.Sprintf("%s: %d", n, s))
			}
		}
		fmt.Fprintf(&b, "  - {id: t%03d, pool_requirements: {%s}, bash: 'sleep 0.0%d'}\n", i, strings.Join(parts, ", "), 2+rng.IntN(6))
	}
	p := newProject(t, "max_running: 16\npools:\n  a: 2\n  b: 3\n  c:\n    slots: 4\n    ordering: strict\n  d: 1\n",
		map[string]string{"random_pools.yaml": b.String()})
	out := p.run(t, "dags", "test", "random_pools", "-o", "json")
	var rep struct {
		State string `json:"state"`
		RunID string `json:"run_id"`
		Tasks []struct {
			TaskID       string         `json:"task_id"`
			State        string         `json:"state"`
			Start        string         `json:"start_date"`
			End          string         `json:"end_date"`
			Requirements map[string]int `json:"requirements"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("dags test -o json: %v\n%s", err, out)
	}
	if rep.State != "success" || len(rep.Tasks) != 200 {
		t.Fatalf("state %s with %d tasks", rep.State, len(rep.Tasks))
	}
	var holds []hold
	for _, task := range rep.Tasks {
		start, err1 := time.Parse(time.RFC3339Nano, task.Start)
		end, err2 := time.Parse(time.RFC3339Nano, task.End)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: dates %q %q", task.TaskID, task.Start, task.End)
		}
		holds = append(holds, hold{name: task.TaskID, start: start, end: end, needs: task.Requirements})
	}
	peak := checkCapacity(t, holds, capacity)
	for pool, c := range capacity {
		if c >= 2 && peak[pool] < 2 {
			t.Errorf("pool %s (capacity %d) never had two holders at once", pool, c)
		}
	}
	if n := maxConcurrent(holds); n < 3 {
		t.Errorf("at most %d tasks ran at once, want at least 3", n)
	}
	// The store agrees with the report: every entry admitted once, no claim left.
	st := p.open(t)
	claims, err := st.ListClaims(context.Background())
	if err != nil || len(claims) != 0 {
		t.Fatalf("claims left: %v %v", claims, err)
	}
}

// maxConcurrent is the most intervals open at one instant.
func maxConcurrent(holds []hold) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, h := range holds {
		edges = append(edges, edge{h.start, 1}, edge{h.end, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return edges[i].delta < edges[j].delta
	})
	n, best := 0, 0
	for _, e := range edges {
		n += e.delta
		if n > best {
			best = n
		}
	}
	return best
}
