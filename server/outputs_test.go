package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/vocab"
)

// TestOutputRoute: GET .../output answers the JSON object the task instance's successful
// attempt wrote, under value; a task instance without one is a 404 naming it; the route takes
// the token as the logs' does.
func TestOutputRoute(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken})
	b.writeDAG(t, "emits.yaml", `
tasks:
  - id: emit
    bash: 'echo "{\"files\": [\"a.csv\"], \"n\": 1}" > "$POOLFLOW_OUTPUT"'
  - id: quiet
    command: ["true"]
`)
	b.waitDAG(t, "emits")
	if rec := b.trigger(t, "emits", "e1", ""); rec.Code != http.StatusOK && rec.Code != http.StatusAccepted {
		t.Fatalf("trigger: %d %s", rec.Code, rec.Body)
	}
	if state := b.waitRunEnd(t, "emits", "e1"); state != "success" {
		t.Fatalf("run ended %s", state)
	}
	const base = "/api/v1/dags/emits/dagRuns/e1/taskInstances/"
	rec := b.do(t, http.MethodGet, base+"emit/output", "", testToken)
	var got OutputJSON
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &got) != nil || got.TaskID != "emit" ||
		got.TryNumber != 1 || compact(got.Value) != `{"files":["a.csv"],"n":1}` {
		t.Fatalf("output: %d %s", rec.Code, rec.Body)
	}
	rec = b.do(t, http.MethodGet, base+"quiet/output", "", testToken)
	if p := problemOf(t, rec); rec.Code != http.StatusNotFound || !strings.Contains(p.Detail, "task quiet of dag run e1 has no output") {
		t.Fatalf("no output: %d %s", rec.Code, rec.Body)
	}
	if rec := b.do(t, http.MethodGet, base+"emit/output", "", ""); rec.Code != http.StatusUnauthorized {
		t.Fatalf("without the token: %d", rec.Code)
	}
}

// TestListMapped: a mapped task's instances are task instances with map_index, listed in
// map_index order by listMapped (Airflow's); each is read by its own id, with its output.
func TestListMapped(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.writeDAG(t, "maps.yaml", `
tasks:
  - id: each
    expand: [x, y, z]
    command: ["sh", "-c", 'echo "loading $1"; echo "{\"item\": \"$1\"}" > "$POOLFLOW_OUTPUT"', "each", "${{ item }}"]
`)
	b.waitDAG(t, "maps")
	if rec := b.trigger(t, "maps", "m1", ""); rec.Code != http.StatusOK && rec.Code != http.StatusAccepted {
		t.Fatalf("trigger: %d %s", rec.Code, rec.Body)
	}
	if state := b.waitRunEnd(t, "maps", "m1"); state != "success" {
		t.Fatalf("run ended %s", state)
	}
	const base = "/api/v1/dags/maps/dagRuns/m1/taskInstances/"
	var list struct {
		TaskInstances []TaskInstanceJSON `json:"task_instances"`
		TotalEntries  int                `json:"total_entries"`
	}
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, base+"each/listMapped?order_by=-map_index", ""), &list); err != nil {
		t.Fatal(err)
	}
	if list.TotalEntries != 3 || list.TaskInstances[0].TaskID != "each[2]" || list.TaskInstances[0].MapIndex != 2 ||
		list.TaskInstances[2].MapIndex != 0 || list.TaskInstances[1].State != "success" {
		t.Fatalf("listMapped: %+v", list)
	}
	var one TaskInstanceJSON
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, base+"each%5B1%5D", ""), &one); err != nil || one.MapIndex != 1 {
		t.Fatalf("each[1]: %+v %v", one, err)
	}
	var out OutputJSON
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, base+"each%5B1%5D/output", ""), &out); err != nil ||
		compact(out.Value) != `{"item":"y"}` {
		t.Fatalf("each[1]'s output: %+v %v", out, err)
	}
	if rec := b.do(t, http.MethodGet, "/api/v1/dags/quick/dagRuns/m1/taskInstances/only/listMapped", "", ""); rec.Code != http.StatusNotFound {
		t.Fatalf("not mapped: %d", rec.Code)
	}

	// Airflow's paths: the task's own id and map_index (mapindex.go).
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, base+"each/1", ""), &one); err != nil ||
		one.TaskID != "each[1]" || one.MapIndex != 1 || one.State != "success" {
		t.Fatalf("each/1: %+v %v", one, err)
	}
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, base+"each/-1", ""), &one); err != nil ||
		one.TaskID != "each" || one.MapIndex != -1 {
		t.Fatalf("each/-1 (the task itself): %+v %v", one, err)
	}
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, base+"each/2/output", ""), &out); err != nil ||
		out.TaskID != "each[2]" || compact(out.Value) != `{"item":"z"}` {
		t.Fatalf("each/2/output: %+v %v", out, err)
	}
	b.must(t, http.StatusOK, http.MethodGet, base+"each/0/dependencies", "")
	if log := string(b.must(t, http.StatusOK, http.MethodGet, base+"each/logs/1?map_index=2", "")); !strings.Contains(log, "loading z") {
		t.Fatalf("each's log with map_index=2: %q", log)
	}
	b.must(t, http.StatusOK, http.MethodPatch, base+"each/0", `{"note": "checked by hand"}`)
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, base+"each%5B0%5D", ""), &one); err != nil ||
		one.Note == nil || *one.Note != "checked by hand" {
		t.Fatalf("each[0]'s note after PATCH each/0: %+v %v", one, err)
	}
	for _, bad := range []struct {
		path string
		code int
	}{
		{base + "each/first", http.StatusBadRequest},
		{base + "each/-2", http.StatusBadRequest},
		{base + "each%5B1%5D/1", http.StatusBadRequest},
		{base + "each/logs/1?map_index=x", http.StatusBadRequest},
		{base + "each/7", http.StatusNotFound},
		{base + "each/3/output", http.StatusNotFound},
	} {
		rec := b.do(t, http.MethodGet, bad.path, "", testToken)
		if rec.Code != bad.code {
			t.Errorf("GET %s: %d, want %d: %s", bad.path, rec.Code, bad.code, rec.Body)
		}
		if bad.code == http.StatusBadRequest && !strings.Contains(rec.Body.String(), "map_index") {
			t.Errorf("GET %s: the 400 does not name map_index: %s", bad.path, rec.Body)
		}
	}
}

