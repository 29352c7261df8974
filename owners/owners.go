// Package owners decides who is alive among the processes that own work (§9) and what happens
// to the work of the dead. Every process that can own runs, entries and claims — a serve daemon
// or a dags test process — has an owner row with a lease it renews with its heartbeat; the
// functions here decide from those rows alone (and, for an owner on this host, whether its
// process still runs): who is alive (View), what a daemon does with an open run (FateOf), which
// dead owners' ends it handles (PlanTakeovers), and who applies an operator command
// (CommandTarget). The daemon, the read model (package explain), the API and the CLI all ask
// here, so they agree.
package owners

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// ErrLive refuses a start whose owner id is held by a live process.
var ErrLive = errors.New("owner id is held by a live process")

// LiveError names the live process that holds an owner id.
type LiveError struct{ Owner store.Owner }

func (e *LiveError) Error() string {
	o := e.Owner
	return fmt.Sprintf("daemon id %q is held by a live %s: pid %d on host %s since %s (lease until %s); "+
		"stop it, or start this one with another --daemon-id", o.ID, kindName(o.Kind), o.PID, orUnknown(o.Host),
		o.StartedAt.Format(time.RFC3339), o.LeaseUntil.Format(time.RFC3339))
}

func (e *LiveError) Unwrap() error { return ErrLive }

func kindName(k vocab.OwnerKind) string {
	if k == vocab.OwnerTest {
		return "dags test process"
	}
	return "daemon"
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// Check says whether an owner's process still runs on this host.
type Check func(o store.Owner) bool

// Alive decides whether o is alive at now as seen from host: its lease must still run, and
// when it lives on this host its process must still exist (a process killed with -9 is known
// dead at once, without waiting for its lease).
func Alive(o store.Owner, now time.Time, host string, proc Check) bool {
	if !o.LeaseUntil.After(now) {
		return false
	}
	if o.Host == host && proc != nil && !proc(o) {
		return false
	}
	return true
}

// View is the liveness of every owner as one pass sees it. Its methods accept a nil view.
type View struct {
	Owners map[string]store.Owner
	alive  map[string]bool
	// Sig summarizes the alive and handled flags: memory built under another view is rebuilt.
	Sig string
	// NextExpiry is the earliest lease end of a live owner other than self: the loop checks
	// again then.
	NextExpiry time.Time
}

// NewView is the liveness of owners at now, seen by self (always alive) on host.
func NewView(owners []store.Owner, self string, now time.Time, host string, proc Check) *View {
	v := &View{Owners: map[string]store.Owner{}, alive: map[string]bool{}}
	var b strings.Builder
	for _, o := range owners {
		v.Owners[o.ID] = o
		alive := o.ID == self || Alive(o, now, host, proc)
		v.alive[o.ID] = alive
		fmt.Fprintf(&b, "%s/%d/%t/%t;", o.ID, o.Epoch, alive, v.Handled(o.ID))
		if alive && o.ID != self && (v.NextExpiry.IsZero() || o.LeaseUntil.Before(v.NextExpiry)) {
			v.NextExpiry = o.LeaseUntil
		}
	}
	v.Sig = b.String()
	return v
}

// IsAlive reports whether owner id is alive. An id with no row (a run or claim written before
// owners existed) counts as dead. A nil view (no check yet) takes every owner for alive, so
// nothing of theirs is touched.
func (v *View) IsAlive(id string) bool { return v == nil || v.alive[id] }

// Known reports whether owner id has a row (a nil view knows everyone).
func (v *View) Known(id string) bool {
	if v == nil {
		return true
	}
	_, ok := v.Owners[id]
	return ok
}

// IsDaemon reports whether owner id is a serve daemon (not a dags test process).
func (v *View) IsDaemon(id string) bool {
	if v == nil {
		return false
	}
	o, ok := v.Owners[id]
	return ok && o.Kind == vocab.OwnerDaemon
}

// Handled reports whether the end of owner id's current epoch has been handled by a live
// daemon (its claims released, its leader-owned runs moved), or it has no row at all.
func (v *View) Handled(id string) bool {
	if v == nil {
		return false
	}
	o, ok := v.Owners[id]
	return !ok || o.HandledEpoch >= o.Epoch
}

// AwayText is the wait reason of an entry bound to a dead owner.
func (v *View) AwayText(id string) string {
	var o store.Owner
	ok := false
	if v != nil {
		o, ok = v.Owners[id]
	}
	if !ok {
		return fmt.Sprintf("waiting: node unavailable (bound to %s, which is gone)", id)
	}
	return fmt.Sprintf("waiting: node unavailable (bound to %s, gone since %s)", id, o.Heartbeat.Format(time.RFC3339))
}

// Fate is what a daemon does with an open run.
type Fate int

const (
	Mine    Fate = iota // this owner runs it
	Take                // nobody owns it yet (dags trigger): this daemon takes it
	Foreign             // a live owner runs it: counted, its entries keep their room
	Away                // bound to a dead owner: its entries wait node_unavailable and hold no room
	// Shared: a leader-owned run of another live serve daemon. Its owner alone advances it;
	// its ready entries are admitted by whichever live daemon has room (§9), this one too.
	Shared
)

// FateOf decides what a daemon self does with run r. serve is false for a dags test process,
// which takes nothing and admits nothing but its own run. Leader-owned runs of a dead owner are
// moved by the takeover before this is asked, so a run of a dead owner here is bound to it. A
// leader-owned run of another live serve daemon is shared: admitted here too.
func FateOf(r store.Run, self string, serve bool, v *View) Fate {
	switch {
	case r.Owner == self:
		return Mine
	case r.Owner == "":
		if serve {
			return Take
		}
		return Foreign
	case v.IsAlive(r.Owner):
		if serve && r.RunType.LeaderOwned() && v.IsDaemon(r.Owner) {
			return Shared
		}
		return Foreign
	}
	return Away
}

// LeaderOwned are the run types that move to a live daemon when their owner dies
// (vocab.RunType.LeaderOwned); the others stay bound to their owner.
var LeaderOwned = []vocab.RunType{vocab.RunSchedule, vocab.RunCatchup, vocab.RunBackfill}

// Takeover is what to do about one dead owner.
type Takeover struct {
	Owner store.Owner
	// Reap: its processes on this host must be killed and confirmed gone before its claims are
	// released.
	Reap bool
	// Adopt: this daemon moves its leader-owned runs here and marks its end handled.
	Adopt bool
}

// PlanTakeovers lists the dead owners whose end still needs handling by self, in id order.
// reaped holds, per owner, the epoch whose processes this daemon has confirmed gone. A serve
// daemon handles a dead owner completely (and marks it handled); a dags test process only
// releases what blocks it (claims, dead test runs) and leaves the rest to a daemon.
func PlanTakeovers(v *View, self string, serve bool, host string, reaped map[string]int64) []Takeover {
	var out []Takeover
	if v == nil {
		return nil
	}
	for id, o := range v.Owners {
		if id == self || v.alive[id] || v.Handled(id) {
			continue
		}
		t := Takeover{Owner: o, Adopt: serve}
		t.Reap = o.Host == host && reaped[id] < o.Epoch
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Owner.ID < out[j].Owner.ID })
	return out
}

