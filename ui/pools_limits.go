package ui

import (
	"context"
	"html/template"
	"net/url"
	"slices"
	"strings"

	"github.com/poolflow/poolflow/pools"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The limits are implicit pools (§4.2): _global (max_running, per daemon, §9), and per DAG
// max_active_runs (its running runs) and max_active_tasks (_dag/<dag>/<run>: the running tasks of
// each run). The pools page shows a card for each like a pool's: use against the limit, and who
// waits on it — the queued runs of a DAG at max_active_runs (its runs list), the entries waiting
// with reason global_limit or dag_limit (the waiting list's reason filter, which computes every
// reason). DAGs are shown when they have a run open.

// limitCountBound bounds the counts of a DAG's running and queued runs on its card.
const limitCountBound = 1000

// globalCard is _global: the slots each daemon's running attempts hold against max_running.
type globalCard struct {
	Limit   int // max_running; 0 = none
	Daemons []daemonUse
	Percent int // of the busiest daemon
	Waiters string
}

type daemonUse struct {
	Daemon string
	Used   int
}

// dagLimitCard is one DAG's run limits.
type dagLimitCard struct {
	DAGID         string
	MaxActiveRuns int
	Running       int
	Queued        int // runs queued: while Running reaches MaxActiveRuns they wait on it
	// RunningText and QueuedText say them: "1,000+" past limitCountBound.
	RunningText, QueuedText template.HTML
	RunsPercent             int
	QueuedHref              string
	MaxActiveTasks          int
	Busiest                 int    // the running tasks of its busiest run
	BusiestRun              string // that run
	AtLimit                 int    // runs at max_active_tasks
	WaitersHref             string // the entries waiting with reason dag_limit
}

type limitsData struct {
	Global globalCard
	DAGs   []dagLimitCard
}

// limits reads the limits' use: the claims of the implicit pools and each DAG's open runs.
func (u *UI) limits(ctx context.Context, team string) (limitsData, error) {
	var out limitsData
	claims, err := u.api.Store().ListClaims(ctx)
	if err != nil {
		return out, err
	}
	global := map[string]int{}
	perRun := map[string]map[string]int{} // dag → run → slots held in _dag/<dag>/<run>
	for _, c := range claims {
		switch {
		case c.Pool == pools.GlobalPool:
			global[c.Daemon] += c.Slots
		case strings.HasPrefix(c.Pool, pools.DAGPoolPrefix):
			rest := strings.TrimPrefix(c.Pool, pools.DAGPoolPrefix)
			i := strings.Index(rest, "/") // DAG ids have no slash; run ids may
			if i < 0 {
				continue
			}
			d, run := rest[:i], rest[i+1:]
			if perRun[d] == nil {
				perRun[d] = map[string]int{}
			}
			perRun[d][run] += c.Slots
		}
	}
	out.Global.Limit = u.api.Settings().MaxRunning
	for d, n := range global {
		out.Global.Daemons = append(out.Global.Daemons, daemonUse{Daemon: d, Used: n})
		if out.Global.Limit > 0 {
			out.Global.Percent = max(out.Global.Percent, min(100*n/out.Global.Limit, 100))
		}
	}
	slices.SortFunc(out.Global.Daemons, func(a, b daemonUse) int { return strings.Compare(a.Daemon, b.Daemon) })
	out.Global.Waiters = poolsQuery{Reason: string(vocab.ReasonGlobalLimit), Team: team}.path("", 0)

	dags, err := u.api.DAGs(ctx)
	if err != nil {
		return out, err
	}
	for _, d := range dags {
		if team != "" && u.dagTeam(d.DAGID) != "" && u.dagTeam(d.DAGID) != team {
			continue
		}
		// Counted up to a bound: 100,000 open runs of a DAG are 100,000 index entries a view.
		count := func(s vocab.RunState, text *template.HTML) (int, error) {
			f := store.RunFilter{DAGID: d.DAGID, States: []vocab.RunState{s}, Limit: 1, CountAtMost: limitCountBound}
			_, n, err := u.api.Store().ListRunsWhere(ctx, f)
			*text = runTotal(n, f)
			return n, err
		}
		c := dagLimitCard{DAGID: d.DAGID, MaxActiveRuns: d.MaxActiveRuns, MaxActiveTasks: d.MaxActiveTasks}
		if c.Running, err = count(vocab.RunRunning, &c.RunningText); err != nil {
			return out, err
		}
		if c.Queued, err = count(vocab.RunQueued, &c.QueuedText); err != nil {
			return out, err
		}
		if c.Running == 0 && c.Queued == 0 {
			continue
		}
		if c.MaxActiveRuns > 0 {
			c.RunsPercent = min(100*c.Running/c.MaxActiveRuns, 100)
		}
		for run, n := range perRun[d.DAGID] {
			if n > c.Busiest || n == c.Busiest && run < c.BusiestRun {
				c.Busiest, c.BusiestRun = n, run
			}
			if c.MaxActiveTasks > 0 && n >= c.MaxActiveTasks {
				c.AtLimit++
			}
		}
		c.QueuedHref = "/ui/dags/" + url.PathEscape(d.DAGID) + "/runs?state=" + string(vocab.RunQueued)
		c.WaitersHref = poolsQuery{DAG: d.DAGID, Reason: string(vocab.ReasonDAGLimit), Team: team}.path("", 0)
		out.DAGs = append(out.DAGs, c)
	}
	return out, nil
}
