package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/poolflow/poolflow/vocab"
)

type kind string

const (
	kKill    kind = "kill"         // SIGKILL a daemon or a dags test process
	kHTTP    kind = "trigger-http" // POST /api/v1/dags/{id}/dagRuns to a daemon
	kCLI     kind = "trigger-cli"  // poolflow dags trigger
	kTest    kind = "dags-test"    // poolflow dags test in a slot
	kDelete  kind = "delete-dag"   // remove a DAG file, restore it later
	kResize  kind = "resize"       // poolflow pools set on a stored pool
	kClear   kind = "clear"        // clear task instances of a run: poolflow tasks clear or POST clearTaskInstances
	kMark    kind = "mark"         // mark a task instance: poolflow tasks mark or PATCH .../taskInstances/{task}
	kRestart kind = "restart"      // start a killed daemon again (scheduled by its kill)
	kRestore kind = "restore"      // put a deleted DAG file back (scheduled by its delete)
)

// action is one random choice of the plan. The whole plan is drawn from the seed before the
// chaos starts, so a seed replays the same choices at the same offsets; what the system does
// in reply still depends on timing. A choice whose target is not there when it comes (a kill of
// a daemon that is down, a dags test in a busy slot) is skipped and counted.
type action struct {
	seq    int
	at     time.Duration
	kind   kind
	target int // kill: daemons first, then dags test slots; trigger-http: daemon; dags-test: slot
	dag    string
	pool   string
	slots  int
	force  bool
	down   time.Duration // kill of a daemon: until its restart; delete-dag: until the file is back
	// clear and mark: which run and task (indexes into what exists when the action comes), over
	// HTTP (to daemon target) or the CLI, with the downstream tasks, only the failed ones (a
	// clear that names no task), the state a mark gives.
	pick, task int
	http       bool
	downstream bool
	onlyFailed bool
	state      vocab.TaskState
}

func (a action) String() string {
	s := fmt.Sprintf("#%d %s", a.seq, a.kind)
	switch a.kind {
	case kKill:
		s += fmt.Sprintf(" target %d down %s", a.target, a.down.Round(time.Millisecond))
	case kHTTP, kTest:
		s += fmt.Sprintf(" %s on %d", a.dag, a.target)
	case kCLI:
		s += " " + a.dag
	case kDelete:
		s += fmt.Sprintf(" %s for %s", a.dag, a.down.Round(time.Millisecond))
	case kResize:
		s += fmt.Sprintf(" %s to %d force=%v", a.pool, a.slots, a.force)
	case kClear, kMark:
		via := "cli"
		if a.http {
			via = fmt.Sprintf("http %d", a.target)
		}
		s += fmt.Sprintf(" run #%d task #%d via %s downstream=%v", a.pick, a.task, via, a.downstream)
		if a.kind == kClear {
			s += fmt.Sprintf(" only_failed=%v", a.onlyFailed)
		} else {
			s += " to " + string(a.state)
		}
	}
	return s
}

// rates are the mean intervals between actions of each kind.
type rates struct {
	kill, http, cli, test, del, resize, slow, clear, mark time.Duration
}

var defaultRates = rates{kill: 8 * time.Second, http: 2500 * time.Millisecond, cli: 4 * time.Second,
	test: 6 * time.Second, del: 40 * time.Second, resize: 15 * time.Second, slow: 25 * time.Second,
	clear: 5 * time.Second, mark: 8 * time.Second}