// CommandOwners are the owners whose runs' commands self applies: its own, and a serve daemon
// also those of every dead owner whose end is handled (their bound runs are in its memory).
func CommandOwners(v *View, self string, serve bool) []string {
	out := []string{self}
	if !serve || v == nil {
		return out
	}
	for id := range v.Owners {
		if id != self && !v.alive[id] && v.Handled(id) {
			out = append(out, id)
		}
	}
	sort.Strings(out[1:])
	return out
}

// CommandTarget says who will apply an operator command of kind on run, from the owner rows at
// now as seen from host (the CLI and the API ask before they queue one): the run's owner when it
// is alive, else any live daemon. An every_node run is bound to the daemon that fired it (§9):
// only that daemon clears or marks it, so with its daemon away only a deletion goes to another.
// ok is false, with the reason in words, when nobody alive can.
func CommandTarget(run store.Run, kind vocab.CommandKind, owners []store.Owner, now time.Time, host string) (who string, ok bool, why string) {
	v := NewView(owners, "", now, host, ProcessAlive)
	if run.Owner != "" && v.IsAlive(run.Owner) {
		return run.Owner, true, ""
	}
	if run.RunType == vocab.RunNode && run.Owner != "" && kind != vocab.CommandDelete {
		return run.Owner, false, fmt.Sprintf("run %s is an every_node run bound to daemon %s, which is not live: "+
			"only that daemon runs it; start it again (or delete the run)", run.RunID, run.Owner)
	}
	var live []string
	for _, o := range owners {
		if o.Kind == vocab.OwnerDaemon && v.IsAlive(o.ID) {
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
	if o, has := v.Owners[run.Owner]; has {
		return who, false, fmt.Sprintf("no daemon is alive to apply it: run %s belongs to %s (pid %d on host %s), gone since %s; "+
			"start poolflow serve", run.RunID, o.ID, o.PID, orUnknown(o.Host), o.Heartbeat.Format(time.RFC3339))
	}
	return who, false, fmt.Sprintf("no daemon is alive to apply it (run %s); start poolflow serve", run.RunID)
}
