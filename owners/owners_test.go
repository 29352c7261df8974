package owners

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// t0 is the tests' now.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func owner(id string, kind vocab.OwnerKind, host string, pid int, lease time.Time) store.Owner {
	return store.Owner{ID: id, Kind: kind, Host: host, PID: pid, Epoch: 1, StartedAt: t0.Add(-time.Hour),
		Heartbeat: lease.Add(-30 * time.Second), LeaseUntil: lease}
}

// TestOwnerAlive: the lease decides for another host; on this host a process that is gone is
// dead at once, lease or not.
func TestOwnerAlive(t *testing.T) {
	t.Parallel()
	running := func(pid int) Check { return func(o store.Owner) bool { return o.PID == pid } }
	cases := []struct {
		name string
		o    store.Owner
		want bool
	}{
		{"lease running, process running here", owner("a", vocab.OwnerDaemon, "here", 10, t0.Add(time.Second)), true},
		{"lease running, process gone here", owner("a", vocab.OwnerDaemon, "here", 11, t0.Add(time.Second)), false},
		{"lease running, other host", owner("a", vocab.OwnerDaemon, "there", 11, t0.Add(time.Second)), true},
		{"lease ended, other host", owner("a", vocab.OwnerDaemon, "there", 10, t0), false},
		{"lease ended, process running here (stuck)", owner("a", vocab.OwnerDaemon, "here", 10, t0.Add(-time.Second)), false},
		{"released at a clean stop", owner("a", vocab.OwnerTest, "here", 10, t0), false},
	}
	for _, tc := range cases {
		if got := Alive(tc.o, t0, "here", running(10)); got != tc.want {
			t.Errorf("%s: alive = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRunFate: what a daemon does with each open run, by owner, liveness and run type: a
// leader-owned run of another live serve daemon is shared with every serve daemon (§9), never
// with a dags test process; manual and test runs stay with their owner.
func TestRunFate(t *testing.T) {
	t.Parallel()
	owners := []store.Owner{
		owner("me", vocab.OwnerDaemon, "h", 1, t0.Add(time.Minute)),
		owner("live", vocab.OwnerDaemon, "h", 2, t0.Add(time.Minute)),
		owner("dead", vocab.OwnerDaemon, "h", 3, t0.Add(-time.Minute)),
		owner("test:h:4", vocab.OwnerTest, "h", 4, t0.Add(time.Minute)),
	}
	v := NewView(owners, "me", t0, "h", func(store.Owner) bool { return true })
	cases := []struct {
		owner   string
		runType vocab.RunType
		serve   bool
		want    Fate
	}{
		{"me", "manual", true, Mine}, {"", "manual", true, Take}, {"", "manual", false, Foreign},
		{"live", "manual", true, Foreign}, {"dead", "manual", true, Away}, {"dead", "manual", false, Away},
		{"unknown", "manual", true, Away},
		{"me", "schedule", true, Mine}, {"live", "schedule", true, Shared}, {"live", "catchup", true, Shared},
		{"live", "schedule", false, Foreign}, {"live", "test", true, Foreign},
		{"test:h:4", "test", true, Foreign}, {"test:h:4", "schedule", true, Foreign},
		{"dead", "schedule", true, Away},
	}
	for _, tc := range cases {
		if got := FateOf(store.Run{Owner: tc.owner, RunType: tc.runType}, "me", tc.serve, v); got != tc.want {
			t.Errorf("owner %q %s run, serve %v: fate %d, want %d", tc.owner, tc.runType, tc.serve, got, tc.want)
		}
	}
}

// TestPlanTakeovers: a dead owner on this host is reaped first; once reaped (or on another
// host) it is taken over, by a serve daemon completely; handled and live owners are left alone.
func TestPlanTakeovers(t *testing.T) {
	t.Parallel()
	handled := owner("handled", vocab.OwnerDaemon, "h", 4, t0.Add(-time.Minute))
	handled.HandledEpoch = 1
	owners := []store.Owner{
		owner("me", vocab.OwnerDaemon, "h", 1, t0.Add(time.Minute)),
		owner("live", vocab.OwnerDaemon, "h", 2, t0.Add(time.Minute)),
		owner("here", vocab.OwnerDaemon, "h", 3, t0.Add(-time.Minute)),
		owner("there", vocab.OwnerTest, "far", 3, t0.Add(-time.Minute)),
		handled,
	}
	v := NewView(owners, "me", t0, "h", func(store.Owner) bool { return true })
	plan := func(serve bool, reaped map[string]int64) []string {
		var out []string
		for _, tk := range PlanTakeovers(v, "me", serve, "h", reaped) {
			out = append(out, tk.Owner.ID+map[bool]string{true: "/reap", false: ""}[tk.Reap]+
				map[bool]string{true: "/adopt", false: ""}[tk.Adopt])
		}
		return out
	}
	if got, want := plan(true, nil), []string{"here/reap/adopt", "there/adopt"}; !reflect.DeepEqual(got, want) {
		t.Errorf("serve, nothing reaped: %v, want %v", got, want)
	}
	if got, want := plan(true, map[string]int64{"here": 1}), []string{"here/adopt", "there/adopt"}; !reflect.DeepEqual(got, want) {
		t.Errorf("serve, here reaped: %v, want %v", got, want)
	}
	if got, want := plan(false, map[string]int64{"here": 1}), []string{"here", "there"}; !reflect.DeepEqual(got, want) {
		t.Errorf("dags test: %v, want %v", got, want)
	}
	if got := CommandOwners(v, "me", true); !reflect.DeepEqual(got, []string{"me", "handled"}) {
		t.Errorf("command owners %v", got)
	}
}

// TestCommandTarget: a live owner applies its commands, a live daemon those of a dead owner,
// and nobody alive is a clear refusal naming the dead owner.
func TestCommandTarget(t *testing.T) {
	t.Parallel()
	now := time.Now()
	dead := owner("dead", vocab.OwnerDaemon, "elsewhere", 3, now.Add(-time.Minute))
	live := owner("live", vocab.OwnerDaemon, "elsewhere", 4, now.Add(time.Minute))
	test := owner("test:x:5", vocab.OwnerTest, "elsewhere", 5, now.Add(time.Minute))
	run := store.Run{RunID: "r", Owner: "dead"}
	if who, ok, _ := CommandTarget(run, vocab.CommandClear, []store.Owner{dead, live}, now, "here"); !ok || who != "live" {
		t.Errorf("dead owner, live daemon: %s %v", who, ok)
	}
	if who, ok, _ := CommandTarget(store.Run{Owner: "test:x:5"}, vocab.CommandFail, []store.Owner{test}, now, "here"); !ok || who != "test:x:5" {
		t.Errorf("live test owner: %s %v", who, ok)
	}
	_, ok, why := CommandTarget(run, vocab.CommandClear, []store.Owner{dead, test}, now, "here")
	if ok || !strings.Contains(why, "no daemon is alive") || !strings.Contains(why, "belongs to dead (pid 3") {
		t.Errorf("nobody alive: %v %q", ok, why)
	}
	// An every_node run stays with the daemon that fired it (§9): with that daemon away, a clear
	// or a mark is refused naming it, while a deletion goes to any live daemon.
	node := store.Run{RunID: "node__x__dead-1", RunType: vocab.RunNode, Owner: "dead"}
	for _, kind := range []vocab.CommandKind{vocab.CommandClear, vocab.CommandMark} {
		who, ok, why := CommandTarget(node, kind, []store.Owner{dead, live}, now, "here")
		if ok || who != "dead" || !strings.Contains(why, "bound to daemon dead, which is not live") {
			t.Errorf("%s of a node run of a dead daemon: %s %v %q", kind, who, ok, why)
		}
	}
	if who, ok, _ := CommandTarget(node, vocab.CommandDelete, []store.Owner{dead, live}, now, "here"); !ok || who != "live" {
		t.Errorf("delete of a node run of a dead daemon: %s %v", who, ok)
	}
	node.Owner = "live"
	if who, ok, _ := CommandTarget(node, vocab.CommandClear, []store.Owner{dead, live}, now, "here"); !ok || who != "live" {
		t.Errorf("clear of a node run of a live daemon: %s %v", who, ok)
	}
}

// TestOwnerLiveError names the live process.
func TestOwnerLiveError(t *testing.T) {
	t.Parallel()
	err := error(&LiveError{Owner: owner("d", vocab.OwnerDaemon, "h", 77, t0)})
	if !errors.Is(err, ErrLive) || !strings.Contains(err.Error(), "pid 77 on host h since") {
		t.Fatalf("%v", err)
	}
}
