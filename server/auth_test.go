package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestAuth: with a token configured, every mutating route and the log route answer 401 without
// it (or with a wrong one), and reads stay open.
func TestAuth(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken})
	guarded := []struct{ method, path, body string }{}
	open := []struct{ method, path string }{}
	for _, rt := range b.srv.table() {
		path := fillPath(rt.path)
		if rt.auth {
			guarded = append(guarded, struct{ method, path, body string }{rt.method, path, "{}"})
		} else if rt.method == http.MethodGet {
			open = append(open, struct{ method, path string }{rt.method, path})
		}
	}
	if len(guarded) != 15 {
		t.Fatalf("%d guarded routes, want 15 (13 mutations, the log and the output)", len(guarded))
	}
	for _, tt := range guarded {
		for _, token := range []string{"", "wrong", testToken + "x"} {
			t.Run(tt.method+" "+tt.path+" "+token, func(t *testing.T) {
				rec := b.do(t, tt.method, tt.path, tt.body, token)
				if rec.Code != http.StatusUnauthorized {
					t.Fatalf("status %d, want 401: %s", rec.Code, rec.Body)
				}
				if rec.Header().Get("WWW-Authenticate") == "" {
					t.Error("no WWW-Authenticate header")
				}
				problemOf(t, rec)
			})
		}
	}
	for _, tt := range open {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			if rec := b.do(t, tt.method, tt.path, "", ""); rec.Code == http.StatusUnauthorized {
				t.Fatalf("read %s needs a token", tt.path)
			}
		})
	}
	// With the token, a mutation gets through.
	if rec := b.do(t, http.MethodPatch, "/api/v1/dags/quick", `{"is_paused": true}`, testToken); rec.Code != http.StatusOK {
		t.Fatalf("with token: %d %s", rec.Code, rec.Body)
	}
	// Without a configured token, nothing needs one.
	openSrv := setup(t, setupOpts{})
	if rec := openSrv.do(t, http.MethodPatch, "/api/v1/dags/quick", `{"is_paused": true}`, ""); rec.Code != http.StatusOK {
		t.Fatalf("no token configured: %d %s", rec.Code, rec.Body)
	}
}

// fillPath puts sample values into a route template.
func fillPath(p string) string {
	r := strings.NewReplacer("{dag_id}", "quick", "{dag_run_id}", "r1", "{task_id}", "only", "{try_number}", "1",
		"{pool_name}", "db", "{name}", "db", "{key}", "1")
	return r.Replace(p)
}
