package server

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/vocab"
)

// The repair routes of §10 over one daemon in process: clear with its dry run, mark, notes,
// deletion, and the audit events each leaves with the client's address as its actor
// (httptest's requests come from 192.0.2.1).

// waitNotice waits for the daemon's notice of kind about a task of a run ("" task: any).
func (b *bundle) waitNotice(t testing.TB, kind executor.NoticeKind, dagID, runID, task string) executor.Notice {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case n := <-b.notices:
			if n.Kind == kind && n.DAGID == dagID && n.RunID == runID && (task == "" || n.TaskID == task) {
				return n
			}
		case <-timeout:
			t.Fatalf("no %s notice for %s/%s/%s", kind, dagID, runID, task)
			return executor.Notice{}
		}
	}
}

func (b *bundle) tiStates(t testing.TB, dagID, runID string) map[string]TaskInstanceJSON {
	t.Helper()
	var out taskInstanceCollection
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, "/api/v1/dags/"+dagID+"/dagRuns/"+runID+"/taskInstances", ""), &out); err != nil {
		t.Fatal(err)
	}
	m := map[string]TaskInstanceJSON{}
	for _, ti := range out.TaskInstances {
		m[ti.TaskID] = ti
	}
	return m
}

// failedRun starts a run of fix (a needs db and fails until marker exists, b after a, c alone)
// and waits for it to fail.
func failedRun(t *testing.T, b *bundle, runID string) string {
	t.Helper()
	marker := filepath.Join(b.dir, "fixed-"+runID)
	b.writeDAG(t, "fix_"+runID+".yaml", "dag_id: fix_"+runID+"\ntasks:\n"+
		"  - {id: a, bash: 'test -f "+marker+"', pool_requirements: {db: 1}}\n"+
		"  - {id: b, bash: 'true', depends_on: [a]}\n"+
		"  - {id: c, bash: 'true'}\n")
	b.waitDAG(t, "fix_"+runID)
	if rec := b.trigger(t, "fix_"+runID, runID, ""); rec.Code != http.StatusOK {
		t.Fatalf("trigger: %d %s", rec.Code, rec.Body)
	}
	if st := b.waitRunEnd(t, "fix_"+runID, runID); st != string(vocab.RunFailed) {
		t.Fatalf("run ended %s, want failed", st)
	}
	return marker
}