// makePlan draws every action of a chaos of length total from seed.
func makePlan(seed uint64, total time.Duration, daemons, slots int, lease time.Duration, long bool, rt rates) []action {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var plan []action
	exp := func(mean time.Duration) time.Duration {
		return time.Duration(-math.Log(1-rng.Float64()) * float64(mean))
	}
	uniform := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Float64()*float64(hi-lo)) }
	poisson := func(mean time.Duration, mk func() action) {
		if mean <= 0 {
			return
		}
		for t := exp(mean); t < total; t += exp(mean) {
			a := mk()
			a.at = t
			plan = append(plan, a)
		}
	}
	pick := func(weighted ...any) string {
		x, acc := rng.Float64(), 0.0
		for i := 0; i+1 < len(weighted); i += 2 {
			acc += weighted[i+1].(float64)
			if x < acc {
				return weighted[i].(string)
			}
		}
		return weighted[len(weighted)-2].(string)
	}
	poisson(rt.kill, func() action {
		a := action{kind: kKill, target: rng.IntN(daemons + slots)}
		// Some daemons come back before their claims' lease runs out (their own restart
		// recovers them), others stay away past it (another daemon must take over).
		if rng.Float64() < 0.55 {
			a.down = uniform(500*time.Millisecond, 5*time.Second)
		} else {
			a.down = uniform(lease+time.Second, lease+15*time.Second)
		}
		return a
	})
	poisson(rt.http, func() action {
		return action{kind: kHTTP, dag: pick("mix", 0.75, "solo", 0.25), target: rng.IntN(daemons)}
	})
	if long {
		poisson(rt.slow, func() action { return action{kind: kHTTP, dag: "slow", target: rng.IntN(daemons)} })
	}
	poisson(rt.cli, func() action { return action{kind: kCLI, dag: pick("mix", 0.8, "solo", 0.2)} })
	if slots > 0 {
		poisson(rt.test, func() action {
			return action{kind: kTest, dag: pick("mix", 0.85, "solo", 0.15), target: rng.IntN(slots)}
		})
	}
	ids := []string{"mix", "tick", "catch", "solo"}
	if long {
		ids = append(ids, "slow")
	}
	poisson(rt.del, func() action {
		return action{kind: kDelete, dag: ids[rng.IntN(len(ids))], down: uniform(2*time.Second, 20*time.Second)}
	})
	poisson(rt.resize, func() action {
		pd := poolDefs[rng.IntN(len(poolDefs))]
		return action{kind: kResize, pool: pd.name, slots: pd.sizes[rng.IntN(len(pd.sizes))], force: rng.Float64() < 0.5}
	})
	repair := func(k kind) action {
		return action{kind: k, pick: rng.IntN(1 << 20), task: rng.IntN(1 << 20), http: rng.Float64() < 0.5,
			target: rng.IntN(daemons), downstream: rng.Float64() < 0.5}
	}
	poisson(rt.clear, func() action {
		a := repair(kClear)
		a.onlyFailed = rng.Float64() < 0.3
		return a
	})
	poisson(rt.mark, func() action {
		a := repair(kMark)
		a.state = []vocab.TaskState{vocab.TaskSuccess, vocab.TaskFailed, vocab.TaskSkipped}[rng.IntN(3)]
		return a
	})
	sort.SliceStable(plan, func(i, j int) bool { return plan[i].at < plan[j].at })
	for i := range plan {
		plan[i].seq = i + 1
	}
	return plan
}

// do carries out one action. Triggers and kills return at once; a resize waits for its command,
// so resizes never overlap and each has a known window in which it committed.
func (h *harness) do(a action) {
	switch a.kind {
	case kKill:
		h.doKill(a)
	case kHTTP:
		h.async(func() { h.triggerHTTP(a) })
	case kCLI:
		h.async(func() { h.triggerCLI(a) })
	case kTest:
		c, err := h.r.startTest(a.target, a.dag)
		switch {
		case err != nil:
			h.logf("%s: %v", a, err)
		case c == nil:
			h.count("skipped: dags test slot busy")
		default:
			h.count("dags test started")
			h.logf("%s: pid %d", a, c.pid)
		}
	case kDelete:
		if h.isDeleted(a.dag) {
			h.count("skipped: DAG file already deleted")
			return
		}
		if err := os.Remove(h.p.dagFile(a.dag)); err != nil {
			h.logf("%s: %v", a, err)
			return
		}
		h.setDeleted(a.dag, true)
		h.count("DAG files deleted")
		h.logf("%s", a)
		h.after(a.down, action{kind: kRestore, dag: a.dag})
	case kRestore:
		if err := h.p.writeDAG(a.dag, true); err != nil {
			h.logf("restore %s: %v", a.dag, err)
			return
		}
		h.setDeleted(a.dag, false)
		h.logf("restore %s", a.dag)
	case kResize:
		h.resize(a.pool, a.slots, a.force, a.String())
	case kClear, kMark:
		h.async(func() { h.repair(a) })
	case kRestart:
		if h.isQuiet() {
			return // the quiet period starts every daemon itself
		}
		c, err := h.r.startDaemon(a.target)
		if err != nil {
			h.logf("restart d%d: %v", a.target, err)
			return
		}
		if c != nil {
			h.count("daemon restarts")
			h.logf("restart %s: pid %d", h.r.daemons[a.target].id, c.pid)
		}
	}
}

