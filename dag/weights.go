package dag

import (
	"math"
	"math/bits"
)

// maxWeightWords bounds the words of the merge-node bitsets alive at once while weights are
// summed (16M words = 128 MB); a graph that needs more is summed by one search per task.
const maxWeightWords = 16 << 20

// Weights returns the effective priority of every task under its weight rule (§4.4), as
// Airflow's priority_weight_total: downstream adds the weights of all tasks downstream of it
// (transitively, each once), upstream those of all tasks upstream of it, absolute only its own.
// Sums are clamped to the 32-bit range, as Airflow does for its database column. It is
// computed once per DAG and shared: the caller must not modify the map.
func (d *DAG) Weights() map[string]int {
	return memo(&d.derived.weights, func() map[string]int { return computeWeights(d) })
}

// PriorityWeights returns d.Weights(); the map is shared and must not be modified.
func PriorityWeights(d *DAG) map[string]int { return d.Weights() }

func computeWeights(d *DAG) map[string]int {
	g := newTaskGraph(d)
	order := g.topological()
	if !g.unique || len(order) != len(d.Tasks) {
		// Not a valid DAG (a cycle, an unknown upstream, a duplicate id): it never runs, but
		// the answer must still be defined.
		return searchWeights(d)
	}
	w := make([]int64, len(d.Tasks))
	var needDown, needUp bool
	for i, t := range d.Tasks {
		w[i] = int64(t.PriorityWeight)
		switch t.WeightRule {
		case WeightAbsolute:
		case WeightUpstream:
			needUp = true
		default:
			needDown = true
		}
	}
	var down, up []int64
	if needDown {
		rev := make([]int32, len(order))
		for k, i := range order {
			rev[len(order)-1-k] = i
		}
		down = closureSums(rev, g.down, g.up, w)
	}
	if needUp {
		up = closureSums(order, g.up, g.down, w)
	}
	out := make(map[string]int, len(d.Tasks))
	for i, t := range d.Tasks {
		total := w[i]
		switch t.WeightRule {
		case WeightAbsolute:
		case WeightUpstream:
			total = up[i]
		default:
			total = down[i]
		}
		out[t.ID] = clampWeight(total)
	}
	return out
}

func clampWeight(v int64) int { return int(min(max(v, math.MinInt32), math.MaxInt32)) }

// closureSums returns, for every task, its weight plus the weights of every task reachable
// along next (each counted once). order lists the tasks so that each comes after all tasks
// reachable from it; prev is next reversed.
//
// A task reached from only one task ("tree" task) belongs to exactly one region: follow its
// single predecessor up to the first task with several (a "merge" task) or to the top. So the
// sum from x is x's own region (its tree sum) plus the tree sums of the merge tasks reachable
// from x. Chains, fan-outs and fan-ins have no merge task under any task with two successors,
// and cost O(V+E); only where paths really merge does a task carry a bitset of the merge tasks
// below it, freed once every predecessor has used it.
func closureSums(order []int32, next, prev [][]int32, w []int64) []int64 {
	n := len(order)
	tree := make([]int64, n)
	mid := make([]int32, n) // index among merge tasks, or -1
	var merges []int32
	for i := range n {
		mid[i] = -1
		if len(prev[i]) > 1 {
			mid[i] = int32(len(merges))
			merges = append(merges, int32(i))
		}
	}
	words := (len(merges) + 63) / 64
	sets := make([]*mergeSet, n)
	pending := make([]int, n) // predecessors that have not yet used a task's set
	for i := range n {
		pending[i] = len(prev[i])
	}
	out := make([]int64, n)
	live := 0
	for _, x := range order {
		tree[x] = w[x]
		var set *mergeSet
		owned := false // set is x's own, not a successor's used as it is
		for _, c := range next[x] {
			if mid[c] < 0 {
				tree[x] += tree[c]
			}
			cs := sets[c]
			if mid[c] < 0 && cs == nil {
				continue
			}
			if set == nil && mid[c] < 0 {
				set = cs // a single source so far: share it
				continue
			}
			if !owned {
				if live += words; live > maxWeightWords {
					return searchSums(order, next, w)
				}
				own := &mergeSet{bits: make([]uint64, words)}
				if set != nil {
					copy(own.bits, set.bits)
				}
				set, owned = own, true
			}
			if mid[c] >= 0 {
				set.bits[mid[c]/64] |= 1 << (mid[c] % 64)
			}
			if cs != nil {
				for k, b := range cs.bits {
					set.bits[k] |= b
				}
			}
		}
		if owned {
			for k, b := range set.bits {
				for b != 0 {
					set.sum += tree[merges[k*64+bits.TrailingZeros64(b)]]
					b &= b - 1
				}
			}
		}
		out[x] = tree[x]
		if set != nil {
			out[x] += set.sum
			set.refs++
			sets[x] = set
		}
		for _, c := range next[x] {
			if pending[c]--; pending[c] == 0 && sets[c] != nil {
				s := sets[c]
				if s.refs--; s.refs == 0 {
					live -= words
				}
				sets[c] = nil
			}
		}
	}
	return out
}

// mergeSet is the set of merge tasks reachable from a task, shared by the tasks above it that
// reach no other.
type mergeSet struct {
	bits []uint64
	sum  int64 // tree sums of the merge tasks in bits
	refs int   // tasks whose set it still is
}

// searchSums is closureSums by one search per task: O(V·(V+E)) time but O(V) memory, for
// graphs whose merge sets would not fit.
func searchSums(order []int32, next [][]int32, w []int64) []int64 {
	n := len(order)
	out := make([]int64, n)
	seen := make([]int32, n)
	stack := make([]int32, 0, n)
	for x := range n {
		mark := int32(x + 1)
		seen[x] = mark
		total := w[x]
		stack = append(stack[:0], int32(x))
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, c := range next[v] {
				if seen[c] != mark {
					seen[c] = mark
					total += w[c]
					stack = append(stack, c)
				}
			}
		}
		out[x] = total
	}
	return out
}

// searchWeights is the definition itself, on ids, for DAGs that fail Validate: a cycle or an
// unknown upstream must not keep it from terminating.
func searchWeights(d *DAG) map[string]int {
	up := make(map[string][]string, len(d.Tasks))
	down := make(map[string][]string, len(d.Tasks))
	weight := make(map[string]int, len(d.Tasks))
	for _, t := range d.Tasks {
		weight[t.ID] = t.PriorityWeight
		for _, u := range t.DependsOn {
			up[t.ID] = append(up[t.ID], u)
			down[u] = append(down[u], t.ID)
		}
	}
	out := make(map[string]int, len(d.Tasks))
	for _, t := range d.Tasks {
		total := int64(t.PriorityWeight)
		var rel map[string][]string
		switch t.WeightRule {
		case WeightAbsolute:
		case WeightUpstream:
			rel = up
		default:
			rel = down
		}
		if rel != nil {
			for id := range reachable(rel, t.ID) {
				total += int64(weight[id])
			}
		}
		out[t.ID] = clampWeight(total)
	}
	return out
}

// reachable returns the tasks reachable from id along edges, without id itself.
func reachable(edges map[string][]string, id string) map[string]bool {
	seen := map[string]bool{}
	stack := append([]string(nil), edges[id]...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[n] || n == id {
			continue
		}
		seen[n] = true
		stack = append(stack, edges[n]...)
	}
	return seen
}
