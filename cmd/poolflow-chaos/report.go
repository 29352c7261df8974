package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

func (h *harness) report(res *result) {
	var b strings.Builder
	pf := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	t0 := h.t0.UnixNano()
	pf("\n== poolflow chaos report: seed %d, %d daemons, chaos %s ==\n", h.opt.seed, h.opt.daemons, h.opt.chaos)
	pf("run folder %s (actions.log, logs/, record.tsv)\n", h.p.dir)

	pf("\n-- actions --\n")
	keys := make([]string, 0, len(h.counts))
	for k := range h.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		pf("  %-52s %d\n", k, h.counts[k])
	}

	// A daemon with nothing to do uses little CPU; a busy life is a loop that does not sleep.
	cpu, lives, busiest := map[string]time.Duration{}, map[string]int{}, map[string]string{}
	share := map[string]float64{}
	h.r.mu.Lock()
	for _, c := range h.r.all {
		if ps := c.cmd.ProcessState; ps != nil && c.daemon != nil {
			used := ps.UserTime() + ps.SystemTime()
			cpu[c.name] += used
			lives[c.name]++
			wall := c.ended.Sub(c.started)
			if f := used.Seconds() / max(wall.Seconds(), 1); f > share[c.name] {
				share[c.name] = f
				busiest[c.name] = fmt.Sprintf("%s of CPU in %s (pid %d)", used.Round(10*time.Millisecond), wall.Round(time.Second), c.pid)
			}
		}
	}
	h.r.mu.Unlock()
	for _, id := range sortedKeys(cpu) {
		pf("  CPU of %s over its %d lives: %s; busiest life %s\n", id, lives[id], cpu[id].Round(10*time.Millisecond), busiest[id])
	}

	pf("\n-- recorded --\n")
	byKey := map[attemptKey]int{}
	ended, children, setsid := 0, 0, 0
	for _, a := range res.attempts {
		byKey[a.key]++
		if a.end > 0 {
			ended++
		}
		children += len(a.children)
		if a.mode == "setsid" {
			setsid++
		}
	}
	replays := 0
	for _, n := range byKey {
		replays += n - 1
	}
	pf("  attempt processes %d (ended normally %d, killed or cut short %d; same try run again %d), children %d (setsid %d)\n",
		len(res.attempts), ended, len(res.attempts)-ended, replays, children, setsid)
	states, types := map[string]int{}, map[string]int{}
	for _, r := range res.obs.runs {
		states[string(r.State)]++
		types[r.RunType]++
	}
	pf("  runs %d, by state %s, by type %s\n", len(res.obs.runs), countsOf(states), countsOf(types))
	// Work across daemons (§9): scheduled runs' attempts are admitted by any live daemon.
	leader := map[string]bool{}
	for _, r := range res.obs.runs {
		if r.leaderOwned() {
			leader[r.DAGID+"\x00"+r.RunID] = true
		}
	}
	byDaemon, spread := map[string]int{}, map[string]map[string]bool{}
	for _, a := range res.attempts {
		k := a.key.dag + "\x00" + a.key.run
		if !leader[k] {
			continue
		}
		byDaemon[a.daemon]++
		if spread[k] == nil {
			spread[k] = map[string]bool{}
		}
		spread[k][a.daemon] = true
	}
	several := 0
	for _, ds := range spread {
		if len(ds) > 1 {
			several++
		}
	}
	pf("  attempt processes of scheduled runs by daemon %s; scheduled runs run by several daemons %d of %d\n",
		countsOf(byDaemon), several, len(spread))
	var watched, late []int64
	for _, w := range res.windows {
		if w.watched {
			watched = append(watched, w.ns)
		} else {
			late = append(late, w.ns)
		}
	}
	pf("  exit-time uncertainty (gone - last seen alive) of processes that exited while watched: %s\n", quantiles(watched))
	pf("  ... and of processes already gone when the recorder read their line: %s\n", quantiles(late))
	if len(res.bad) > 0 || len(res.strays) > 0 {
		pf("  unreadable record lines %d, child lines without their leader %d\n", len(res.bad), len(res.strays))
		for i, l := range res.bad {
			if i < 3 {
				pf("    %s\n", l)
			}
		}
	}

	pf("\n-- checks (from the recorded intervals) --\n")
	verdict := func(n int) string {
		if n == 0 {
			return "ok"
		}
		return "VIOLATION"
	}
	for _, pd := range poolDefs {
		n := len(res.over[pd.name])
		pf("  over-capacity instants, pool %s (%s, %d slots): %d  %s  (not ruled out: %d)\n", pd.name, pd.ordering, pd.slots, n,
			verdict(n), len(res.overMaybe[pd.name]))
	}
	pf("  starts whose capacity bound a resize widened (admit-lag %s): %d\n", h.opt.lag, res.nearResize)
	pf("  attempts running twice at once: %d  %s  (not ruled out: %d)\n", len(res.twice), verdict(len(res.twice)), len(res.twiceMaybe))
	for _, d := range sortedKeys(res.atOnce) {
		n := len(res.atOnce[d])
		pf("  runs of %s (max_active_runs 1) at once: %d  %s  (not ruled out: %d)\n", d, n, verdict(n), len(res.atOnceMaybe[d]))
	}
	pf("  attempts of every_node runs run by another daemon than theirs: %d  %s  (every_node runs by daemon: %s)\n",
		len(res.unbound), verdict(len(res.unbound)), countsOf(res.nodeRuns))
	pf("\n-- checks (from the store, after the quiet period) --\n")
	if res.obs.err != nil {
		pf("  store unreadable through the API: %v  VIOLATION\n", res.obs.err)
	}
	pf("  runs not in a final state: %d  %s\n", len(res.notFinal), verdict(len(res.notFinal)))
	pf("  scheduled runs created %s or more after every schedule was removed: %d  %s\n", lateGrace, len(res.late),
		verdict(len(res.late)))
	pf("  acknowledged runs missing from the store: %d  %s\n", len(res.lost), verdict(len(res.lost)))
	pf("  claims held: %d  %s  (pools list occupancy: %s%s)\n", res.obs.claims, verdict(res.obs.claims), countsOf(res.occupied),
		errNote(res.occErr))
	pf("  waiting entries of ended runs: %d  %s\n", len(res.zombies), verdict(len(res.zombies)))
	pf("  orphan processes: %d  %s\n", len(res.orphans), verdict(len(res.orphans)))

	if res.notify != nil {
		reportNotifications(pf, res.notify)
	}
	details(&b, res, t0)
	n := res.violations()
	if n == 0 {
		pf("\nRESULT: PASS (0 violations)\n")
	} else {
		pf("\nRESULT: FAIL (%d violations)\n", n)
	}
	fmt.Print(b.String())
	_ = os.WriteFile(filepath.Join(h.p.dir, "report.txt"), []byte(b.String()), 0o644)
}

