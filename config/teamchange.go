package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/poolflow/poolflow/dag"
)

// A change of a pool's teams (§15) that would turn away a loaded DAG requiring the pool is
// refused, as shrinking a pool below what a loaded DAG needs is (§4.1): the DAG would silently
// stop loading, and its next run would not happen. The API and the CLI refuse it with
// ErrPoolInUse (409) unless forced; a reload of poolflow.yaml is refused and the previous
// configuration stays in force. Either way the refusal names the DAGs, so the admin changes
// their pool_requirements (or their team) first.

// lockedOut lists the loaded DAGs with a task requiring pool that its teams let in before and
// would turn away after, as "dag_id (team T)" or "dag_id (no team)", sorted.
func lockedOut(dags []*dag.DAG, pool string, before, after []string) []string {
	var out []string
	for _, d := range dags {
		if !requires(d, pool) || dag.TeamRefusal(pool, before, d.Team) != "" || dag.TeamRefusal(pool, after, d.Team) == "" {
			continue
		}
		if d.Team == "" {
			out = append(out, d.ID+" (no team)")
		} else {
			out = append(out, d.ID+" (team "+d.Team+")")
		}
	}
	sort.Strings(out)
	return out
}

func requires(d *dag.DAG, pool string) bool {
	return slices.ContainsFunc(d.Tasks, func(t *dag.Task) bool {
		_, ok := t.PoolRequirements[pool]
		return ok
	})
}

// lockout says which DAGs a change of pool's teams would turn away.
func lockout(pool string, teams []string, dags []string, how string) string {
	return fmt.Sprintf("pool %s: teams [%s] would turn away %s, which require it; change their team or pool_requirements first%s",
		pool, strings.Join(teams, ", "), strings.Join(dags, ", "), how)
}

// TeamLockouts refuses a new configuration (after) whose pools' teams turn away loaded DAGs
// that the configuration in force (before) lets use them: a reload of poolflow.yaml that does
// this keeps the previous configuration. nil when none would be turned away.
func TeamLockouts(before, after *Effective, dags []*dag.DAG) error {
	if before == nil || len(dags) == 0 {
		return nil
	}
	var errs []string
	for _, pool := range after.PoolNames() {
		if _, was := before.Pool(pool); !was {
			continue
		}
		teams := after.PoolTeams(pool)
		if users := lockedOut(dags, pool, before.PoolTeams(pool), teams); len(users) > 0 {
			errs = append(errs, lockout(pool, teams, users, ""))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrPoolInUse, strings.Join(errs, "\n"))
}
