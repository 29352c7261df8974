package dag

import "math"

// PriorityWeights returns the effective priority of every task under its weight rule (§4.4),
// as Airflow's priority_weight_total: downstream adds the weights of all tasks downstream of it
// (transitively, each once), upstream those of all tasks upstream of it, absolute only its own.
// Sums are clamped to the 32-bit range, as Airflow does for its database column.
func PriorityWeights(d *DAG) map[string]int {
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
		out[t.ID] = int(min(max(total, math.MinInt32), math.MaxInt32))
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
