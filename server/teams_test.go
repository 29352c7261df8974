package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/poolflow/poolflow/vocab"
)

// TestTeamScopedRoles: every route that names a DAG × a role scoped to finance × a DAG of
// finance and one of no team: the operator of finance acts on finance's DAG only (403 naming
// the permission and the team otherwise) and reads everything; an admin of finance changes only
// finance's pools; GET /api/v1/pools?team= lists the pools a team may use.
func TestTeamScopedRoles(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{dags: map[string]string{"fin.yaml": "team: finance\ntasks:\n  - id: only\n    command: [\"true\"]\n"}})
	finn := addUser(t, b.st, "finn", "operator:finance")
	otto := addUser(t, b.st, "otto", "operator")
	fa := addUser(t, b.st, "fa", "admin:finance")
	ada := addUser(t, b.st, "ada", "admin")
	for _, rt := range b.srv.table() {
		if !strings.Contains(rt.path, "{dag_id}") || rt.method == http.MethodGet {
			continue
		}
		for _, dagID := range []string{"fin", "quick"} {
			for who, tok := range map[string]string{"finn": finn, "otto": otto} {
				path := strings.NewReplacer("{dag_id}", dagID, "{dag_run_id}", "nosuchrun", "{task_id}", "only",
					"{try_number}", "1").Replace(rt.path)
				if rt.method == http.MethodPost && strings.HasSuffix(rt.path, "/dagRuns") {
					path += "?nosuch=1" // a 400 after the permission check: nothing is triggered
				}
				if rt.method == http.MethodPatch && rt.path == "/api/v1/dags/{dag_id}" {
					path += "?update_mask=nosuch"
				}
				rec := b.do(t, rt.method, path, "{}", tok)
				refused := rec.Code == http.StatusForbidden
				if want := who == "finn" && dagID == "quick"; refused != want {
					t.Errorf("%s %s as %s: %d %s (want refused %v)", rt.method, path, who, rec.Code, rec.Body, want)
				} else if refused && !strings.Contains(rec.Body.String(), "permission "+string(rt.perm)) {
					t.Errorf("%s %s: the refusal does not name %s: %s", rt.method, path, rt.perm, rec.Body)
				}
			}
		}
	}
	// finn reads every DAG.
	if rec := b.do(t, http.MethodGet, "/api/v1/dags/quick", "", finn); rec.Code != http.StatusOK {
		t.Fatalf("finn reads quick: %d", rec.Code)
	}
	// Pools: an admin of finance changes finance's pools only.
	if rec := b.do(t, http.MethodPost, "/api/v1/pools", `{"name": "ledger", "slots": 2, "teams": ["finance"]}`, ada); rec.Code != http.StatusOK {
		t.Fatalf("ada creates ledger: %d %s", rec.Code, rec.Body)
	}
	if rec := b.do(t, http.MethodPost, "/api/v1/pools", `{"name": "open", "slots": 2}`, ada); rec.Code != http.StatusOK {
		t.Fatalf("ada creates open: %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct {
		method, path, body, tok string
		want                    int
	}{
		{http.MethodPatch, "/api/v1/pools/ledger", `{"slots": 3}`, fa, http.StatusOK},
		{http.MethodPatch, "/api/v1/pools/open", `{"slots": 3}`, fa, http.StatusForbidden},
		{http.MethodPatch, "/api/v1/pools/ledger", `{"teams": []}`, fa, http.StatusForbidden}, // opening it to every team
		{http.MethodPost, "/api/v1/pools", `{"name": "ops", "slots": 1, "teams": ["ops"]}`, fa, http.StatusForbidden},
		{http.MethodPost, "/api/v1/pools", `{"name": "fin2", "slots": 1, "teams": ["finance"]}`, fa, http.StatusOK},
		{http.MethodDelete, "/api/v1/pools/open", "", fa, http.StatusForbidden},
		{http.MethodPatch, "/api/v1/pools/ledger", `{"slots": 4}`, finn, http.StatusForbidden},
		{http.MethodPost, "/api/v1/pools", `{"name": "bad", "slots": 1, "teams": ["a,b"]}`, ada, http.StatusBadRequest},
	} {
		if rec := b.do(t, tc.method, tc.path, tc.body, tc.tok); rec.Code != tc.want {
			t.Errorf("%s %s %s: %d %s, want %d", tc.method, tc.path, tc.body, rec.Code, rec.Body, tc.want)
		}
	}
	names := func(team string) []string {
		var out poolCollection
		rec := b.do(t, http.MethodGet, "/api/v1/pools?team="+team, "", ada)
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("pools?team=%s: %d %s", team, rec.Code, rec.Body)
		}
		var ns []string
		for _, p := range out.Pools {
			ns = append(ns, p.Name+"="+strings.Join(p.Teams, "+"))
		}
		return ns
	}
	if got := strings.Join(names("ops"), " "); strings.Contains(got, "ledger") || !strings.Contains(got, "open=") {
		t.Errorf("pools of ops: %s", got)
	}
	if got := strings.Join(names("finance"), " "); !strings.Contains(got, "ledger=finance") || !strings.Contains(got, "fin2=finance") {
		t.Errorf("pools of finance: %s", got)
	}
	_ = vocab.PermPools
}

