package main

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"
)

// observation is one look at the store (through a daemon's API) and at the processes.
type observation struct {
	addr      string
	err       error
	runs      []runJSON
	board     []boardPool
	nonFinal  int
	final     int
	claims    int
	waiting   int
	tagged    []tagged
	attempts  int
	testsLive int
}

func (o observation) settled() bool {
	return o.err == nil && o.nonFinal == 0 && o.claims == 0 && o.waiting == 0 && len(o.tagged) == 0 && o.testsLive == 0
}

// signature changes whenever something moved: a run ended, a claim came or went, an attempt
// started, a process ended. A new run is not progress: a daemon that misses the schedules'
// removal keeps creating runs that wait behind a stuck one.
func (o observation) signature() string {
	return fmt.Sprintf("%v %d %d %d %d %d", o.err != nil, o.final, o.claims, len(o.tagged), o.attempts, o.testsLive)
}

func (h *harness) observe() observation {
	var o observation
	h.r.mu.Lock()
	skip := map[int]bool{}
	for _, c := range h.r.all {
		skip[c.pid] = true
	}
	for _, t := range h.r.tests {
		if t != nil && t.alive() {
			o.testsLive++
		}
	}
	h.r.mu.Unlock()
	o.tagged = scanTagged(h.p.dir, skip)
	o.attempts = h.rec.count()
	o.addr = h.r.anyReady(0)
	if o.addr == "" {
		o.err = fmt.Errorf("no daemon answers")
		return o
	}
	if o.runs, o.err = h.r.runs(o.addr); o.err != nil {
		return o
	}
	if o.board, o.err = h.r.board(o.addr); o.err != nil {
		return o
	}
	for _, r := range o.runs {
		if r.State.Terminal() {
			o.final++
		} else {
			o.nonFinal++
		}
	}
	for _, p := range o.board {
		o.claims += len(p.Holders)
		o.waiting += len(p.Waiting)
	}
	return o
}

// settle is the quiet period. The chaos has stopped; every DAG file is put back without its
// schedule (so no new run appears while the old ones settle), every pool gets its first
// capacity back, every daemon that is down is started (and kept up). It waits at least past the
// lease bound after the last kill, then until everything settled, or nothing moved for
// opt.stall, or opt.quietMax passed.
func (h *harness) settle(ctx context.Context) {
	h.mu.Lock()
	h.quiet, h.timers = true, nil
	lastKill := h.lastKill
	h.mu.Unlock()
	start := time.Now()
	h.quietAt = start
	h.logf("quiet period starts")
	if err := h.p.markQuiet(); err != nil {
		h.logf("quiet: %v", err)
	}
	for _, d := range h.p.defs {
		if err := h.p.writeDAG(d.id, false); err != nil {
			h.logf("quiet: write %s: %v", d.id, err)
		}
		h.setDeleted(d.id, false)
	}
	for _, pd := range poolDefs {
		h.mu.Lock()
		now := h.capNow[pd.name]
		h.mu.Unlock()
		if now != pd.slots {
			h.resize(pd.name, pd.slots, true, "quiet: restore pool "+pd.name)
		}
	}
	minEnd := start
	if lastKill.After(minEnd) {
		minEnd = lastKill
	}
	minEnd = minEnd.Add(h.opt.lease + 5*time.Second)
	fmt.Printf("quiet: all daemons up, no schedules; waiting until %s past the last kill, then until settled\n",
		(h.opt.lease + 5*time.Second).String())
	sig, moved, printed := "", time.Now(), time.Time{}
	for ctx.Err() == nil {
		for i := range h.r.daemons {
			if c, err := h.r.startDaemon(i); err != nil {
				h.logf("quiet: start d%d: %v", i, err)
			} else if c != nil {
				h.count("daemon starts in the quiet period")
				h.logf("quiet: started %s pid %d", h.r.daemons[i].id, c.pid)
			}
		}
		o := h.observe()
		now := time.Now()
		if s := o.signature(); s != sig {
			sig, moved = s, now
		}
		if now.Sub(printed) >= 10*time.Second {
			printed = now
			fmt.Printf("quiet %3.0fs: runs %d (not final %d), claims %d, waiting %d, attempt processes %d, dags test live %d%s\n",
				now.Sub(start).Seconds(), len(o.runs), o.nonFinal, o.claims, o.waiting, len(o.tagged), o.testsLive, errNote(o.err))
		}
		if !now.Before(minEnd) && o.settled() {
			h.logf("quiet: settled")
			break
		}
		if !now.Before(minEnd) && now.Sub(moved) >= h.opt.stall {
			h.logf("quiet: nothing moved for %s; checking as it is", h.opt.stall)
			fmt.Printf("quiet: nothing moved for %s; checking as it is\n", h.opt.stall)
			break
		}
		if now.Sub(start) >= h.opt.quietMax {
			h.logf("quiet: %s passed; checking as it is", h.opt.quietMax)
			fmt.Printf("quiet: %s passed; checking as it is\n", h.opt.quietMax)
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	h.mu.Lock()
	h.counts["quiet period seconds"] = int(time.Since(start).Seconds())
	h.mu.Unlock()
}

func errNote(err error) string {
	if err == nil {
		return ""
	}
	return " (state: " + err.Error() + ")"
}

// cleanup stops every process the harness started, then kills the attempt processes of this
// run that are left (found by their CHAOS_DIR tag, one by one by pid).
func (h *harness) cleanup() {
	h.r.stopAll(45 * time.Second)
	if h.hook != nil {
		h.hook.close()
	}
	if h.rec != nil {
		h.rec.closeOnce()
	}
	for _, t := range scanTagged(h.p.dir, nil) {
		_ = syscall.Kill(t.pid, syscall.SIGKILL)
	}
	if h.log != nil {
		h.log.Close()
	}
	if !h.opt.keep {
		os.RemoveAll(h.p.dir)
	}
}
