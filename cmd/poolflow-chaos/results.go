package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/poolflow/poolflow/vocab"
)

// lateGrace is how long after the schedules' removal a new scheduled run is still excused.
const lateGrace = 15 * time.Second

// result is everything the checks found.
type result struct {
	obs         observation
	occupied    map[string]int
	occErr      error
	attempts    []attempt
	strays      []proc
	bad         []string
	over        map[string][]overlap
	overMaybe   map[string][]overlap
	nearResize  int
	twice       []overlap
	twiceMaybe  []overlap
	atOnce      map[string][]overlap
	atOnceMaybe map[string][]overlap
	unbound     []attempt      // attempts of an every_node run that another daemon ran
	nodeRuns    map[string]int // every_node runs per daemon
	notFinal    []runJSON
	late        []runJSON
	tis         map[string][]tiJSON
	lost        []ack
	zombies     []waitingJSON
	orphans     []tagged
	windows     []window
	notify      *notifyResult
}

func (r *result) violations() int {
	n := len(r.twice) + len(r.notFinal) + len(r.late) + len(r.lost) + r.obs.claims + len(r.zombies) + len(r.orphans) +
		len(r.unbound)
	for _, o := range r.over {
		n += len(o)
	}
	for _, o := range r.atOnce {
		n += len(o)
	}
	if r.obs.err != nil {
		n++
	}
	if r.notify != nil {
		n += r.notify.violations()
	}
	return n
}

// check takes the last look at the store and the processes, stops the recorder and runs every
// check on what it recorded.
func (h *harness) check() *result {
	res := &result{obs: h.observe(), tis: map[string][]tiJSON{}}
	res.notify = h.checkNotifications(res.obs.addr, h.opt.lease+30*time.Second)
	res.occupied, res.occErr = h.r.occupied()
	h.rec.closeOnce()
	res.attempts, res.strays, res.bad = h.rec.snapshot()
	h.rec.mu.Lock()
	res.windows = append([]window(nil), h.rec.windows...)
	h.rec.mu.Unlock()

	runType := map[string]vocab.RunType{}
	final := map[string]bool{}
	boundTo := map[string]string{} // every_node runs: the daemon each is bound to
	res.nodeRuns = map[string]int{}
	// The quiet period removed every schedule; a daemon re-reads the DAG folder about every
	// second, so a scheduled run queued lateGrace after that is a change the daemon did not see
	// (the grace is wide because a loaded machine delays a daemon's passes by seconds).
	cutoff := h.quietAt.Add(lateGrace)
	for _, r := range res.obs.runs {
		runType[r.DAGID+"/"+r.RunID], _ = vocab.ParseRunType(r.RunType)
		final[r.DAGID+"/"+r.RunID] = r.State.Terminal()
		if r.node() && r.Daemon != nil {
			boundTo[r.DAGID+"/"+r.RunID] = *r.Daemon
			res.nodeRuns[*r.Daemon]++
		}
		switch {
		case r.fired() && r.QueuedAt != nil && r.QueuedAt.After(cutoff):
			res.late = append(res.late, r)
		case !r.State.Terminal():
			res.notFinal = append(res.notFinal, r)
		}
	}
	// Evidence: running runs before queued ones, a few of each DAG and state.
	sort.SliceStable(res.notFinal, func(i, j int) bool {
		a, b := res.notFinal[i], res.notFinal[j]
		if a.State != b.State {
			return a.State == vocab.RunRunning
		}
		return a.DAGID < b.DAGID
	})
	isTest := func(dag, run string) bool {
		if t, ok := runType[dag+"/"+run]; ok {
			return t == vocab.RunTest
		}
		return strings.HasPrefix(run, "test__")
	}
	tisOf := func(dag, run string) []tiJSON {
		k := dag + "/" + run
		if tis, ok := res.tis[k]; ok {
			return tis
		}
		tis, _ := h.r.taskInstances(res.obs.addr, dag, run)
		res.tis[k] = tis
		return tis
	}
	for _, r := range evidenceRuns(res.notFinal) {
		if res.obs.addr != "" {
			tisOf(r.DAGID, r.RunID)
		}
	}
	h.mu.Lock()
	caps := capacities{initial: map[string]int{}, changes: append([]capChange(nil), h.caps...), lag: int64(h.opt.lag)}
	acks := append([]ack(nil), h.acks...)
	h.mu.Unlock()
	for _, pd := range poolDefs {
		caps.initial[pd.name] = pd.slots
	}
	var names []string
	for _, pd := range poolDefs {
		names = append(names, pd.name)
	}
	sure, maybe := spans(res.attempts, true), spans(res.attempts, false)
	res.over, res.nearResize = overCapacity(sure, caps, names)
	overMaybe, _ := overCapacity(maybe, caps, names)
	res.overMaybe = map[string][]overlap{}
	for p, o := range overMaybe {
		res.overMaybe[p] = subtract(o, res.over[p])
	}
	res.twice = twice(sure)
	res.twiceMaybe = subtract(twice(maybe), res.twice)
	res.atOnce, res.atOnceMaybe = map[string][]overlap{}, map[string][]overlap{}
	for _, d := range h.p.defs {
		if d.maxActiveRuns == 1 {
			res.atOnce[d.id] = runsAtOnce(sure, d.id, isTest, d.everyNode)
			res.atOnceMaybe[d.id] = subtract(runsAtOnce(maybe, d.id, isTest, d.everyNode), res.atOnce[d.id])
		}
	}
	res.unbound = unbound(res.attempts, boundTo)
	if res.obs.err == nil {
		for _, a := range acks {
			if _, ok := runType[a.dag+"/"+a.run]; !ok {
				res.lost = append(res.lost, a)
			}
		}
		seen := map[int64]bool{} // an entry waits in every pool it needs
		for _, p := range res.obs.board {
			for _, w := range p.Waiting {
				if final[w.DAGID+"/"+w.RunID] && !seen[w.QueueID] {
					seen[w.QueueID] = true
					res.zombies = append(res.zombies, w)
				}
			}
		}
	}
	// A tagged process is an orphan unless its task instance is running that very try.
	for _, t := range res.obs.tagged {
		parts := strings.Split(t.key, "/")
		orphan := true
		if len(parts) == 4 && res.obs.addr != "" && !final[parts[0]+"/"+parts[1]] {
			for _, ti := range tisOf(parts[0], parts[1]) {
				if ti.TaskID == parts[2] && ti.State == vocab.TaskRunning && fmt.Sprint(ti.TryNumber) == parts[3] {
					orphan = false
				}
			}
		}
		if orphan {
			res.orphans = append(res.orphans, t)
		}
	}
	return res
}