// TestTeamScopedTargets: the routes that act on a DAG whose path does not name it — a backfill's
// create and dry run (the DAG in the body), its pause, unpause and cancel (the backfill's DAG),
// the seed's cancel of a waiting entry (the entry's DAG) — × an operator of finance and one of
// every team × a DAG of finance and one of sales: the operator of finance is refused (403 naming
// the permission) on sales' only. Every other mutating route either names its DAG (covered by
// TestTeamScopedRoles) or is listed here as acting on no DAG, so a new route must be placed.
func TestTeamScopedTargets(t *testing.T) {
	t.Parallel()
	const hourly = "schedule: '@hourly'\ntasks:\n  - {id: work, command: [\"true\"], pool_requirements: {default: 1}}\n"
	const waits = "tasks:\n  - {id: w, command: [\"true\"], pool_requirements: {db: 1}}\n"
	b := setup(t, setupOpts{dags: map[string]string{
		"fin_h.yaml": "team: finance\n" + hourly, "sales_h.yaml": "team: sales\n" + hourly,
		"fin_w.yaml": "team: finance\n" + waits, "sales_w.yaml": "team: sales\n" + waits,
	}})
	finn := addUser(t, b.st, "finn", "operator:finance")
	otto := addUser(t, b.st, "otto", "operator")
	ada := addUser(t, b.st, "ada", "admin")
	teamOf := map[string]string{"fin": "finance", "sales": "sales"}

	// A poking sensor holds db, so each team's task waits in db's queue.
	if rec := b.do(t, http.MethodPost, "/api/v1/dags/sensor/dagRuns", `{"dag_run_id": "s"}`, ada); rec.Code != http.StatusOK {
		t.Fatalf("sensor: %d %s", rec.Code, rec.Body)
	}
	entry := map[string]string{}
	backfill := map[string]string{}
	for dag := range teamOf {
		if rec := b.do(t, http.MethodPost, "/api/v1/dags/"+dag+"_w/dagRuns", `{"dag_run_id": "r"}`, ada); rec.Code != http.StatusAccepted {
			t.Fatalf("%s_w: %d %s", dag, rec.Code, rec.Body)
		}
		var ti TaskInstanceJSON
		rec := b.do(t, http.MethodGet, "/api/v1/dags/"+dag+"_w/dagRuns/r/taskInstances/w", "", ada)
		if err := json.Unmarshal(rec.Body.Bytes(), &ti); err != nil || ti.QueueID == nil {
			t.Fatalf("%s_w's entry: %+v %v", dag, ti, err)
		}
		entry[dag] = jsonNumber(*ti.QueueID)
		var bf BackfillJSON
		body := `{"dag_id": "` + dag + `_h", "from_date": "2025-01-01T00:00:00Z", "to_date": "2025-01-01T00:00:00Z"}`
		rec = b.do(t, http.MethodPost, "/api/v1/backfills", body, ada)
		if err := json.Unmarshal(rec.Body.Bytes(), &bf); err != nil || bf.ID == 0 {
			t.Fatalf("%s_h's backfill: %d %s", dag, rec.Code, rec.Body)
		}
		backfill[dag] = jsonNumber(bf.ID)
	}
	bfBody := func(dag string) string {
		return `{"dag_id": "` + dag + `_h", "from_date": "2025-02-01T00:00:00Z", "to_date": "2025-02-01T00:00:00Z"}`
	}
	targets := map[string]func(dag string) (path, body string){
		"POST /api/v1/backfills":         func(dag string) (string, string) { return "/api/v1/backfills", bfBody(dag) },
		"POST /api/v1/backfills/dry_run": func(dag string) (string, string) { return "/api/v1/backfills/dry_run", bfBody(dag) },
		"POST /api/v1/backfills/{backfill_id}/pause": func(dag string) (string, string) {
			return "/api/v1/backfills/" + backfill[dag] + "/pause", ""
		},
		"POST /api/v1/backfills/{backfill_id}/unpause": func(dag string) (string, string) {
			return "/api/v1/backfills/" + backfill[dag] + "/unpause", ""
		},
		"POST /api/v1/backfills/{backfill_id}/cancel": func(dag string) (string, string) {
			return "/api/v1/backfills/" + backfill[dag] + "/cancel", ""
		},
		"POST /pools/{name}/queue/{key}/cancel": func(dag string) (string, string) {
			return "/pools/db/queue/" + entry[dag] + "/cancel", ""
		},
	}
	// Mutating routes that act on no DAG: pools (their teams, TestTeamScopedRoles), a notifier's
	// test, the rules' test.
	noDAG := map[string]bool{"POST /api/v1/pools": true, "PATCH /api/v1/pools/{pool_name}": true,
		"DELETE /api/v1/pools/{pool_name}": true, "POST /api/v1/notifiers/{name}/test": true, "POST /api/v1/rules/test": true}
	for _, rt := range b.srv.table() {
		key := rt.method + " " + rt.path
		if rt.method == http.MethodGet || rt.perm.Role() == vocab.RoleViewer || strings.Contains(rt.path, "{dag_id}") || noDAG[key] {
			continue
		}
		target, ok := targets[key]
		if !ok {
			t.Errorf("route %s: does it act on a DAG? Add it to the targets or the routes of no DAG of this test", key)
			continue
		}
		// finn first: his refusal on sales must come before otto changes anything there.
		for _, who := range []struct{ name, tok string }{{"finn", finn}, {"otto", otto}} {
			for _, dag := range []string{"sales", "fin"} {
				path, body := target(dag)
				rec := b.do(t, rt.method, path, body, who.tok)
				refused := rec.Code == http.StatusForbidden
				if want := who.name == "finn" && dag == "sales"; refused != want {
					t.Errorf("%s %s as %s on %s: %d %s (want refused %v)", rt.method, path, who.name, dag, rec.Code, rec.Body, want)
				} else if refused && (!strings.Contains(rec.Body.String(), "permission "+string(rt.perm)) || !strings.Contains(rec.Body.String(), teamOf[dag])) {
					t.Errorf("%s %s: the refusal does not name %s and team %s: %s", rt.method, path, rt.perm, teamOf[dag], rec.Body)
				}
			}
		}
	}
}
