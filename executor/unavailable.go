package executor

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor/attempt"
	"github.com/poolflow/poolflow/store"
)

// unavailable applies §4.9 when a pass could not read or write pool state: a scheduled fire
// that came due is dropped with the warning "Job <name> could not enter pool <pool>: <reason>"
// (the scheduler goes on), and each pool whose retry settlement could not be written says so;
// the completions stay pending and the next pass that reaches the pool applies them.
func (l *loop) unavailable(now time.Time, err error) {
	if !errors.Is(err, store.ErrUnavailable) {
		return
	}
	reason := "pool state is unavailable"
	if l.cfg.Test == nil {
		dags, _ := l.reg.snapshot()
		for _, d := range dags {
			sched := l.scheduleOf(d)
			st := l.dagStates[d.ID]
			if sched.cron == nil || st.Paused || st.Checkpoint.IsZero() {
				continue
			}
			fire := sched.cron.Next(st.Checkpoint)
			if fire.After(now) || !l.dropped[d.ID].Before(fire) {
				continue
			}
			l.log.Warn(fmt.Sprintf("Job %s could not enter pool %s: %s", d.ID, dagPool(d), reason))
			l.dropped[d.ID] = fire
		}
		if l.reboot {
			for _, d := range dags {
				if l.scheduleOf(d).reboot {
					l.log.Warn(fmt.Sprintf("Job %s could not enter pool %s: %s", d.ID, dagPool(d), reason))
				}
			}
			l.reboot = false
		}
	}
	deferred := map[string]bool{}
	for _, ev := range l.pending {
		f, ok := ev.(*attempt.Ended)
		if !ok || f.OK {
			continue
		}
		if le := l.entries[f.Entry]; le != nil {
			for _, n := range le.Needs {
				if !n.Implicit {
					deferred[n.Pool] = true
				}
			}
		}
	}
	names := make([]string, 0, len(deferred))
	for p := range deferred {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		l.log.Warn(fmt.Sprintf("pool %s: retry settlement deferred", p))
	}
}

// dagPool names the pool a DAG's first task enters: its declared pool, else default.
func dagPool(d *dag.DAG) string {
	if len(d.Tasks) == 0 {
		return "default"
	}
	names := make([]string, 0, len(d.Tasks[0].PoolRequirements))
	for p := range d.Tasks[0].PoolRequirements {
		names = append(names, p)
	}
	if len(names) == 0 {
		return "default"
	}
	sort.Strings(names)
	return names[0]
}
