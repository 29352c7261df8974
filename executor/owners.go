package executor

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Owners and liveness (§9). Every process that can own work — a serve daemon or a dags test
// process — has an owner row with a lease it renews with its heartbeat. The functions in this
// file decide, from those rows alone, who is alive and what happens to the work of the dead;
// the loop applies the decisions in its pass (takeover.go).

// ErrOwnerLive refuses a start whose owner id is held by a live process.
var ErrOwnerLive = errors.New("owner id is held by a live process")

// OwnerLiveError names the live process that holds an owner id.
type OwnerLiveError struct{ Owner store.Owner }

func (e *OwnerLiveError) Error() string {
	o := e.Owner
	return fmt.Sprintf("daemon id %q is held by a live %s: pid %d on host %s since %s (lease until %s); "+
		"stop it, or start this one with another --daemon-id", o.ID, kindName(o.Kind), o.PID, orDefault(o.Host, "?"),
		o.StartedAt.Format(time.RFC3339), o.LeaseUntil.Format(time.RFC3339))
}

func (e *OwnerLiveError) Unwrap() error { return ErrOwnerLive }

func kindName(k vocab.OwnerKind) string {
	if k == vocab.OwnerTest {
		return "dags test process"
	}
	return "daemon"
}

// procCheck says whether an owner's process still runs on this host.
type procCheck func(o store.Owner) bool

// ownerAlive decides whether o is alive at now as seen from host: its lease must still run, and
// when it lives on this host its process must still exist (a process killed with -9 is known
// dead at once, without waiting for its lease).
func ownerAlive(o store.Owner, now time.Time, host string, proc procCheck) bool {
	if !o.LeaseUntil.After(now) {
		return false
	}
	if o.Host == host && proc != nil && !proc(o) {
		return false
	}
	return true
}

// ownerView is the liveness of every owner as one pass sees it. Its methods accept a nil view.
type ownerView struct {
	owners map[string]store.Owner
	alive  map[string]bool
	// sig summarizes alive and handled flags: memory built under another view is rebuilt.
	sig string
	// nextExpiry is the earliest lease end of a live owner other than self: the loop checks
	// again then.
	nextExpiry time.Time
}

func newOwnerView(owners []store.Owner, self string, now time.Time, host string, proc procCheck) *ownerView {
	v := &ownerView{owners: map[string]store.Owner{}, alive: map[string]bool{}}
	var b strings.Builder
	for _, o := range owners {
		v.owners[o.ID] = o
		alive := o.ID == self || ownerAlive(o, now, host, proc)
		v.alive[o.ID] = alive
		fmt.Fprintf(&b, "%s/%d/%t/%t;", o.ID, o.Epoch, alive, v.handled(o.ID))
		if alive && o.ID != self && (v.nextExpiry.IsZero() || o.LeaseUntil.Before(v.nextExpiry)) {
			v.nextExpiry = o.LeaseUntil
		}
	}
	v.sig = b.String()
	return v
}

// isAlive reports whether owner id is alive. An id with no row (a run or claim written before
// owners existed) counts as dead.
// A nil view (no check yet) takes every owner for alive, so nothing of theirs is touched.
func (v *ownerView) isAlive(id string) bool { return v == nil || v.alive[id] }

// isDaemon reports whether owner id is a serve daemon (not a dags test process).
func (v *ownerView) isDaemon(id string) bool {
	if v == nil {
		return false
	}
	o, ok := v.owners[id]
	return ok && o.Kind == vocab.OwnerDaemon
}

// handled reports whether the end of owner id's current epoch has been handled by a live
// daemon (its claims released, its leader-owned runs moved), or it has no row at all.
func (v *ownerView) handled(id string) bool {
	if v == nil {
		return false
	}
	o, ok := v.owners[id]
	return !ok || o.HandledEpoch >= o.Epoch
}

// awayText is the wait reason of an entry bound to a dead owner.
func (v *ownerView) awayText(id string) string {
	o, ok := v.owners[id] // a nil map reads as empty
	if !ok {
		return fmt.Sprintf("waiting: node unavailable (bound to %s, which is gone)", id)
	}
	return fmt.Sprintf("waiting: node unavailable (bound to %s, gone since %s)", id, o.Heartbeat.Format(time.RFC3339))
}