// TestClearOverAPI: the dry run names what the clear takes and what each would do; the clear
// re-runs the failed task and its downstream with the next try while the third task keeps its
// result, and leaves its audit event with the client as the actor.
func TestClearOverAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken, readsOpen: true})
	marker := failedRun(t, b, "f1")
	before := b.tiStates(t, "fix_f1", "f1")
	clearPath := "/api/v1/dags/fix_f1/clearTaskInstances"

	var preview clearPreviewCollection
	body := `{"dag_run_id": "f1", "task_ids": ["a"], "include_downstream": true}` // dry_run and only_failed: true
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodPost, clearPath, body), &preview); err != nil {
		t.Fatal(err)
	}
	if len(preview.TaskInstances) != 2 {
		t.Fatalf("preview %+v, want a and b", preview.TaskInstances)
	}
	a, bb := preview.TaskInstances[0], preview.TaskInstances[1]
	if a.TaskID != "a" || a.State != vocab.TaskFailed || a.TryNumber != 2 || a.Requirements["db"] != 1 || !a.Admitted ||
		a.WaitReason != nil {
		t.Errorf("preview of a: %+v", a)
	}
	if bb.TaskID != "b" || bb.State != vocab.TaskUpstreamFailed || bb.TryNumber != 1 || bb.Admitted || bb.WaitReason == nil ||
		bb.WaitReason.Code != vocab.ReasonUpstream || bb.WaitReason.Text != "would wait: waits for upstream a" {
		t.Errorf("preview of b: %+v %+v", bb, bb.WaitReason)
	}
	if got := b.tiStates(t, "fix_f1", "f1"); got["a"].State != vocab.TaskFailed {
		t.Fatalf("the dry run changed a: %+v", got["a"])
	}
	if evs := b.events(t, "event=clear"); len(evs) != 0 {
		t.Fatalf("a dry run left events: %+v", evs)
	}

	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var cleared taskInstanceCollection
	body = `{"dag_run_id": "f1", "task_ids": ["a"], "include_downstream": true, "dry_run": false, "note": "db fixed"}`
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodPost, clearPath, body), &cleared); err != nil {
		t.Fatal(err)
	}
	if len(cleared.TaskInstances) != 2 || cleared.TaskInstances[0].TaskID != "a" || cleared.TaskInstances[1].TaskID != "b" {
		t.Fatalf("cleared %+v", cleared.TaskInstances)
	}
	if st := b.waitRunEnd(t, "fix_f1", "f1"); st != string(vocab.RunSuccess) {
		t.Fatalf("the cleared run ended %s", st)
	}
	after := b.tiStates(t, "fix_f1", "f1")
	if a := after["a"]; a.State != vocab.TaskSuccess || a.TryNumber != 2 || a.Note == nil || *a.Note != "db fixed" ||
		a.NoteBy == nil || *a.NoteBy != auth.LegacyActor || a.NoteAt == nil {
		t.Errorf("a after the clear: %+v", a)
	}
	if bb := after["b"]; bb.State != vocab.TaskSuccess || bb.TryNumber != 1 {
		t.Errorf("b after the clear: %s try %d", bb.State, bb.TryNumber)
	}
	if c := after["c"]; c.State != vocab.TaskSuccess || c.TryNumber != 1 || !c.EndDate.Equal(*before["c"].EndDate) {
		t.Errorf("c changed: %+v, was %+v", c, before["c"])
	}
	evs := b.events(t, "dag_id=fix_f1&run_id=f1&event=clear")
	if len(evs) != 1 || evs[0].Owner != auth.LegacyActor || evs[0].Outcome != "ok" ||
		!strings.Contains(compact(evs[0].Params), `"task_ids":["a"]`) || evs[0].Extra == nil {
		t.Fatalf("clear events %+v", evs)
	}
	if notes := b.events(t, "dag_id=fix_f1&event=note&task_id=a"); len(notes) != 1 || notes[0].Owner != auth.LegacyActor {
		t.Errorf("note events %+v", notes)
	}

	// The run's own clear route: only_failed finds nothing now, and clears nothing.
	var again clearPreviewCollection
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodPost, "/api/v1/dags/fix_f1/dagRuns/f1/clear",
		`{"only_failed": true}`), &again); err != nil {
		t.Fatal(err)
	}
	if len(again.TaskInstances) != 0 {
		t.Errorf("only_failed of a successful run previews %+v", again.TaskInstances)
	}
	var run DAGRunJSON
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodPost, "/api/v1/dags/fix_f1/dagRuns/f1/clear",
		`{"dry_run": false}`), &run); err != nil {
		t.Fatal(err)
	}
	if st := b.waitRunEnd(t, "fix_f1", "f1"); st != string(vocab.RunSuccess) {
		t.Fatalf("the run cleared whole ended %s", st)
	}
	if got := b.tiStates(t, "fix_f1", "f1"); got["c"].TryNumber != 2 || got["a"].TryNumber != 3 {
		t.Errorf("after clearing the whole run: a try %d, c try %d", got["a"].TryNumber, got["c"].TryNumber)
	}
}

