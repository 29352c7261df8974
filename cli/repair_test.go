package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// notices passes a daemon's notices to a test.
type notices chan executor.Notice

func (n notices) notify(x executor.Notice) {
	select {
	case n <- x:
	default:
	}
}

// runEnded waits for the notice that run of dagID ended and returns its state.
func (n notices) runEnded(t *testing.T, dagID, runID string) vocab.RunState {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case x := <-n:
			if x.Kind == executor.NoticeRunEnded && x.DAGID == dagID && x.RunID == runID {
				return vocab.RunState(x.State)
			}
		case <-timeout:
			t.Fatalf("run %s of %s did not end", runID, dagID)
		}
	}
}

// attemptEnded waits for the end of an attempt of task.
func (n notices) attemptEnded(t *testing.T, dagID, runID, task string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case x := <-n:
			if x.Kind == executor.NoticeAttemptEnded && x.DAGID == dagID && x.RunID == runID && x.TaskID == task {
				return
			}
		case <-timeout:
			t.Fatalf("no attempt of %s ended", task)
		}
	}
}

// TestRepairCommands: tasks clear (its dry run's table, then the clear), tasks mark, notes,
// dags mark-run and delete-run against a daemon, each leaving its event with the CLI's actor;
// refusals name what they refuse and leave theirs; usage errors exit 2 and leave none.
func TestRepairCommands(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "fixed")
	p := newProject(t, poolsYAML, map[string]string{
		"fix.yaml": "tasks:\n  - {id: a, bash: 'test -f " + marker + "', pool_requirements: {db: 1}}\n" +
			"  - {id: b, bash: 'true', depends_on: [a]}\n  - {id: c, bash: 'true'}\n",
		"mk.yaml": "tasks:\n  - {id: a, bash: 'exit 1', retries: 1, retry_delay: 1h}\n  - {id: b, bash: 'true', depends_on: [a]}\n",
	})
	n := make(notices, 1000)
	_, st := p.daemon(t, "cli-repair", n.notify)
	ctx := context.Background()
	must := func(want string, args ...string) string {
		t.Helper()
		out, errOut, code := p.run(args...)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("poolflow %v: exit %d\n%s%s\nwant %q", args, code, out, errOut, want)
		}
		return out
	}
	must("created run r1", "dags", "trigger", "fix", "--run-id", "r1")
	if st := n.runEnded(t, "fix", "r1"); st != vocab.RunFailed {
		t.Fatalf("fix ended %s", st)
	}

	out := must("nothing was changed", "tasks", "clear", "fix", "r1", "a", "--downstream", "--dry-run")
	lines := strings.Split(out, "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "TASK") ||
		strings.Join(strings.Fields(lines[1]), " ") != "a failed 2 db=1 admitted at once" ||
		strings.Join(strings.Fields(lines[2]), " ") != "b upstream_failed 1 default=1 would wait: waits for upstream a" {
		t.Fatalf("dry run:\n%s", out)
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	must("cleared task instances a, b in run r1 of dag fix", "tasks", "clear", "fix", "r1", "a", "--downstream", "--note", "db fixed")
	if st := n.runEnded(t, "fix", "r1"); st != vocab.RunSuccess {
		t.Fatalf("fix ended %s after the clear", st)
	}
	run, err := st.GetRun(ctx, "fix", "r1")
	if err != nil {
		t.Fatal(err)
	}
	tis, _ := st.ListTaskInstances(ctx, run.PK)
	for _, ti := range tis {
		want := map[string]int{"a": 2, "b": 1, "c": 1}[ti.TaskID]
		if ti.State != vocab.TaskSuccess || ti.TryNumber != want {
			t.Errorf("%s: %s try %d, want success try %d", ti.TaskID, ti.State, ti.TryNumber, want)
		}
		if ti.TaskID == "a" && (ti.Note != "db fixed" || !strings.HasPrefix(ti.NoteBy, "cli:")) {
			t.Errorf("a's note %q by %q", ti.Note, ti.NoteBy)
		}
	}

	must("created run m1", "dags", "trigger", "mk", "--run-id", "m1")
	n.attemptEnded(t, "mk", "m1", "a") // try 1 failed: a waits an hour for its retry
	must("marked task instance a success in run m1 of dag mk", "tasks", "mark", "mk", "m1", "a", "--state", "success")
	if st := n.runEnded(t, "mk", "m1"); st != vocab.RunSuccess {
		t.Fatalf("mk ended %s after a was marked success", st)
	}
	must("note of b in run m1 of dag mk written", "tasks", "note", "mk", "m1", "b", "ran after the mark")
	must("note of run m1 of dag mk written", "tasks", "note", "mk", "m1", "checked by hand")
	must("marked failed in run m1 of dag mk", "dags", "mark-run", "mk", "m1", "--state", "failed")
	if r, _ := st.GetRun(ctx, "mk", "m1"); r.State != vocab.RunFailed || r.Note != "checked by hand" {
		t.Errorf("mk's run after mark-run: %s, note %q", r.State, r.Note)
	}
	must("run m1 of dag mk deleted", "dags", "delete-run", "mk", "m1")
	if _, err := st.GetRun(ctx, "mk", "m1"); err == nil {
		t.Error("m1 is still there")
	}

	// Refusals name what they refuse and are recorded; usage errors are not.
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"tasks", "clear", "fix", "nosuch"}, 1, "run nosuch of dag fix: not found"},
		{[]string{"tasks", "clear", "fix", "r1", "zz"}, 1, "task zz of dag run r1"},
		{[]string{"tasks", "mark", "fix", "r1", "a", "--state", "running"}, 2, `--state "running"`},
		{[]string{"tasks", "clear", "fix", "r1", "--only-failed", "--only-running"}, 2, "select nothing"},
		{[]string{"dags", "mark-run", "fix", "r1", "--state", "up"}, 2, `--state "up"`},
		{[]string{"events", "list", "--event", "nope"}, 2, `--event "nope"`},
		{[]string{"events", "list", "--after", "soon"}, 2, `--after "soon"`},
	} {
		out, errOut, code := p.run(tt.args...)
		if code != tt.code || !strings.Contains(errOut, tt.want) {
			t.Errorf("poolflow %v: exit %d %s%s, want %d with %q", tt.args, code, out, errOut, tt.code, tt.want)
		}
	}

	out = must(`"event_logs"`, "events", "list", "-o", "json", "--limit", "1000")
	var got struct {
		Events []server.EventLogJSON `json:"event_logs"`
		Total  int                   `json:"total_entries"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for i := len(got.Events) - 1; i >= 0; i-- {
		e := got.Events[i]
		if !strings.HasPrefix(e.Owner, "cli:") || !strings.Contains(e.Owner, "@") {
			continue
		}
		what := string(e.Event)
		if e.Outcome != "ok" {
			what += " refused"
		}
		seen = append(seen, what)
	}
	want := "clear, note, mark, note, note, mark, delete_run, clear refused, clear refused"
	if strings.Join(seen, ", ") != want {
		t.Errorf("the CLI's events, oldest first:\n%s\nwant\n%s", strings.Join(seen, ", "), want)
	}
	if out := must("ACTOR", "events", "list", "--dag", "mk", "--event", "note"); strings.Count(out, "\n") != 3 {
		t.Errorf("events list --dag mk --event note:\n%s", out)
	}
}

// TestPauseAndPoolsAreAudited: pause and pools set/delete write their events with the change,
// and a refused pool deletion its refusal.
func TestPauseAndPoolsAreAudited(t *testing.T) {
	t.Parallel()
	p := newProject(t, poolsYAML, map[string]string{"d.yaml": "tasks:\n  - {id: a, bash: 'true', pool_requirements: {db: 1}}\n"})
	for _, args := range [][]string{{"store", "migrate"}, {"dags", "pause", "d"}, {"dags", "unpause", "d"},
		{"pools", "set", "extra", "--slots", "2"}, {"pools", "delete", "extra"}} {
		if out, errOut, code := p.run(args...); code != 0 {
			t.Fatalf("poolflow %v: %d %s%s", args, code, out, errOut)
		}
	}
	if _, errOut, code := p.run("pools", "delete", "db"); code != 1 || !strings.Contains(errOut, "poolflow.yaml") {
		t.Fatalf("delete of a file pool: %d %s", code, errOut)
	}
	st, err := store.Open(context.Background(), filepath.Join(p.state, "poolflow.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	evs, _, err := st.ListEvents(context.Background(), store.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		got = append(got, string(e.Action)+" "+e.DAGID+e.Pool+" "+e.Params+" "+map[bool]string{true: "ok", false: "refused"}[e.Outcome == "ok"])
	}
	want := []string{"pause d  ok", "unpause d  ok", `pool_set extra {"slots":"2"} ok`, "pool_delete extra  ok", "pool_delete db  refused"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
