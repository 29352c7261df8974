package dag

import (
	"fmt"
	"slices"
)

// Select is the tasks a clear or a mark of roots reaches (§10.1, §10.2): roots, with every
// task downstream of them when down, and every task upstream of them when up, in dependency
// order (file order among equals). A root that is not a task of d is an error naming it.
func (d *DAG) Select(roots []string, down, up bool) ([]string, error) {
	l := d.Layout()
	seen := make([]bool, len(d.Tasks))
	var stack []int32
	for _, id := range roots {
		i, ok := d.TaskIndex(id)
		if !ok {
			return nil, fmt.Errorf("task %s is not a task of dag %s", id, d.ID)
		}
		if !seen[i] {
			seen[i] = true
			stack = append(stack, int32(i))
		}
	}
	walk := func(next [][]int32) {
		work := slices.Clone(stack)
		for len(work) > 0 {
			i := work[len(work)-1]
			work = work[:len(work)-1]
			for _, j := range next[i] {
				if !seen[j] {
					seen[j] = true
					work = append(work, j)
				}
			}
		}
	}
	if down {
		walk(l.Down)
	}
	if up {
		walk(l.Up)
	}
	out := make([]string, 0, len(stack))
	for _, i := range l.Order {
		if seen[i] {
			out = append(out, d.Tasks[i].ID)
		}
	}
	return out, nil
}