// TestListMappedLine: a mapped task over 300 items that lets one run at a time queues a window of
// 16 of them; listMapped still lists all 300, and one of those waiting in its task's line says
// why, in the list, by itself (Airflow's path) and in its dependencies (§14).
func TestListMappedLine(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.writeDAG(t, "lines.yaml", `
tasks:
  - {id: each, expand: "${{ 0..299 }}", max_active_tis_per_dagrun: 1, command: ["sleep", "60"]}
`)
	b.waitDAG(t, "lines")
	if rec := b.trigger(t, "lines", "l1", ""); rec.Code != http.StatusOK && rec.Code != http.StatusAccepted {
		t.Fatalf("trigger: %d %s", rec.Code, rec.Body)
	}
	b.waitNotice(t, executor.NoticeAdmitted, "lines", "l1", "each[0]")
	const base = "/api/v1/dags/lines/dagRuns/l1/taskInstances/"
	var list struct {
		TaskInstances []TaskInstanceJSON `json:"task_instances"`
		TotalEntries  int                `json:"total_entries"`
	}
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, base+"each/listMapped?order_by=-map_index&limit=5", ""), &list); err != nil {
		t.Fatal(err)
	}
	if list.TotalEntries != 300 || len(list.TaskInstances) != 5 || list.TaskInstances[0].MapIndex != 299 {
		t.Fatalf("listMapped: %d entries, first %+v", list.TotalEntries, list.TaskInstances)
	}
	last := list.TaskInstances[0]
	if last.State != vocab.TaskNone || last.WaitReason == nil || last.WaitReason.Code != vocab.ReasonMapLine ||
		!strings.HasPrefix(last.WaitReason.Text, "waiting: for a place in each's queue window (28") ||
		!strings.HasSuffix(last.WaitReason.Text, " instances ahead in its line)") {
		t.Fatalf("each[299] in the line: %+v %+v", last, last.WaitReason)
	}
	var one TaskInstanceJSON
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, base+"each/150", ""), &one); err != nil ||
		one.TaskID != "each[150]" || one.WaitReason == nil || one.WaitReason.Code != vocab.ReasonMapLine {
		t.Fatalf("each/150: %+v %v", one, err)
	}
	var deps dependenciesJSON
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, base+"each/150/dependencies", ""), &deps); err != nil {
		t.Fatal(err)
	}
	if len(deps.Dependencies) != 1 || !strings.Contains(deps.Dependencies[0].Reason, "queue window") {
		t.Fatalf("each[150]'s dependencies: %+v", deps)
	}
	var seven TaskInstanceJSON
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, base+"each/7", ""), &seven); err != nil ||
		seven.State != vocab.TaskScheduled || seven.QueueID == nil {
		t.Fatalf("each[7], in the window: %+v %v", seven, err)
	}
}
