package ui

import (
	"sort"
	"strings"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Waits kept in history: every queue entry of a run says when its try became eligible (created,
// due, and for a sensor its next poke) and when it was admitted, or ended without being
// admitted. The Gantt draws that span as a thin bar before the attempt's bar, with the pools it
// needed on hover, and the run page sums them: what poolflow exists for stays visible after the
// task has run.

// eligibleAt is when an entry could first have been admitted.
func eligibleAt(e store.Entry) time.Time {
	t := e.CreatedAt
	for _, u := range []time.Time{e.Due, e.NotBefore} {
		if u.After(t) {
			t = u
		}
	}
	return t
}

// entryPools names the pools an entry needed: its explicit requirements, else _global.
func entryPools(e store.Entry) (names []string, words string) {
	var parts []string
	for _, n := range e.Needs {
		if !n.Implicit {
			names = append(names, n.Pool)
			parts = append(parts, n.Pool+"×"+itoa(n.Slots))
		}
	}
	if len(names) == 0 {
		for _, n := range e.Needs {
			names = append(names, n.Pool)
			parts = append(parts, n.Pool+"×"+itoa(n.Slots))
		}
	}
	sort.Strings(names)
	sort.Strings(parts)
	return names, strings.Join(parts, ", ")
}

// poolWait is how long a run's tries waited in all on one pool.
type poolWait struct {
	Pool string
	Wait time.Duration
}

// waitSum is a run's time spent waiting for admission, and the pools it waited on, longest first.
type waitSum struct {
	Total time.Duration
	Pools []poolWait
}

// Words is the sum as the run page says it: "1m 28s (default)".
func (w waitSum) Words() string {
	names := make([]string, len(w.Pools))
	for i, p := range w.Pools {
		names[i] = p.Pool
	}
	s := fmtDuration(w.Total)
	if len(names) > 0 {
		s += " (" + strings.Join(names, ", ") + ")"
	}
	return s
}

// waitBars draws each ended or admitted entry's wait; an entry still waiting is drawn from its
// task instance by ganttBars, with the reason it waits now. The sum counts both.
func waitBars(entries []store.Entry, now time.Time) ([]bar, waitSum) {
	var out []bar
	per := map[string]time.Duration{}
	var sum waitSum
	for _, e := range entries {
		from := eligibleAt(e)
		pools, needs := entryPools(e)
		var to time.Time
		label := ""
		switch {
		case !e.AdmittedAt.IsZero():
			to = e.AdmittedAt
			label = e.TaskID + " try " + itoa(e.TryNumber) + " waited " + fmtDuration(to.Sub(from)) + " for admission: needs " + needs
		case e.State == vocab.EntryWaiting:
			to = now
		case !e.EndedAt.IsZero():
			to = e.EndedAt
			label = e.TaskID + " try " + itoa(e.TryNumber) + " never started: " + string(e.State) + " after waiting " +
				fmtDuration(to.Sub(from)) + " for " + needs
		default:
			continue
		}
		d := to.Sub(from)
		if d <= 0 {
			continue
		}
		sum.Total += d
		for _, p := range pools {
			per[p] += d
		}
		if label == "" {
			continue
		}
		if e.Reason != "" {
			label += "\nlast reason: " + e.Reason
		}
		out = append(out, bar{Task: e.TaskID, State: vocab.TaskScheduled, Start: from, End: to, Waiting: true, Label: label})
	}
	for p, d := range per {
		sum.Pools = append(sum.Pools, poolWait{p, d})
	}
	sort.Slice(sum.Pools, func(i, j int) bool {
		if sum.Pools[i].Wait != sum.Pools[j].Wait {
			return sum.Pools[i].Wait > sum.Pools[j].Wait
		}
		return sum.Pools[i].Pool < sum.Pools[j].Pool
	})
	return out, sum
}

// neverStarted says how a try that ended unstarted ended, from its queue entry: "never started:
// cancelled while waiting for db".
func neverStarted(entries []store.Entry, task string, try int) string {
	for _, e := range entries {
		if e.TaskID == task && e.TryNumber == try && e.AdmittedAt.IsZero() {
			pools, _ := entryPools(e)
			return "never started: " + strings.ReplaceAll(string(e.State), "_", " ") + " while waiting for " + strings.Join(pools, ", ")
		}
	}
	return "never started"
}
