package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"golang.org/x/crypto/bcrypt"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

func init() { auth.Cost = bcrypt.MinCost }

// addUser creates a user with grants ("admin", "operator:finance") and returns a token of it.
func addUser(t testing.TB, st store.Store, name, grants string) string {
	t.Helper()
	gs, err := store.ParseGrants(grants)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := auth.CreateUser(context.Background(), st, "test", name, "password-"+name, gs, now); err != nil {
		t.Fatal(err)
	}
	_, secret, err := auth.CreateToken(context.Background(), st, "test", name, "t", 0, now)
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// TestEveryRouteHasAPermission walks the router: every route it serves is a row of the route
// table with a permission, so a route added without one cannot slip through.
func TestEveryRouteHasAPermission(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	perms := map[string]vocab.Permission{}
	for _, rt := range b.srv.table() {
		perms[rt.method+" "+rt.path] = rt.perm
	}
	n := 0
	err := b.srv.router.Walk(func(r *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		path, err := r.GetPathTemplate()
		if err != nil {
			return nil // the UI's prefix has no template of its own
		}
		methods, err := r.GetMethods()
		if err != nil {
			t.Errorf("route %s has no method", path)
			return nil
		}
		for _, m := range methods {
			perm, ok := perms[m+" "+path]
			if !ok {
				t.Errorf("%s %s is served but has no row (and so no permission) in the route table", m, path)
				continue
			}
			if !perm.Valid() {
				t.Errorf("%s %s: permission %q is not one of vocab.Permissions()", m, path, perm)
			}
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(perms) {
		t.Fatalf("walked %d routes, the table has %d", n, len(perms))
	}
}

// TestRoutePermissions: every route × every role (and no credentials). A caller whose role
// lacks the route's permission gets 401 (no credentials) or 403 naming the permission; one
// whose role holds it gets past the check. Mutations are first sent to routes that answer 404
// (a run that does not exist), so the table changes nothing.
func TestRoutePermissions(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	callers := map[string]string{
		"viewer":   addUser(t, b.st, "vera", "viewer"),
		"operator": addUser(t, b.st, "otto", "operator"),
		"admin":    addUser(t, b.st, "ada", "admin"),
		"none":     "",
	}
	roleOf := map[string]vocab.Role{"viewer": vocab.RoleViewer, "operator": vocab.RoleOperator, "admin": vocab.RoleAdmin}
	for _, rt := range b.srv.table() {
		path := strings.NewReplacer("{dag_id}", "quick", "{dag_run_id}", "nosuchrun", "{task_id}", "only",
			"{try_number}", "1", "{pool_name}", "nosuchpool", "{name}", "nosuchpool", "{key}", "999").Replace(rt.path)
		if rt.method == http.MethodPost && strings.HasSuffix(rt.path, "/dagRuns") {
			path = "/api/v1/dags/nosuchdag/dagRuns"
		}
		if rt.method == http.MethodPatch && rt.path == "/api/v1/dags/{dag_id}" {
			path = "/api/v1/dags/nosuchdag"
		}
		body := ""
		if rt.method != http.MethodGet {
			body = "{}"
		}
		for who, tok := range callers {
			t.Run(rt.method+" "+rt.path+" "+who, func(t *testing.T) {
				rec := b.do(t, rt.method, path, body, tok)
				allowed := rt.perm == vocab.PermPublic || roleOf[who].Allows(rt.perm)
				switch {
				case allowed && (rec.Code == http.StatusUnauthorized || rec.Code == http.StatusForbidden):
					t.Fatalf("%s holds %s but got %d: %s", who, rt.perm, rec.Code, rec.Body)
				case !allowed && who == "none" && rec.Code != http.StatusUnauthorized:
					t.Fatalf("no credentials: status %d, want 401: %s", rec.Code, rec.Body)
				case !allowed && who != "none" && rec.Code != http.StatusForbidden:
					t.Fatalf("%s lacks %s: status %d, want 403: %s", who, rt.perm, rec.Code, rec.Body)
				case !allowed && !strings.Contains(rec.Body.String(), "permission "+string(rt.perm)):
					t.Fatalf("the refusal does not name permission %s: %s", rt.perm, rec.Body)
				}
			})
		}
	}
}

// TestAuthTurnsOn: with no user and no token everything is open; the first user turns
// authentication on for every request; auth.anonymous: viewer opens the reads again, never
// the writes.
func TestAuthTurnsOn(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	if rec := b.do(t, http.MethodGet, "/api/v1/dags", "", ""); rec.Code != http.StatusOK {
		t.Fatalf("open read: %d", rec.Code)
	}
	if rec := b.do(t, http.MethodPatch, "/api/v1/dags/quick", `{"is_paused": true}`, ""); rec.Code != http.StatusOK {
		t.Fatalf("open write: %d %s", rec.Code, rec.Body)
	}
	tok := addUser(t, b.st, "ada", "admin")
	for _, rq := range []struct{ method, path, body string }{
		{http.MethodGet, "/api/v1/dags", ""}, {http.MethodGet, "/pools", ""}, {http.MethodGet, "/metrics", ""},
		{http.MethodPatch, "/api/v1/dags/quick", `{"is_paused": false}`},
	} {
		rec := b.do(t, rq.method, rq.path, rq.body, "")
		if rec.Code != http.StatusUnauthorized || rec.Header().Get("WWW-Authenticate") == "" {
			t.Fatalf("%s %s after the first user: %d %s", rq.method, rq.path, rec.Code, rec.Body)
		}
	}
	for _, p := range []string{"/api/v1/health", "/livez", "/api/v1/openapi.yaml"} {
		if rec := b.do(t, http.MethodGet, p, "", ""); rec.Code != http.StatusOK {
			t.Fatalf("public %s: %d", p, rec.Code)
		}
	}
	rec := b.do(t, http.MethodPatch, "/api/v1/dags/quick", `{"is_paused": false}`, tok)
	if rec.Code != http.StatusOK {
		t.Fatalf("admin write: %d %s", rec.Code, rec.Body)
	}
	events, _, err := b.st.ListEvents(context.Background(), store.EventFilter{Action: vocab.ActionUnpause})
	if err != nil || len(events) != 1 || events[0].Actor != "ada" {
		t.Fatalf("the unpause is not ada's: %+v %v", events, err)
	}
	// anonymous: viewer opens reads, not writes (nor logs of other users' tokens).
	cfg := *b.cfg
	cfg.Auth.Anonymous = vocab.RoleViewer
	anon := New(Config{Store: b.st, Settings: &cfg, Logger: b.srv.log})
	defer anon.Close()
	b2 := *b
	b2.srv = anon
	if rec := b2.do(t, http.MethodGet, "/api/v1/dags", "", ""); rec.Code != http.StatusOK {
		t.Fatalf("anonymous viewer read: %d %s", rec.Code, rec.Body)
	}
	if rec := b2.do(t, http.MethodPatch, "/api/v1/dags/quick", `{"is_paused": true}`, ""); rec.Code != http.StatusUnauthorized {
		t.Fatalf("anonymous viewer write: %d %s", rec.Code, rec.Body)
	}
}

// TestTokenLifecycle: a user's token works until it expires or is revoked or its user is
// deleted, each refusal saying which; a wrong token, a malformed header and a token in the
// query string are refused.
func TestTokenLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	ctx := context.Background()
	addUser(t, b.st, "ada", "admin")
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) // the server's clock
	if err := auth.CreateUser(ctx, b.st, "ada", "otto", "", []store.Grant{{Role: vocab.RoleOperator}}, now); err != nil {
		t.Fatal(err)
	}
	live, liveSecret, err := auth.CreateToken(ctx, b.st, "ada", "otto", "ci", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	_, oldSecret, err := auth.CreateToken(ctx, b.st, "ada", "otto", "old", time.Minute, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	get := func(tok string) (int, string) {
		rec := b.do(t, http.MethodGet, "/api/v1/dags", "", tok)
		return rec.Code, rec.Body.String()
	}
	if code, body := get(liveSecret); code != http.StatusOK {
		t.Fatalf("live token: %d %s", code, body)
	}
	for _, tc := range []struct{ name, tok, want string }{
		{"expired", oldSecret, "expired at"},
		{"wrong", liveSecret + "x", "unknown token"},
		{"guess", "pf_" + strings.Repeat("A", 43), "unknown token"},
	} {
		if code, body := get(tc.tok); code != http.StatusUnauthorized || !strings.Contains(body, tc.want) {
			t.Errorf("%s token: %d %s, want 401 saying %q", tc.name, code, body, tc.want)
		}
	}
	req := func(mod func(*http.Request)) (int, string) {
		r, _ := http.NewRequest(http.MethodGet, "/api/v1/dags", nil)
		mod(r)
		rec := httptest.NewRecorder()
		b.srv.ServeHTTP(rec, r)
		return rec.Code, rec.Body.String()
	}
	if code, body := req(func(r *http.Request) { r.Header.Set("Authorization", "Basic "+liveSecret) }); code != http.StatusUnauthorized {
		t.Errorf("basic auth: %d %s", code, body)
	}
	for _, q := range []string{"token", "access_token", "api_key"} {
		code, body := req(func(r *http.Request) { r.URL.RawQuery = q + "=" + liveSecret })
		if code != http.StatusBadRequest || !strings.Contains(body, "query string") {
			t.Errorf("?%s=: %d %s, want 400", q, code, body)
		}
	}
	if _, err := auth.RevokeToken(ctx, b.st, "ada", live.ID, "", now); err != nil {
		t.Fatal(err)
	}
	if code, body := get(liveSecret); code != http.StatusUnauthorized || !strings.Contains(body, "revoked") {
		t.Fatalf("revoked token: %d %s", code, body)
	}
	_, third, err := auth.CreateToken(ctx, b.st, "ada", "otto", "", 0, now)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := get(third); code != http.StatusOK {
		t.Fatalf("a token that never expires: %d", code)
	}
	if err := auth.DeleteUser(ctx, b.st, "ada", "otto", now); err != nil {
		t.Fatal(err)
	}
	if code, body := get(third); code != http.StatusUnauthorized {
		t.Fatalf("the token of a deleted user: %d %s", code, body)
	}
	// The tokens' events name who made and revoked them.
	events, _, err := b.st.ListEvents(ctx, store.EventFilter{Action: vocab.ActionTokenRevoke})
	if err != nil || len(events) != 1 || events[0].Actor != "ada" || !strings.Contains(events[0].Params, `"user":"otto"`) {
		t.Fatalf("revoke events %+v %v", events, err)
	}
}

// TestLegacyToken: an installation with only today's configured token keeps working: the token
// is an admin, named api.token in the audit log; without it, writes and reads are refused.
func TestLegacyToken(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken})
	if rec := b.do(t, http.MethodGet, "/api/v1/dags", "", ""); rec.Code != http.StatusUnauthorized {
		t.Fatalf("read without the token: %d", rec.Code)
	}
	b.must(t, http.StatusOK, http.MethodPatch, "/api/v1/dags/quick", `{"is_paused": true}`)
	b.must(t, http.StatusOK, http.MethodPost, "/api/v1/pools", `{"name": "extra", "slots": 2}`)
	events, _, err := b.st.ListEvents(context.Background(), store.EventFilter{})
	if err != nil || len(events) < 2 {
		t.Fatalf("events %+v %v", events, err)
	}
	for _, e := range events {
		if e.Actor != auth.LegacyActor {
			t.Errorf("event %s by %q, want %s", e.Action, e.Actor, auth.LegacyActor)
		}
	}
	for _, tok := range []string{"wrong", testToken + "x", ""} {
		rec := b.do(t, http.MethodPatch, "/api/v1/dags/quick", `{"is_paused": false}`, tok)
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("token %q: %d %s", tok, rec.Code, rec.Body)
		}
		var p problem
		_ = json.Unmarshal(rec.Body.Bytes(), &p)
		if p.Detail == "" {
			t.Fatalf("no problem detail: %s", rec.Body)
		}
	}
}

// fillPath puts sample values into a route template.
func fillPath(p string) string {
	r := strings.NewReplacer("{dag_id}", "quick", "{dag_run_id}", "r1", "{task_id}", "only", "{try_number}", "1",
		"{pool_name}", "db", "{name}", "db", "{key}", "1",
		"{backfill_id}", "1")
	return r.Replace(p)
}
