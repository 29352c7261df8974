package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/vocab"
)

const hourlyBackfillDAG = `schedule: '@hourly'
tasks:
  - {id: work, command: ["true"], pool_requirements: {default: 1}}
`

// TestBackfillBadInput: every request a backfill cannot run is refused with its status and a
// message naming the field, and nothing is stored.
func TestBackfillBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken})
	b.writeDAG(t, "hourly.yaml", hourlyBackfillDAG)
	b.waitDAG(t, "hourly")
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"no fire", `{"dag_id": "hourly", "from_date": "2025-01-01T10:05:00Z", "to_date": "2025-01-01T10:55:00Z"}`, 400,
			"from_date: no fire of dag hourly's schedule"},
		{"to before from", `{"dag_id": "hourly", "from_date": "2025-01-02T00:00:00Z", "to_date": "2025-01-01T00:00:00Z"}`, 400,
			"to_date: 2025-01-01T00:00:00Z is before from_date"},
		{"over the bound", `{"dag_id": "hourly", "from_date": "2014-01-01T00:00:00Z", "to_date": "2025-01-01T00:00:00Z"}`, 400,
			"more than 10000 fires"},
		{"pool not used", `{"dag_id": "hourly", "from_date": "2025-01-01T00:00:00Z", "to_date": "2025-01-01T02:00:00Z", "max_slots": {"db": 1}}`,
			400, "max_slots: pool db: dag hourly does not use it (it uses default)"},
		{"zero slots", `{"dag_id": "hourly", "from_date": "2025-01-01T00:00:00Z", "to_date": "2025-01-01T02:00:00Z", "max_slots": {"default": 0}}`,
			400, "max_slots: pool default: 0 slots"},
		{"not loaded", `{"dag_id": "nope", "from_date": "2025-01-01T00:00:00Z", "to_date": "2025-01-01T02:00:00Z"}`, 404,
			"dag nope is not loaded"},
		{"no schedule", `{"dag_id": "quick", "from_date": "2025-01-01T00:00:00Z", "to_date": "2025-01-01T02:00:00Z"}`, 400,
			"dag_id: dag quick has no schedule"},
		{"bad reprocess", `{"dag_id": "hourly", "from_date": "2025-01-01T00:00:00Z", "to_date": "2025-01-01T02:00:00Z", "reprocess_behavior": "all"}`,
			400, "reprocess_behavior"},
		{"zero max_active_runs", `{"dag_id": "hourly", "from_date": "2025-01-01T00:00:00Z", "to_date": "2025-01-01T02:00:00Z", "max_active_runs": 0}`,
			400, "max_active_runs: 0"},
		{"no from", `{"dag_id": "hourly", "to_date": "2025-01-01T02:00:00Z"}`, 400, "from_date: required"},
		{"no dag", `{"from_date": "2025-01-01T00:00:00Z", "to_date": "2025-01-01T02:00:00Z"}`, 400, "dag_id: required"},
		{"bad date", `{"dag_id": "hourly", "from_date": "yesterday", "to_date": "2025-01-01T02:00:00Z"}`, 400, "from_date"},
		{"unknown field", `{"dag_id": "hourly", "from": "2025-01-01T00:00:00Z"}`, 400, "from"},
	} {
		for _, path := range []string{"/api/v1/backfills", "/api/v1/backfills/dry_run"} {
			rec := b.do(t, http.MethodPost, path, tc.body, testToken)
			if rec.Code != tc.status || !strings.Contains(problemOf(t, rec).Detail, tc.want) {
				t.Errorf("%s %s: %d %s, want %d with %q", tc.name, path, rec.Code, rec.Body.String(), tc.status, tc.want)
			}
		}
	}
	var list BackfillListJSON
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, "/api/v1/backfills", ""), &list); err != nil {
		t.Fatal(err)
	}
	if list.TotalEntries != 0 {
		t.Fatalf("a refused backfill was stored: %+v", list)
	}
}