func (h *harness) doKill(a action) {
	var c *child
	var name string
	h.r.mu.Lock()
	if a.target < len(h.r.daemons) {
		d := h.r.daemons[a.target]
		c, name = d.cur, d.id
	} else {
		c, name = h.r.tests[a.target-len(h.r.daemons)], fmt.Sprintf("test%d", a.target-len(h.r.daemons))
	}
	h.r.mu.Unlock()
	if !h.r.kill(c) {
		h.count("skipped: kill of a process that is not running")
		return
	}
	h.mu.Lock()
	h.lastKill = time.Now()
	h.mu.Unlock()
	if a.target < len(h.r.daemons) {
		h.count("kills of daemons")
		h.logf("%s: killed %s pid %d, restart in %s", a, name, c.pid, a.down.Round(time.Millisecond))
		h.after(a.down, action{kind: kRestart, target: a.target})
		return
	}
	h.count("kills of dags test processes")
	h.logf("%s: killed %s pid %d", a, name, c.pid)
}

// triggerHTTP starts a manual run over the API with a run id of its own, so the harness can
// later find every run it was told about.
func (h *harness) triggerHTTP(a action) {
	addr := h.r.readyDaemon(a.target)
	if addr == "" {
		h.count("skipped: HTTP trigger to a daemon that is down")
		return
	}
	runID := fmt.Sprintf("h%d_%s", a.seq, a.dag)
	body := strings.NewReader(fmt.Sprintf(`{"dag_run_id": %q}`, runID))
	resp, err := h.r.http.Post("http://"+addr+"/api/v1/dags/"+a.dag+"/dagRuns", "application/json", body)
	if err != nil {
		h.count("HTTP triggers: no answer")
		h.logf("%s: %v", a, err)
		return
	}
	defer resp.Body.Close()
	var out struct {
		RunID  string `json:"dag_run_id"`
		Detail string `json:"detail"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	h.count(fmt.Sprintf("HTTP triggers: %d", resp.StatusCode))
	if resp.StatusCode == 200 || resp.StatusCode == 202 {
		h.ack(a.dag, runID, "http "+h.r.daemons[a.target].id)
		h.logf("%s: %d run %s", a, resp.StatusCode, runID)
	} else {
		h.logf("%s: %d %s", a, resp.StatusCode, out.Detail)
	}
}

func (h *harness) triggerCLI(a action) {
	runID := fmt.Sprintf("c%d_%s", a.seq, a.dag)
	_, errOut, err := h.r.cli(30*time.Second, "dags", "trigger", a.dag, "--run-id", runID)
	if err != nil {
		h.count("CLI triggers: refused or failed")
		h.logf("%s: %v: %s", a, err, strings.TrimSpace(errOut))
		return
	}
	h.count("CLI triggers: created")
	h.ack(a.dag, runID, "cli")
	h.logf("%s: run %s", a, runID)
}

// resize sets a stored pool's capacity with its ordering kept, and records the window in which
// the change committed: admission may use the old capacity until the command returned.
func (h *harness) resize(pool string, slots int, force bool, what string) {
	pd := poolDef{}
	for _, d := range poolDefs {
		if d.name == pool {
			pd = d
		}
	}
	args := []string{"pools", "set", pool, "--slots", fmt.Sprint(slots), "--ordering", string(pd.ordering)}
	if pd.ordering == vocab.Backfill {
		args = append(args, "--starvation-after", "5s")
	}
	if force {
		args = append(args, "--force")
	}
	from := nowNS()
	_, errOut, err := h.r.cli(30*time.Second, args...)
	to := nowNS()
	if err != nil {
		h.count("pool resizes refused")
		h.logf("%s: refused: %v: %s", what, err, strings.TrimSpace(errOut))
		return
	}
	h.mu.Lock()
	old := h.capNow[pool]
	h.capNow[pool] = slots
	h.caps = append(h.caps, capChange{pool: pool, from: from, to: to, old: old, new: slots})
	h.mu.Unlock()
	h.count("pool resizes")
	h.logf("%s: %d -> %d", what, old, slots)
}