// runFate is what a daemon does with an open run.
type runFate int

const (
	fateMine    runFate = iota // this owner runs it
	fateTake                   // nobody owns it yet (dags trigger): this daemon takes it
	fateForeign                // a live owner runs it: counted, its entries keep their room
	fateAway                   // bound to a dead owner: its entries wait node_unavailable and hold no room
	// fateShared: a leader-owned run of another live serve daemon. Its owner alone advances it;
	// its ready entries are admitted by whichever live daemon has room (§9), this one too.
	fateShared
)

// runFateOf decides what a daemon self does with run r. serve is false for a dags test
// process, which takes nothing and admits nothing but its own run. Leader-owned runs of a dead
// owner are moved by the takeover before this is asked, so a run of a dead owner here is bound
// to it. A leader-owned run of another live serve daemon is shared: admitted here too.
func runFateOf(r store.Run, self string, serve bool, v *ownerView) runFate {
	switch {
	case r.Owner == self:
		return fateMine
	case r.Owner == "":
		if serve {
			return fateTake
		}
		return fateForeign
	case v.isAlive(r.Owner):
		if serve && r.RunType.LeaderOwned() && v.isDaemon(r.Owner) {
			return fateShared
		}
		return fateForeign
	}
	return fateAway
}

// leaderOwned run types move to a live daemon when their owner dies; the others stay bound.
var leaderOwned = []vocab.RunType{vocab.RunSchedule, vocab.RunCatchup}

// takeover is what to do about one dead owner.
type takeover struct {
	owner store.Owner
	// reap: its processes on this host must be killed and confirmed gone before its claims are
	// released.
	reap bool
	// adopt: this daemon moves its leader-owned runs here and marks its end handled.
	adopt bool
}

// planTakeovers lists the dead owners whose end still needs handling by self, in id order.
// reaped holds, per owner, the epoch whose processes this daemon has confirmed gone. A serve
// daemon handles a dead owner completely (and marks it handled); a dags test process only
// releases what blocks it (claims, dead test runs) and leaves the rest to a daemon.
func planTakeovers(v *ownerView, self string, serve bool, host string, reaped map[string]int64) []takeover {
	var out []takeover
	if v == nil {
		return nil
	}
	for id, o := range v.owners {
		if id == self || v.alive[id] || v.handled(id) {
			continue
		}
		t := takeover{owner: o, adopt: serve}
		t.reap = o.Host == host && reaped[id] < o.Epoch
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].owner.ID < out[j].owner.ID })
	return out
}

// commandOwners are the owners whose runs' commands self applies: its own, and a serve daemon
// also those of every dead owner whose end is handled (their bound runs are in its memory).
func commandOwners(v *ownerView, self string, serve bool) []string {
	out := []string{self}
	if !serve || v == nil {
		return out
	}
	for id := range v.owners {
		if id != self && !v.alive[id] && v.handled(id) {
			out = append(out, id)
		}
	}
	sort.Strings(out[1:])
	return out
}

// CommandTarget says who will apply an operator command on run, from the owner rows at now as
// seen from host (the CLI and the API ask before they queue one): the run's owner when it is
// alive, else any live daemon. ok is false, with the reason in words, when nobody alive can.
func CommandTarget(run store.Run, owners []store.Owner, now time.Time, host string) (who string, ok bool, why string) {
	v := newOwnerView(owners, "", now, host, processAliveOwner)
	if run.Owner != "" && v.isAlive(run.Owner) {
		return run.Owner, true, ""
	}
	var live []string
	for _, o := range owners {
		if o.Kind == vocab.OwnerDaemon && v.isAlive(o.ID) {
			live = append(live, o.ID)
		}
	}
	sort.Strings(live)
	if len(live) > 0 {
		return live[0], true, ""
	}
	who = "nobody"
	if run.Owner != "" {
		who = run.Owner
	}
	if o, has := v.owners[run.Owner]; has {
		return who, false, fmt.Sprintf("no daemon is alive to apply it: run %s belongs to %s (pid %d on host %s), gone since %s; "+
			"start poolflow serve", run.RunID, o.ID, o.PID, orDefault(o.Host, "?"), o.Heartbeat.Format(time.RFC3339))
	}
	return who, false, fmt.Sprintf("no daemon is alive to apply it (run %s); start poolflow serve", run.RunID)
}