// TestBackfillAPI: a backfill is created with Airflow's body, its dry run says what it would
// do, a second one over the same range is a 409 naming the first, a paused DAG is allowed and
// said, its runs are of run type backfill, and pause, unpause and cancel change it until it is
// over, after which they are refused.
func TestBackfillAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken})
	b.writeDAG(t, "hourly.yaml", hourlyBackfillDAG)
	b.waitDAG(t, "hourly")
	body := `{"dag_id": "hourly", "from_date": "2025-01-01T00:00:00Z", "to_date": "2025-01-01T02:00:00Z",
		"max_active_runs": 2, "dag_run_conf": {"k": "v"}}`
	var dry DryRunJSON
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodPost, "/api/v1/backfills/dry_run", body), &dry); err != nil {
		t.Fatal(err)
	}
	if dry.TotalEntries != 3 || dry.Create != 3 || dry.Backfills[0].LogicalDate.Format("15:04") != "00:00" {
		t.Fatalf("dry run %+v", dry)
	}
	var bf BackfillJSON
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodPost, "/api/v1/backfills", body), &bf); err != nil {
		t.Fatal(err)
	}
	if bf.ID == 0 || bf.Progress.Total != 3 || bf.MaxActiveRuns != 2 || bf.DAGRunConf["k"] != "v" || bf.Reprocess != "none" ||
		len(bf.Warnings) != 0 || bf.CreatedBy != "api.token" {
		t.Fatalf("created %+v", bf)
	}
	rec := b.do(t, http.MethodPost, "/api/v1/backfills", strings.Replace(body, "02:00", "05:00", 1), testToken)
	if rec.Code != http.StatusConflict || !strings.Contains(problemOf(t, rec).Detail, "backfill 1 of dag hourly") {
		t.Fatalf("overlap: %d %s", rec.Code, rec.Body.String())
	}
	b.waitRunsEnd(t, "hourly", "backfill__2025-01-01T00:00:00.000Z", "backfill__2025-01-01T01:00:00.000Z",
		"backfill__2025-01-01T02:00:00.000Z")
	var run DAGRunJSON
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, "/api/v1/dags/hourly/dagRuns/backfill__2025-01-01T01:00:00.000Z", ""), &run); err != nil {
		t.Fatal(err)
	}
	var conf map[string]string
	_ = json.Unmarshal(run.Conf, &conf)
	if run.RunType != "backfill" || conf["k"] != "v" || run.BackfillID == nil || *run.BackfillID != 1 {
		t.Fatalf("run %+v", run)
	}
	// The dry run of the same range now skips every date.
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodPost, "/api/v1/backfills/dry_run", body), &dry); err != nil {
		t.Fatal(err)
	}
	if dry.Skip != 3 || !strings.Contains(dry.Backfills[0].Reason, "reprocess none") {
		t.Fatalf("dry run after %+v", dry)
	}
	// A paused DAG: allowed, and the answer says so; pause, unpause, cancel, then refused.
	b.pause(t, "hourly")
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodPost, "/api/v1/backfills",
		`{"dag_id": "hourly", "from_date": "2025-02-01T00:00:00Z", "to_date": "2025-02-01T05:00:00Z"}`), &bf); err != nil {
		t.Fatal(err)
	}
	if len(bf.Warnings) != 1 || !strings.Contains(bf.Warnings[0], "dag hourly is paused") {
		t.Fatalf("paused dag: %+v", bf)
	}
	path := "/api/v1/backfills/" + jsonNumber(bf.ID)
	for _, step := range []struct {
		verb, state string
		paused      bool
	}{
		{"pause", "running", true}, {"unpause", "running", false}, {"cancel", "", false},
	} {
		if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodPost, path+"/"+step.verb, ""), &bf); err != nil {
			t.Fatal(err)
		}
		if bf.IsPaused != step.paused || step.state != "" && bf.State != step.state {
			t.Fatalf("%s: %+v", step.verb, bf)
		}
	}
	if rec := b.do(t, http.MethodPost, "/api/v1/backfills/99/pause", "", testToken); rec.Code != http.StatusNotFound {
		t.Fatalf("pause of no backfill: %d", rec.Code)
	}
	if rec := b.do(t, http.MethodPost, "/api/v1/backfills/1/pause", "", ""); rec.Code != http.StatusUnauthorized {
		t.Fatalf("pause without the token: %d", rec.Code)
	}
	if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, "/api/v1/backfills?dag_id=hourly", ""), &struct{}{}); err != nil {
		t.Fatal(err)
	}
}

func jsonNumber(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// waitRunsEnd waits for the daemon's notices that runs of a DAG ended, in any order, and fails
// unless each succeeded.
func (b *bundle) waitRunsEnd(t testing.TB, dagID string, runIDs ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, id := range runIDs {
		want[id] = true
	}
	timeout := time.After(30 * time.Second)
	for len(want) > 0 {
		select {
		case n := <-b.notices:
			if n.Kind == executor.NoticeRunEnded && n.DAGID == dagID && want[n.RunID] {
				if n.State != string(vocab.RunSuccess) {
					t.Fatalf("run %s %s", n.RunID, n.State)
				}
				delete(want, n.RunID)
			}
		case <-timeout:
			t.Fatalf("runs %v of %s did not end", want, dagID)
		}
	}
}
