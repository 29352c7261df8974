package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// harness is one chaos run.
type harness struct {
	opt  options
	p    *project
	r    *runner
	rec  *recorder
	hook *hookReceiver // the webhook every DAG notifies (notifications.go)
	t0   time.Time

	mu       sync.Mutex
	counts   map[string]int
	caps     []capChange
	capNow   map[string]int
	acks     []ack
	timers   []timed
	deleted  map[string]bool
	repairs  map[string]int // "dag/run" -> clears and marks that were not refused: each may end the run again
	lastKill time.Time
	quiet    bool
	quietAt  time.Time
	inflight sync.WaitGroup
	log      *os.File
}

// ack is a run poolflow said it created.
type ack struct{ dag, run, via string }

type timed struct {
	at time.Time
	a  action
}

func (h *harness) logf(format string, args ...any) {
	line := fmt.Sprintf("[%8.3fs] ", time.Since(h.t0).Seconds()) + fmt.Sprintf(format, args...)
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintln(h.log, line)
	if h.opt.verbose {
		fmt.Println(line)
	}
}

func (h *harness) count(what string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts[what]++
}

func (h *harness) ack(dag, run, via string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.acks = append(h.acks, ack{dag, run, via})
}

func (h *harness) async(fn func()) {
	h.inflight.Add(1)
	go func() { defer h.inflight.Done(); fn() }()
}

func (h *harness) after(d time.Duration, a action) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.timers = append(h.timers, timed{at: time.Now().Add(d), a: a})
}

func (h *harness) isQuiet() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.quiet
}

func (h *harness) isDeleted(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.deleted[id]
}

func (h *harness) setDeleted(id string, v bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.deleted[id] = v
}

// exited is called when any poolflow process ends. A daemon that ended without the harness
// asking is counted, its last log lines kept, and started again a second later.
func (h *harness) exited(c *child, d *daemon) {
	if c.byHarness() {
		return
	}
	if d != nil {
		h.count("daemon exits not caused by the harness")
		h.logf("%s (pid %d) exited on its own (%v); last lines:\n%s", c.name, c.pid, c.err, tailOf(c.log, 5))
		h.after(time.Second, action{kind: kRestart, target: d.idx})
		return
	}
	code := exitCode(c)
	h.count(fmt.Sprintf("dags test exits: %d", code))
	if code != 0 {
		h.logf("%s (pid %d) exited %d; last lines:\n%s", c.name, c.pid, code, tailOf(c.log, 3))
	}
}

// chaos runs the plan for the chaos time, with the restarts and restores it schedules.
func (h *harness) chaos(ctx context.Context) {
	plan := makePlan(h.opt.seed, h.opt.chaos, h.opt.daemons, h.opt.tests, h.opt.lease, h.opt.longTask > 0, h.opt.rates)
	var planText strings.Builder
	for _, a := range plan {
		fmt.Fprintf(&planText, "%9.3fs %s\n", a.at.Seconds(), a)
	}
	if err := os.WriteFile(filepath.Join(h.p.dir, "plan.txt"), []byte(planText.String()), 0o644); err != nil {
		h.logf("write plan: %v", err)
	}
	c0 := time.Now()
	h.logf("chaos starts: %d planned actions over %s", len(plan), h.opt.chaos)
	fmt.Printf("chaos: %d planned actions over %s\n", len(plan), h.opt.chaos)
	end := c0.Add(h.opt.chaos)
	for i := 0; ctx.Err() == nil; {
		now := time.Now()
		h.mu.Lock()
		var due []action
		kept := h.timers[:0]
		for _, t := range h.timers {
			if !t.at.After(now) {
				due = append(due, t.a)
			} else {
				kept = append(kept, t)
			}
		}
		h.timers = kept
		next := end
		for _, t := range h.timers {
			if t.at.Before(next) {
				next = t.at
			}
		}
		h.mu.Unlock()
		for _, a := range due {
			h.do(a)
		}
		if i < len(plan) && !c0.Add(plan[i].at).After(now) {
			h.do(plan[i])
			i++
			continue
		}
		if !now.Before(end) {
			break
		}
		if i < len(plan) && c0.Add(plan[i].at).Before(next) {
			next = c0.Add(plan[i].at)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(next)):
		}
	}
	h.inflight.Wait()
}

// repaired counts a clear or mark of run that was not refused: it may reopen the run, whose
// next end is then a new occurrence of its run event (notifications.go).
func (h *harness) repaired(dag, run string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.repairs == nil {
		h.repairs = map[string]int{}
	}
	h.repairs[dag+"/"+run]++
}
