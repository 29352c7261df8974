package vocab

import (
	"slices"
	"testing"
)

// TestLists checks that every list holds distinct valid values and that Terminal and Open split
// the states.
func TestLists(t *testing.T) {
	t.Parallel()
	distinct := func(name string, vs []string) {
		t.Helper()
		seen := map[string]bool{}
		for _, v := range vs {
			if v == "" || seen[v] {
				t.Errorf("%s: value %q empty or repeated", name, v)
			}
			seen[v] = true
		}
	}
	distinct("task states", Strings(TaskStates()))
	distinct("run states", Strings(RunStates()))
	distinct("entry states", Strings(EntryStates()))
	distinct("run types", Strings(RunTypes()))
	distinct("run type words", RunTypeWords())
	distinct("command kinds", Strings(CommandKinds()))
	distinct("orderings", Strings(Orderings()))
	distinct("resize policies", Strings(OnResizes()))
	distinct("owner kinds", Strings(OwnerKinds()))
	distinct("reason codes", Strings(ReasonCodes()))
	distinct("backfill states", Strings(BackfillStates()))
	distinct("reprocess behaviours", Strings(Reprocesses()))
	distinct("backfill actions", Strings(BackfillActions()))
	for _, s := range BackfillStates() {
		if !s.Valid() || s.Terminal() == s.Open() {
			t.Errorf("backfill state %s: valid %v, terminal %v, open %v", s, s.Valid(), s.Terminal(), s.Open())
		}
	}

	for _, s := range TaskStates() {
		if !s.Valid() || s.Terminal() == s.Open() {
			t.Errorf("task state %s: valid %v, terminal %v, open %v", s, s.Valid(), s.Terminal(), s.Open())
		}
	}
	for _, s := range RunStates() {
		if !s.Valid() || s.Terminal() == s.Open() {
			t.Errorf("run state %s: valid %v, terminal %v, open %v", s, s.Valid(), s.Terminal(), s.Open())
		}
	}
	for _, s := range EntryStates() {
		if !s.Valid() || s.Terminal() == s.Open() {
			t.Errorf("entry state %s: valid %v, terminal %v, open %v", s, s.Valid(), s.Terminal(), s.Open())
		}
	}
	for _, bad := range []string{"", "Running", "unknown"} {
		if TaskState(bad).Valid() || TaskState(bad).Open() || TaskState(bad).Terminal() ||
			EntryState(bad).Terminal() || RunState(bad).Valid() || ReasonCode(bad).Valid() {
			t.Errorf("%q is taken for a value", bad)
		}
	}
	terminal := func(ss []TaskState) (out []TaskState) {
		for _, s := range ss {
			if s.Terminal() {
				out = append(out, s)
			}
		}
		return out
	}
	if got := terminal(TaskStates()); !slices.Equal(got, []TaskState{TaskSuccess, TaskFailed, TaskSkipped, TaskUpstreamFailed}) {
		t.Errorf("terminal task states %v", got)
	}
}

// TestCanMove lists the allowed entry moves: nothing leaves a terminal state.
func TestCanMove(t *testing.T) {
	t.Parallel()
	allowed := map[[2]EntryState]bool{
		{EntryWaiting, EntryAdmitted}: true, {EntryAdmitted, EntryWaiting}: true, {EntryAdmitted, EntryDone}: true,
		{EntryWaiting, EntryDone}: true, {EntryWaiting, EntryExpired}: true, {EntryWaiting, EntryCancelled}: true,
		{EntryWaiting, EntryRejected}: true, {EntryWaiting, EntryRetired}: true,
	}
	for _, from := range EntryStates() {
		for _, to := range EntryStates() {
			if got := CanMove(from, to); got != allowed[[2]EntryState{from, to}] {
				t.Errorf("CanMove(%s, %s) = %v", from, to, got)
			}
			if from.Terminal() && CanMove(from, to) {
				t.Errorf("%s is terminal but may become %s", from, to)
			}
			if CanMove(from, to) != slices.Contains(MovesFrom(to), from) {
				t.Errorf("MovesFrom(%s) disagrees with CanMove from %s", to, from)
			}
		}
	}
	if MovesFrom("unknown") != nil {
		t.Error("an unknown state has moves")
	}
}

// TestRunTypeWords checks the API's words for run types and that both spellings parse.
func TestRunTypeWords(t *testing.T) {
	t.Parallel()
	if got := RunTypeWords(); !slices.Equal(got, []string{"scheduled", "catchup", "node", "backfill", "manual", "test"}) {
		t.Errorf("words %v", got)
	}
	for _, rt := range RunTypes() {
		for _, s := range []string{string(rt), rt.Word()} {
			if got, ok := ParseRunType(s); !ok || got != rt {
				t.Errorf("ParseRunType(%q) = %q, %v", s, got, ok)
			}
		}
	}
	if _, ok := ParseRunType("nightly"); ok {
		t.Error("an unknown run type parsed")
	}
	if !RunSchedule.LeaderOwned() || !RunCatchup.LeaderOwned() || !RunBackfill.LeaderOwned() || RunManual.LeaderOwned() ||
		RunTest.LeaderOwned() || RunNode.LeaderOwned() {
		t.Error("LeaderOwned")
	}
	if !RunSchedule.Fired() || !RunCatchup.Fired() || !RunNode.Fired() || RunManual.Fired() || RunTest.Fired() ||
		RunBackfill.Fired() {
		t.Error("Fired")
	}
	if !RunSchedule.Scheduled() || !RunCatchup.Scheduled() || RunBackfill.Scheduled() || RunNode.Scheduled() {
		t.Error("Scheduled")
	}
}

// TestSay checks that the words of a code the text leaves out come before it.
func TestSay(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		code       ReasonCode
		text, want string
	}{
		{ReasonRejected, "pool db: backlog full (max_queued 2)", "rejected: pool db: backlog full (max_queued 2)"},
		{ReasonExpired, "queue_timeout 1s passed while waiting", "expired: queue_timeout 1s passed while waiting"},
		{ReasonRejected, "", "rejected"},
		{ReasonCancelled, "cancelled by operator", "cancelled by operator"},
		{"", "exit status 1", "exit status 1"},
		{ReasonPoolFull, "waiting: pool db is full", "waiting: pool db is full"},
	} {
		if got := c.code.Say(c.text); got != c.want {
			t.Errorf("%s.Say(%q) = %q, want %q", c.code, c.text, got, c.want)
		}
	}
}
