package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// The checks are pure functions of what was recorded. Each runs twice: on the sure spans of the
// attempts (violations) and on their maybe spans (what the recorder cannot rule out, reported
// apart and never counted as a violation). Spans are closed: two attempts certainly alive at
// the same instant overlap.

// capChange is one committed `pools set`: the change took effect at some instant of [from, to].
type capChange struct {
	pool     string
	from, to int64
	old, new int
}

// capacities answers, for an attempt that started at s, the largest capacity its admission may
// have seen. Admission commits before the process starts, at most lag earlier (the harness's
// bound, --admit-lag), so every capacity possibly in effect during [s-lag, s] is allowed. A
// shrink therefore never makes a start that was admitted under the old capacity a violation;
// the price is that an over-admission within lag after a shrink goes unseen (counted apart).
type capacities struct {
	initial map[string]int
	changes []capChange // in time order; resizes never overlap
	lag     int64
}

func (c capacities) allowed(pool string, s int64) (allowed int, nearChange bool) {
	vals, froms, tos := []int{c.initial[pool]}, []int64{math.MinInt64}, []int64{}
	for _, ch := range c.changes {
		if ch.pool == pool {
			vals, froms, tos = append(vals, ch.new), append(froms, ch.from), append(tos, ch.to)
		}
	}
	tos = append(tos, math.MaxInt64)
	allowed = -1
	lo := s - c.lag
	for k, v := range vals {
		// vals[k] may be in effect from the start of its change's window to the end of the next's.
		if froms[k] <= s && tos[k] >= lo {
			if allowed >= 0 && v != allowed {
				nearChange = true
			}
			allowed = max(allowed, v)
		}
	}
	return allowed, nearChange
}

// interval is one attempt's span as a check sees it.
type interval struct {
	a          *attempt
	start, end int64
}

func spans(attempts []attempt, sure bool) []interval {
	out := make([]interval, 0, len(attempts))
	for i := range attempts {
		s, e, m := attempts[i].span()
		if !sure {
			e = m
		}
		out = append(out, interval{a: &attempts[i], start: s, end: e})
	}
	return out
}

// overlap is one violation: at an attempt's start, what it overlapped.
type overlap struct {
	at    int64
	what  string
	first interval
	with  []interval
}

type edge struct {
	at    int64
	start bool
	iv    interval
}

// sweep walks the starts and ends of ivs in time order, starts before ends at the same instant
// (closed spans), calling visit at every start with the intervals alive just after it.
func sweep(ivs []interval, visit func(iv interval, alive map[*attempt]interval)) {
	edges := make([]edge, 0, 2*len(ivs))
	for _, iv := range ivs {
		edges = append(edges, edge{iv.start, true, iv}, edge{iv.end, false, iv})
	}
	sort.SliceStable(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].start && !edges[j].start
	})
	alive := map[*attempt]interval{}
	for _, e := range edges {
		if !e.start {
			delete(alive, e.iv.a)
			continue
		}
		alive[e.iv.a] = e.iv
		visit(e.iv, alive)
	}
}

