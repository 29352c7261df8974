package main

import (
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

// at builds an attempt of task whose leader was seen alive over [start, alive] and gone at gone
// (ms), needing needs.
func at(run, task string, start, alive, gone int64, needs map[string]int) attempt {
	k := attemptKey{dag: "d", run: run, task: task, try: 1}
	return attempt{key: k, needs: needs, leader: &proc{key: k, pid: int(start), leader: true, line: start * ms,
		alive: alive * ms, gone: gone * ms}}
}

func TestOverCapacity(t *testing.T) {
	one := capacities{initial: map[string]int{"p": 1}, lag: 0}
	cases := []struct {
		name        string
		attempts    []attempt
		caps        capacities
		sure, maybe int
	}{
		{"one after the other", []attempt{at("r1", "a", 0, 10, 12, req("p", 1)), at("r2", "a", 20, 30, 32, req("p", 1))}, one, 0, 0},
		// The second starts inside the first's exit window: the recorder cannot rule it out,
		// and must not call it a violation.
		{"start inside the exit window", []attempt{at("r1", "a", 0, 10, 15, req("p", 1)), at("r2", "a", 12, 30, 32, req("p", 1))}, one, 0, 1},
		{"certain overlap", []attempt{at("r1", "a", 0, 10, 12, req("p", 1)), at("r2", "a", 5, 30, 32, req("p", 1))}, one, 1, 0},
		{"other pool", []attempt{at("r1", "a", 0, 10, 12, req("p", 1)), at("r2", "a", 5, 30, 32, req("q", 1))}, one, 0, 0},
		{"two slots of two", []attempt{at("r1", "a", 0, 10, 12, req("p", 1)), at("r2", "a", 5, 30, 32, req("p", 1))},
			capacities{initial: map[string]int{"p": 2}}, 0, 0},
		{"end line extends the sure span", []attempt{func() attempt {
			a := at("r1", "a", 0, 1, 12, req("p", 1))
			a.end = 10 * ms
			return a
		}(), at("r2", "a", 5, 30, 32, req("p", 1))}, one, 1, 0},
		{"a child keeps the attempt alive", []attempt{func() attempt {
			a := at("r1", "a", 0, 2, 3, req("p", 1))
			a.children = []*proc{{pid: 99, line: 1 * ms, alive: 20 * ms, gone: 21 * ms}}
			return a
		}(), at("r2", "a", 10, 30, 32, req("p", 1))}, one, 1, 0},
		// Shrunk from 2 to 1 during [100, 110] ms: a start at 112 with two holders may have
		// been admitted under 2 (lag 5 ms reaches back into the change), one at 200 may not.
		{"shrink within the admission lag", []attempt{at("r1", "a", 0, 300, 301, req("p", 1)), at("r2", "a", 112, 150, 151, req("p", 1))},
			capacities{initial: map[string]int{"p": 2}, lag: 5 * ms, changes: []capChange{{pool: "p", from: 100 * ms, to: 110 * ms, old: 2, new: 1}}}, 0, 0},
		{"shrink long before", []attempt{at("r1", "a", 0, 300, 301, req("p", 1)), at("r2", "a", 200, 250, 251, req("p", 1))},
			capacities{initial: map[string]int{"p": 2}, lag: 5 * ms, changes: []capChange{{pool: "p", from: 100 * ms, to: 110 * ms, old: 2, new: 1}}}, 1, 0},
		{"grow makes room at once", []attempt{at("r1", "a", 0, 300, 301, req("p", 1)), at("r2", "a", 105, 250, 251, req("p", 1))},
			capacities{initial: map[string]int{"p": 1}, lag: 5 * ms, changes: []capChange{{pool: "p", from: 100 * ms, to: 110 * ms, old: 1, new: 2}}}, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sure, _ := overCapacity(spans(c.attempts, true), c.caps, []string{"p"})
			maybe, _ := overCapacity(spans(c.attempts, false), c.caps, []string{"p"})
			if got := len(sure["p"]); got != c.sure {
				t.Errorf("sure violations = %d, want %d: %+v", got, c.sure, sure["p"])
			}
			if got := len(subtract(maybe["p"], sure["p"])); got != c.maybe {
				t.Errorf("not ruled out = %d, want %d", got, c.maybe)
			}
		})
	}
}

