// Package backfill checks and plans backfills (§11): which dates of a DAG's schedule a range
// holds, whether a request may be run, and what it would do with each date. It is pure: the
// API and the CLI give it the DAG, the runs the store holds at those dates and the bounds in
// force, and store what it answers; the daemon then takes the dates one pass at a time
// (executor/decide).
package backfill

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Request is a backfill as asked (Airflow 3's body, plus MaxSlots).
type Request struct {
	DAGID         string
	From, To      time.Time
	Reprocess     vocab.Reprocess // "" means none
	MaxActiveRuns int             // 0 means 1
	Backwards     bool
	Conf          map[string]any
	MaxSlots      map[string]int
}

// Error is a request that cannot be run: the HTTP status it answers (400, 404, 409) and the
// field it names.
type Error struct {
	Status int
	Field  string
	Msg    string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// Unwrap is the store's error of the same kind: a 404 is ErrNotFound, a 409 ErrConflict, a
// 400 ErrInvalid.
func (e *Error) Unwrap() error {
	switch e.Status {
	case http.StatusNotFound:
		return store.ErrNotFound
	case http.StatusConflict:
		return store.ErrConflict
	}
	return store.ErrInvalid
}

func bad(field, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Normalize fills the defaults of a request: reprocess none, max_active_runs 1.
func (r *Request) Normalize() {
	if r.Reprocess == "" {
		r.Reprocess = vocab.ReprocessNone
	}
	if r.MaxActiveRuns == 0 {
		r.MaxActiveRuns = 1
	}
	r.From, r.To = r.From.UTC(), r.To.UTC()
}

// Check validates a normalized request against its DAG (nil: not loaded, 404) and returns the
// dates it covers in the order the backfill takes them: every fire of the DAG's schedule in
// [From, To], oldest first (newest first with Backwards). usedPools are the pools the DAG's
// tasks can need (UsedPools); maxRuns bounds the dates (the configuration's backfill.max_runs).
func Check(r Request, g *dag.DAG, usedPools []string, maxRuns int) ([]time.Time, error) {
	switch {
	case r.DAGID == "":
		return nil, bad("dag_id", "required")
	case g == nil:
		return nil, &Error{Status: http.StatusNotFound, Field: "dag_id", Msg: fmt.Sprintf("dag %s is not loaded", r.DAGID)}
	case r.From.IsZero():
		return nil, bad("from_date", "required")
	case r.To.IsZero():
		return nil, bad("to_date", "required")
	case r.To.Before(r.From):
		return nil, bad("to_date", "%s is before from_date %s", stamp(r.To), stamp(r.From))
	case !r.Reprocess.Valid():
		return nil, bad("reprocess_behavior", "%q: want none, failed or completed", r.Reprocess)
	case r.MaxActiveRuns < 1:
		return nil, bad("max_active_runs", "%d: want 1 or more", r.MaxActiveRuns)
	}
	names := make([]string, 0, len(r.MaxSlots))
	for p := range r.MaxSlots {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		switch n := r.MaxSlots[p]; {
		case n < 1:
			return nil, bad("max_slots", "pool %s: %d slots: want 1 or more", p, n)
		case !slices.Contains(usedPools, p):
			return nil, bad("max_slots", "pool %s: dag %s does not use it (it uses %s)", p, g.ID, strings.Join(usedPools, ", "))
		}
	}
	if g.EveryNode {
		return nil, bad("dag_id", "dag %s runs on every daemon (every_node): a backfill would run each date on one "+
			"daemon only", g.ID)
	}
	cs, reboot, err := dag.ParseSchedule(g.Schedule)
	switch {
	case err != nil:
		return nil, bad("dag_id", "dag %s: %v", g.ID, err)
	case cs == nil || reboot:
		return nil, bad("dag_id", "dag %s has no schedule to backfill (schedule %q)", g.ID, g.Schedule)
	}
	var dates []time.Time
	for t := cs.Next(r.From.Add(-time.Nanosecond)); !t.IsZero() && !t.After(r.To); t = cs.Next(t) {
		if len(dates) == maxRuns {
			return nil, bad("to_date", "the range %s to %s holds more than %d fires of %q: over the bound of "+
				"backfill.max_runs (%d) in poolflow.yaml; backfill a shorter range", stamp(r.From), stamp(r.To), maxRuns,
				g.Schedule, maxRuns)
		}
		dates = append(dates, t.UTC())
	}
	if len(dates) == 0 {
		return nil, bad("from_date", "no fire of dag %s's schedule %q between %s and %s", g.ID, g.Schedule,
			stamp(r.From), stamp(r.To))
	}
	if r.Backwards {
		slices.Reverse(dates)
	}
	return dates, nil
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// UsedPools are the named pools a DAG's tasks can need: their requirements, and for a task
// without any, every pool the rules can give (rulePools, which ends with the default pool).
func UsedPools(g *dag.DAG, rulePools []string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, t := range g.Tasks {
		if t.Kind == dag.KindApproval {
			continue // an approval gate needs no pool (§5.2)
		}
		if len(t.PoolRequirements) == 0 {
			for _, p := range rulePools {
				add(p)
			}
			continue
		}
		for p := range t.PoolRequirements {
			add(p)
		}
	}
	sort.Strings(out)
	return out
}

// Overlap is the open backfill of the same DAG whose range meets [from, to], or nil.
func Overlap(open []store.Backfill, from, to time.Time) *store.Backfill {
	for i := range open {
		if !open[i].To.Before(from) && !to.Before(open[i].From) {
			return &open[i]
		}
	}
	return nil
}

// Planned is what a backfill would do with one date, as things stand: create a run, clear
// one, or skip it (Reason says why).
type Planned struct {
	LogicalDate time.Time
	Action      vocab.BackfillAction
	RunID       string
	RunState    vocab.RunState
	Reason      string
}

// Plan says what a backfill with reprocess r would do with each of dates, given the runs its DAG
// has in the range (store.Reader.ListRunsBetween): the daemon decides the same way when it
// takes the date (decide.WantsClear), from the runs as they are then.
func Plan(r vocab.Reprocess, dates []time.Time, runs []store.Run) []Planned {
	at := make(map[int64]store.Run, len(runs))
	for _, run := range runs {
		at[run.LogicalDate.UnixMicro()] = run
	}
	out := make([]Planned, len(dates))
	for i, d := range dates {
		p := Planned{LogicalDate: d, Action: vocab.BackfillCreated}
		if ex, ok := at[d.UnixMicro()]; ok {
			p.RunID, p.RunState = ex.RunID, ex.State
			switch {
			case ex.State.Open():
				p.Action, p.Reason = vocab.BackfillSkipped, fmt.Sprintf("run %s is %s", ex.RunID, ex.State)
			case WantsClear(r, ex.State):
				p.Action, p.Reason = vocab.BackfillCleared, fmt.Sprintf("run %s was %s; reprocess %s", ex.RunID, ex.State, r)
			default:
				p.Action, p.Reason = vocab.BackfillSkipped, fmt.Sprintf("run %s exists (%s); reprocess %s", ex.RunID, ex.State, r)
			}
		}
		out[i] = p
	}
	return out
}

// WantsClear reports whether a backfill with reprocess r clears an ended run in state s:
// failed clears a failed run's failed tasks, completed every ended run whole.
func WantsClear(r vocab.Reprocess, s vocab.RunState) bool {
	switch r {
	case vocab.ReprocessFailed:
		return s == vocab.RunFailed
	case vocab.ReprocessCompleted:
		return s.Terminal()
	}
	return false
}

// Durations are the tasks' past durations: the mean of their ended attempts that ran.
func Durations(attempts []store.Attempt) map[string]time.Duration {
	sum := map[string]time.Duration{}
	n := map[string]int{}
	for _, a := range attempts {
		if a.StartDate.IsZero() || a.EndDate.IsZero() || a.EndDate.Before(a.StartDate) {
			continue
		}
		sum[a.TaskID] += a.EndDate.Sub(a.StartDate)
		n[a.TaskID]++
	}
	out := make(map[string]time.Duration, len(sum))
	for id, d := range sum {
		out[id] = d / time.Duration(n[id])
	}
	return out
}

// SlotHours is, per pool, the slot-hours the runs a plan creates or clears would hold: each task
// that would run, for its past duration, times the slots it needs in each pool (needs: its
// requirements). A created run runs every task; a cleared one the tasks its clear takes
// (cleared: by run id, nil for every task). Tasks that never ran are named in unknown.
func SlotHours(g *dag.DAG, plan []Planned, cleared map[string][]string, durations map[string]time.Duration,
	needs func(*dag.Task) map[string]int) (hours map[string]float64, unknown []string) {
	hours = map[string]float64{}
	missing := map[string]bool{}
	add := func(t *dag.Task) {
		if t == nil || t.Kind == dag.KindApproval {
			return
		}
		d, ok := durations[t.ID]
		if !ok {
			missing[t.ID] = true
			return
		}
		for p, slots := range needs(t) {
			hours[p] += d.Hours() * float64(slots)
		}
	}
	for _, p := range plan {
		switch p.Action {
		case vocab.BackfillCreated:
			for _, t := range g.Tasks {
				add(t)
			}
		case vocab.BackfillCleared:
			ids, some := cleared[p.RunID]
			if !some {
				for _, t := range g.Tasks {
					add(t)
				}
				continue
			}
			for _, id := range ids {
				add(g.Task(id))
			}
		}
	}
	for id := range missing {
		unknown = append(unknown, id)
	}
	sort.Strings(unknown)
	return hours, unknown
}