func others(alive map[*attempt]interval, self *attempt, keep func(interval) bool) []interval {
	var out []interval
	for a, iv := range alive {
		if a != self && keep(iv) {
			out = append(out, iv)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

// overCapacity finds, per pool, every start after which the slots held by live attempts exceed
// what admission may have allowed. nearChange counts starts whose bound was widened by a resize.
func overCapacity(ivs []interval, caps capacities, pools []string) (found map[string][]overlap, nearChange int) {
	found = map[string][]overlap{}
	for _, pool := range pools {
		var in []interval
		for _, iv := range ivs {
			if iv.a.needs[pool] > 0 {
				in = append(in, iv)
			}
		}
		sweep(in, func(iv interval, alive map[*attempt]interval) {
			used := 0
			for a := range alive {
				used += a.needs[pool]
			}
			allowed, near := caps.allowed(pool, iv.start)
			if near {
				nearChange++
			}
			if allowed >= 0 && used > allowed {
				found[pool] = append(found[pool], overlap{at: iv.start, first: iv,
					what: fmt.Sprintf("pool %s held %d slots > capacity %d", pool, used, allowed),
					with: others(alive, iv.a, func(interval) bool { return true })})
			}
		})
	}
	return found, nearChange
}

// twice finds attempts of one task instance (same dag, run and task, any try) alive at once: a
// replay started while the previous process still ran, or two owners running it.
func twice(ivs []interval) []overlap {
	var found []overlap
	sweep(ivs, func(iv interval, alive map[*attempt]interval) {
		same := others(alive, iv.a, func(o interval) bool {
			return o.a.key.dag == iv.a.key.dag && o.a.key.run == iv.a.key.run && o.a.key.task == iv.a.key.task
		})
		if len(same) > 0 {
			found = append(found, overlap{at: iv.start, first: iv, with: same,
				what: fmt.Sprintf("task %s/%s/%s running twice", iv.a.key.dag, iv.a.key.run, iv.a.key.task)})
		}
	})
	return found
}

// runsAtOnce finds instants at which attempts of two runs of a max_active_runs: 1 DAG run at
// once; dags test runs ignore max_active_runs (§3.5) and are left out. This is also the
// "catch-up one at a time" check for a DAG with catchup. An every_node DAG's runs count per
// daemon (perDaemon): two daemons' runs may run at once, not two of one daemon.
func runsAtOnce(ivs []interval, dagID string, isTest func(dag, run string) bool, perDaemon bool) []overlap {
	var in []interval
	for _, iv := range ivs {
		if iv.a.key.dag == dagID && !isTest(iv.a.key.dag, iv.a.key.run) {
			in = append(in, iv)
		}
	}
	var found []overlap
	sweep(in, func(iv interval, alive map[*attempt]interval) {
		other := others(alive, iv.a, func(o interval) bool {
			return o.a.key.run != iv.a.key.run && (!perDaemon || o.a.daemon == iv.a.daemon)
		})
		if len(other) > 0 {
			found = append(found, overlap{at: iv.start, first: iv, with: other,
				what: fmt.Sprintf("dag %s (max_active_runs 1) ran %d runs at once", dagID, 1+len(distinctRuns(other)))})
		}
	})
	return found
}

// unbound finds the attempts of every_node runs (boundTo: run key to its daemon) that another
// owner ran: such a run is bound to the daemon that fired it and is never taken over (§9).
func unbound(attempts []attempt, boundTo map[string]string) []attempt {
	var out []attempt
	for _, a := range attempts {
		if d, ok := boundTo[a.key.dag+"/"+a.key.run]; ok && a.daemon != d {
			out = append(out, a)
		}
	}
	return out
}

func distinctRuns(ivs []interval) map[string]bool {
	m := map[string]bool{}
	for _, iv := range ivs {
		m[iv.a.key.run] = true
	}
	return m
}

// subtract leaves the maybe-overlaps that are not also sure ones (same first attempt and time).
func subtract(maybe, sure []overlap) []overlap {
	seen := map[string]bool{}
	for _, o := range sure {
		seen[o.first.a.key.String()+fmt.Sprint(o.first.a.leader.pid)] = true
	}
	var out []overlap
	for _, o := range maybe {
		if !seen[o.first.a.key.String()+fmt.Sprint(o.first.a.leader.pid)] {
			out = append(out, o)
		}
	}
	return out
}

func describe(iv interval, t0 int64) string {
	a := iv.a
	end := "still alive"
	if iv.end > 0 {
		end = fmt.Sprintf("%.3fs", float64(iv.end-t0)/1e9)
	}
	how := "killed (no end line)"
	if a.end > 0 {
		how = fmt.Sprintf("exit %d", a.status)
	}
	var kids []string
	for _, c := range a.children {
		kids = append(kids, fmt.Sprint(c.pid))
	}
	return fmt.Sprintf("%s pid %d [%.3fs, %s] needs %s, %s, children %s", a.key, a.leader.pid, float64(iv.start-t0)/1e9,
		end, needsArg(a.needs), how, strings.Join(kids, ","))
}