func TestTwiceAndRunsAtOnce(t *testing.T) {
	noTest := func(string, string) bool { return false }
	cases := []struct {
		name          string
		attempts      []attempt
		twice, atOnce int
	}{
		{"replay after the old process died", []attempt{at("r1", "a", 0, 10, 11, nil), at("r1", "a", 20, 30, 31, nil)}, 0, 0},
		{"replay while the old process runs", []attempt{at("r1", "a", 0, 25, 26, nil), at("r1", "a", 20, 30, 31, nil)}, 1, 0},
		{"two tasks of one run", []attempt{at("r1", "a", 0, 25, 26, nil), at("r1", "b", 20, 30, 31, nil)}, 0, 0},
		{"two runs at once", []attempt{at("r1", "a", 0, 25, 26, nil), at("r2", "a", 20, 30, 31, nil)}, 0, 1},
		{"two runs one after the other", []attempt{at("r1", "a", 0, 10, 26, nil), at("r2", "a", 20, 30, 31, nil)}, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sure := spans(c.attempts, true)
			if got := len(twice(sure)); got != c.twice {
				t.Errorf("twice = %d, want %d", got, c.twice)
			}
			if got := len(runsAtOnce(sure, "d", noTest, false)); got != c.atOnce {
				t.Errorf("runs at once = %d, want %d", got, c.atOnce)
			}
		})
	}
	isTest := func(_, run string) bool { return run == "r2" }
	if n := len(runsAtOnce(spans([]attempt{at("r1", "a", 0, 25, 26, nil), at("r2", "a", 20, 30, 31, nil)}, true), "d", isTest, false)); n != 0 {
		t.Errorf("a dags test run counted against max_active_runs: %d", n)
	}
}

// TestEveryNodeChecks: an every_node DAG's max_active_runs counts per daemon, and its runs'
// attempts must run on the daemon each is bound to.
func TestEveryNodeChecks(t *testing.T) {
	noTest := func(string, string) bool { return false }
	on := func(a attempt, daemon string) attempt { a.daemon = daemon; return a }
	twoDaemons := spans([]attempt{on(at("r1", "a", 0, 25, 26, nil), "d1"), on(at("r2", "a", 20, 30, 31, nil), "d2")}, true)
	if n := len(runsAtOnce(twoDaemons, "d", noTest, true)); n != 0 {
		t.Errorf("two daemons' every_node runs at once counted: %d", n)
	}
	oneDaemon := spans([]attempt{on(at("r1", "a", 0, 25, 26, nil), "d1"), on(at("r2", "a", 20, 30, 31, nil), "d1")}, true)
	if n := len(runsAtOnce(oneDaemon, "d", noTest, true)); n != 1 {
		t.Errorf("one daemon's two every_node runs at once: %d, want 1", n)
	}
	atts := []attempt{on(at("r1", "a", 0, 1, 2, nil), "d1"), on(at("r2", "a", 0, 1, 2, nil), "d1"), on(at("r3", "a", 0, 1, 2, nil), "d3")}
	got := unbound(atts, map[string]string{"d/r1": "d1", "d/r2": "d2"})
	if len(got) != 1 || got[0].key.run != "r2" {
		t.Errorf("unbound = %+v, want r2's attempt (bound to d2, run by d1)", got)
	}
}

func TestParseRecord(t *testing.T) {
	r := newRecorder("")
	r.parse("start\t1700000000.123456\t42\t1\tmix\th1_mix\tab\t1\ta=1,b=1\tgroup\tchaos-d1")
	r.parse("child\t1700000000,200000\t43\t42\tmix\th1_mix\tab\t1")
	r.parse("end\t1700000001.000001\t42\t1\tmix\th1_mix\tab\t1\t0")
	r.parse("start\tbad")
	atts, strays, bad := r.snapshot()
	if len(atts) != 1 || len(strays) != 0 || len(bad) != 1 {
		t.Fatalf("attempts %d strays %d bad %v", len(atts), len(strays), bad)
	}
	a := atts[0]
	if a.leader.line != 1700000000123456000 || a.end != 1700000001000001000 || len(a.children) != 1 ||
		a.children[0].line != 1700000000200000000 || a.needs["b"] != 1 || a.key.try != 1 || a.daemon != "chaos-d1" {
		t.Fatalf("parsed %+v leader %+v", a, a.leader)
	}
}

func TestPlanIsReplayable(t *testing.T) {
	a := makePlan(7, time.Minute, 3, 2, 30*time.Second, true, defaultRates)
	b := makePlan(7, time.Minute, 3, 2, 30*time.Second, true, defaultRates)
	c := makePlan(8, time.Minute, 3, 2, 30*time.Second, true, defaultRates)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("plans of one seed differ in length: %d %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("action %d differs: %v vs %v", i, a[i], b[i])
		}
	}
	same := len(a) == len(c)
	for i := 0; same && i < len(a); i++ {
		same = a[i] == c[i]
	}
	if same {
		t.Fatal("two seeds gave the same plan")
	}
}