// TestMarkAndNotesOverAPI: a task waiting for its retry marked success lets its downstream run;
// a note alone is a note edit, shown with who and when; a run is marked failed.
func TestMarkAndNotesOverAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken, readsOpen: true})
	b.writeDAG(t, "mk.yaml", "dag_id: mk\ntasks:\n  - {id: a, bash: 'exit 1', retries: 1, retry_delay: 1h}\n"+
		"  - {id: b, bash: 'true', depends_on: [a]}\n")
	b.waitDAG(t, "mk")
	b.trigger(t, "mk", "m1", "")
	b.waitNotice(t, executor.NoticeAttemptEnded, "mk", "m1", "a")
	ti := "/api/v1/dags/mk/dagRuns/m1/taskInstances/a"
	var dry taskInstanceCollection
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodPatch, ti,
		`{"new_state": "success", "include_downstream": true, "dry_run": true}`), &dry); err != nil {
		t.Fatal(err)
	}
	if len(dry.TaskInstances) != 2 || dry.TaskInstances[0].State != vocab.TaskUpForRetry {
		t.Fatalf("dry run of the mark: %+v", dry.TaskInstances)
	}
	var marked taskInstanceCollection
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodPatch, ti, `{"new_state": "success"}`), &marked); err != nil {
		t.Fatal(err)
	}
	if len(marked.TaskInstances) != 1 || marked.TaskInstances[0].State != vocab.TaskSuccess {
		t.Fatalf("marked %+v", marked.TaskInstances)
	}
	if st := b.waitRunEnd(t, "mk", "m1"); st != string(vocab.RunSuccess) {
		t.Fatalf("run ended %s after a was marked success", st)
	}
	if got := b.tiStates(t, "mk", "m1"); got["b"].State != vocab.TaskSuccess || got["b"].TryNumber != 1 {
		t.Errorf("b did not run after the mark: %+v", got["b"])
	}
	if evs := b.events(t, "dag_id=mk&event=mark"); len(evs) != 1 || evs[0].Owner != auth.LegacyActor || evs[0].TaskID != nil {
		t.Errorf("mark events %+v", evs)
	}

	var noted taskInstanceCollection
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodPatch, ti, `{"note": "flaky <db>"}`), &noted); err != nil {
		t.Fatal(err)
	}
	if n := noted.TaskInstances[0]; n.Note == nil || *n.Note != "flaky <db>" || *n.NoteBy != auth.LegacyActor || n.State != vocab.TaskSuccess {
		t.Errorf("note edit: %+v", n)
	}
	var run DAGRunJSON
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodPatch, "/api/v1/dags/mk/dagRuns/m1",
		`{"state": "failed", "note": "not really"}`), &run); err != nil {
		t.Fatal(err)
	}
	if run.State != vocab.RunFailed || run.Note == nil || *run.Note != "not really" || run.NoteBy == nil || *run.NoteBy != auth.LegacyActor {
		t.Errorf("run after its mark: %+v", run)
	}
	if evs := b.events(t, "dag_id=mk&event=note"); len(evs) != 2 {
		t.Errorf("note events %+v", evs)
	}
}

// TestDeleteRunOverAPI: a run with a running attempt is refused (409) unless forced; forced, it
// goes once its attempt stopped; an ended one goes at once (204); both leave their events.
func TestDeleteRunOverAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken, readsOpen: true})
	b.writeDAG(t, "long.yaml", "dag_id: long\ntasks:\n  - {id: a, bash: 'sleep 30'}\n")
	b.waitDAG(t, "long")
	b.trigger(t, "long", "l1", "")
	b.waitNotice(t, executor.NoticeAdmitted, "long", "l1", "a")
	path := "/api/v1/dags/long/dagRuns/l1"
	rec := b.do(t, http.MethodDelete, path, "", testToken)
	if rec.Code != http.StatusConflict || !strings.Contains(problemOf(t, rec).Detail, "task a of run l1 is running") {
		t.Fatalf("delete of a running run: %d %s", rec.Code, rec.Body)
	}
	if rec := b.do(t, http.MethodDelete, path+"?force=true", "", testToken); rec.Code != http.StatusNoContent &&
		rec.Code != http.StatusAccepted {
		t.Fatalf("forced delete: %d %s", rec.Code, rec.Body)
	}
	deadline := time.Now().Add(20 * time.Second)
	for b.do(t, http.MethodGet, path, "", "").Code != http.StatusNotFound {
		if time.Now().After(deadline) {
			t.Fatal("the forced deletion did not delete the run")
		}
		b.waitNotice(t, executor.NoticePass, "", "", "")
	}
	evs := b.events(t, "dag_id=long&run_id=l1&event=delete_run")
	if len(evs) != 2 || evs[0].Outcome != "ok" || !strings.Contains(evs[1].Outcome, "is running") {
		t.Fatalf("delete events (newest first) %+v", evs)
	}

	b.trigger(t, "quick", "q1", "")
	b.waitRunEnd(t, "quick", "q1")
	b.must(t, http.StatusNoContent, http.MethodDelete, "/api/v1/dags/quick/dagRuns/q1", "")
	b.must(t, http.StatusNotFound, http.MethodGet, "/api/v1/dags/quick/dagRuns/q1", "")
}