// details prints the first violations of each kind with their evidence.
func details(b *strings.Builder, res *result, t0 int64) {
	pf := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	show := func(title string, list []overlap) {
		for i, o := range list {
			if i == 5 {
				pf("    ... %d more\n", len(list)-5)
				break
			}
			pf("  %s at %.3fs: %s\n    starting: %s\n", title, float64(o.at-t0)/1e9, o.what, describe(o.first, t0))
			for _, w := range o.with {
				pf("    alive:    %s\n", describe(w, t0))
			}
		}
	}
	if res.violations() > 0 {
		pf("\n-- evidence (times from the harness start) --\n")
	}
	for _, pd := range poolDefs {
		show("over capacity", res.over[pd.name])
	}
	show("running twice", res.twice)
	for _, d := range sortedKeys(res.atOnce) {
		show("runs at once", res.atOnce[d])
	}
	if len(res.notFinal) > 0 {
		for _, p := range res.obs.board {
			if len(p.Waiting) == 0 {
				continue
			}
			w := p.Waiting[0]
			pf("  pool %s (capacity %d, occupancy %d, %d waiting): head %s of %s/%s%s\n", p.Name, p.Capacity, p.Occupancy,
				len(p.Waiting), w.Label, w.DAGID, w.RunID, reasonText(w))
		}
	}
	shown := evidenceRuns(res.notFinal)
	if len(shown) < len(res.notFinal) {
		pf("  (%d of %d runs not final shown)\n", len(shown), len(res.notFinal))
	}
	for _, r := range shown {
		pf("  not final: %s/%s (%s) %s%s\n", r.DAGID, r.RunID, r.RunType, r.State, optional(r.Reason))
		for _, ti := range res.tis[r.DAGID+"/"+r.RunID] {
			why := optional(ti.Reason)
			if ti.WaitReason != nil {
				why += " — " + ti.WaitReason.Text
			}
			pf("    %-6s %-16s try %d%s\n", ti.TaskID, ti.State, ti.TryNumber, why)
		}
	}
	for i, r := range res.late {
		if i == 3 {
			pf("    ... %d more scheduled runs created in the quiet period\n", len(res.late)-3)
			break
		}
		pf("  created in the quiet period: %s/%s (%s) %s, queued at %.3fs\n", r.DAGID, r.RunID, r.RunType, r.State,
			float64(r.QueuedAt.UnixNano()-t0)/1e9)
	}
	for i, a := range res.unbound {
		if i == 3 {
			pf("    ... %d more attempts of every_node runs on another daemon\n", len(res.unbound)-3)
			break
		}
		pf("  every_node run %s/%s ran try %s on %s\n", a.key.dag, a.key.run, fmt.Sprint(a.key.try), a.daemon)
	}
	for _, a := range res.lost {
		pf("  lost: %s/%s acknowledged by %s\n", a.dag, a.run, a.via)
	}
	for _, p := range res.obs.board {
		for _, c := range p.Holders {
			pf("  claim held: pool %s, %s, %d slots, daemon %s\n", p.Name, c.Label, c.Slots, c.Daemon)
		}
	}
	for _, w := range res.zombies {
		pf("  waiting entry of an ended run: %s (%s/%s)%s\n", w.Label, w.DAGID, w.RunID, reasonText(w))
	}
	for _, t := range res.orphans {
		pf("  orphan: pid %d pgid %d %s: %s\n", t.pid, t.pgid, t.key, t.cmd)
	}
}

func reasonText(w waitingJSON) string {
	if w.Reason == nil {
		return ""
	}
	return ": " + w.Reason.Text
}

func optional(s *string) string {
	if s == nil || *s == "" {
		return ""
	}
	return " (" + *s + ")"
}

func countsOf(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func quantiles(ns []int64) string {
	if len(ns) == 0 {
		return "no exits seen"
	}
	s := append([]int64(nil), ns...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	q := func(f float64) time.Duration {
		return time.Duration(s[int(f*float64(len(s)-1))]).Round(10 * time.Microsecond)
	}
	return fmt.Sprintf("median %s, p99 %s, max %s over %d exits", q(0.5), q(0.99), q(1), len(s))
}

// evidenceRuns picks at most 3 runs of each DAG and state, 12 in all.
func evidenceRuns(runs []runJSON) []runJSON {
	per := map[string]int{}
	var out []runJSON
	for _, r := range runs {
		k := r.DAGID + " " + string(r.State)
		if per[k] < 3 && len(out) < 12 {
			per[k]++
			out = append(out, r)
		}
	}
	return out
}
