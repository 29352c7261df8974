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