// TestRepairBadInput: a malformed request is a 400 naming the field and leaves no event; one
// refused for what it names (unknown run or task, a task gone from the DAG, a DAG no longer
// loaded) is a 404 or 409 naming it and leaves an event with the refusal.
func TestRepairBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.writeDAG(t, "gone.yaml", "dag_id: gone\ntasks:\n  - {id: a, bash: 'true'}\n  - {id: c, bash: 'true'}\n")
	b.waitDAG(t, "gone")
	b.trigger(t, "gone", "g1", "")
	b.waitRunEnd(t, "gone", "g1")
	b.trigger(t, "quick", "q1", "")
	b.waitRunEnd(t, "quick", "q1")

	count := func() int {
		var out eventLogCollection
		_ = json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, "/api/v1/eventLogs?limit=1", ""), &out)
		return out.TotalEntries
	}
	ti := "/api/v1/dags/quick/dagRuns/q1/taskInstances/only"
	bad := []struct{ method, path, body, field string }{
		{http.MethodPatch, ti, `{"new_state": "running"}`, "new_state"},
		{http.MethodPatch, ti, `{}`, "new_state"},
		{http.MethodPatch, ti, `{"include_downstream": true}`, "new_state"},
		{http.MethodPatch, ti, `{"new_state": 3}`, "new_state"},
		{http.MethodPatch, ti, `{"new_state": "success", "include_future": true}`, "include_future"},
		{http.MethodPatch, "/api/v1/dags/quick/dagRuns/q1", `{"state": "running"}`, "state"},
		{http.MethodPatch, "/api/v1/dags/quick/dagRuns/q1", `{}`, "state"},
		{http.MethodPost, "/api/v1/dags/quick/clearTaskInstances", `{}`, "dag_run_id"},
		{http.MethodPost, "/api/v1/dags/quick/clearTaskInstances", `{"dag_run_id": "q1", "task_ids": "only"}`, "task_ids"},
		{http.MethodPost, "/api/v1/dags/quick/clearTaskInstances", `{"dag_run_id": "q1", "task_ids": [""]}`, "task_ids"},
		{http.MethodPost, "/api/v1/dags/quick/clearTaskInstances", `{"dag_run_id": "q1", "start_date": "x"}`, "start_date"},
		{http.MethodPost, "/api/v1/dags/quick/dagRuns/q1/clear", `{"dry_run": "no"}`, "dry_run"},
		{http.MethodDelete, "/api/v1/dags/quick/dagRuns/q1?force=maybe", ``, "force"},
		{http.MethodGet, "/api/v1/eventLogs?event=nope", ``, "event"},
		{http.MethodGet, "/api/v1/eventLogs?after=yesterday", ``, "after"},
		{http.MethodGet, "/api/v1/eventLogs?limit=0", ``, "limit"},
		{http.MethodGet, "/api/v1/eventLogs?who=me", ``, "who"},
	}
	n := count()
	for _, tt := range bad {
		rec := b.do(t, tt.method, tt.path, tt.body, "")
		if rec.Code != http.StatusBadRequest || !strings.HasPrefix(problemOf(t, rec).Detail, tt.field+":") {
			t.Errorf("%s %s %s: %d %s, want 400 naming %s", tt.method, tt.path, tt.body, rec.Code, rec.Body, tt.field)
		}
	}
	if got := count(); got != n {
		t.Errorf("malformed requests left %d events", got-n)
	}

	// Make c leave gone's definition.
	b.writeDAG(t, "gone.yaml", "dag_id: gone\ntasks:\n  - {id: a, bash: 'true'}\n")
	deadline := time.Now().Add(20 * time.Second)
	for d := b.srv.findDAG("gone"); d == nil || d.Task("c") != nil; d = b.srv.findDAG("gone") {
		if time.Now().After(deadline) {
			t.Fatal("gone was not reloaded without c")
		}
		b.waitNotice(t, executor.NoticePass, "", "", "")
	}
	refused := []struct {
		method, path, body string
		status             int
		detail             string
		event              string
	}{
		{http.MethodPost, "/api/v1/dags/quick/clearTaskInstances", `{"dag_run_id": "nosuch", "dry_run": false}`, 404,
			"dag run nosuch of dag quick not found", "event=clear&run_id=nosuch"},
		{http.MethodPost, "/api/v1/dags/quick/clearTaskInstances", `{"dag_run_id": "q1", "task_ids": ["nosuch"], "dry_run": false}`,
			404, "task nosuch", "event=clear&run_id=q1"},
		{http.MethodPost, "/api/v1/dags/gone/clearTaskInstances", `{"dag_run_id": "g1", "task_ids": ["c"], "dry_run": false}`,
			409, "task c is no longer in dag gone", "event=clear&dag_id=gone"},
		{http.MethodPatch, "/api/v1/dags/gone/dagRuns/g1/taskInstances/c", `{"new_state": "success"}`,
			409, "task c is no longer in dag gone", "event=mark&dag_id=gone"},
		{http.MethodPatch, "/api/v1/dags/quick/dagRuns/q1/taskInstances/nosuch", `{"new_state": "failed"}`,
			404, "task nosuch not found", "event=mark&run_id=q1"},
		{http.MethodPatch, "/api/v1/dags/quick/dagRuns/nosuch", `{"note": "x"}`, 404, "dag run nosuch", "event=note&run_id=nosuch"},
		{http.MethodDelete, "/api/v1/dags/quick/dagRuns/nosuch", ``, 404, "dag run nosuch", "event=delete_run&run_id=nosuch"},
	}
	for _, tt := range refused {
		rec := b.do(t, tt.method, tt.path, tt.body, "")
		if rec.Code != tt.status || !strings.Contains(problemOf(t, rec).Detail, tt.detail) {
			t.Errorf("%s %s %s: %d %s, want %d with %q", tt.method, tt.path, tt.body, rec.Code, rec.Body, tt.status, tt.detail)
			continue
		}
		evs := b.events(t, tt.event)
		if len(evs) == 0 || evs[0].Outcome != problemOf(t, rec).Detail || evs[0].Owner != testActor {
			t.Errorf("%s %s: events %+v, want the refusal", tt.method, tt.path, evs)
		}
	}
	// The dry run refuses the same way, and records nothing.
	n = count()
	rec := b.do(t, http.MethodPost, "/api/v1/dags/gone/clearTaskInstances", `{"dag_run_id": "g1", "task_ids": ["c"]}`, "")
	if rec.Code != http.StatusConflict || count() != n {
		t.Errorf("dry run of a gone task: %d %s, %d events", rec.Code, rec.Body, count()-n)
	}

	// A run of a DAG no longer loaded cannot be cleared.
	if err := os.Remove(filepath.Join(b.dagsDir, "gone.yaml")); err != nil {
		t.Fatal(err)
	}
	for b.srv.findDAG("gone") != nil {
		b.waitNotice(t, executor.NoticePass, "", "", "")
	}
	rec = b.do(t, http.MethodPost, "/api/v1/dags/gone/dagRuns/g1/clear", `{"dry_run": false}`, "")
	if rec.Code != http.StatusConflict || !strings.Contains(problemOf(t, rec).Detail, "dag gone of run g1 is not loaded") {
		t.Errorf("clear of a removed DAG's run: %d %s", rec.Code, rec.Body)
	}
}
