package server

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/gorilla/mux"
	"github.com/poolflow/poolflow/vocab"
)

// TestOpenAPICoversRoutes walks the router and checks that every registered route (path and
// method) is in the embedded OpenAPI document, and that the document has no route the router
// lacks.
func TestOpenAPICoversRoutes(t *testing.T) {
	t.Parallel()
	var doc struct {
		OpenAPI string                    `yaml:"openapi"`
		Paths   map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q, want 3.x", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths {
		for method := range item {
			if method == "parameters" {
				continue
			}
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	b := setup(t, setupOpts{})
	registered := map[string]bool{}
	err := b.srv.router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		path, err := route.GetPathTemplate()
		if err != nil {
			return nil // a route without a path (none today)
		}
		methods, err := route.GetMethods()
		if err != nil {
			t.Errorf("route %s has no method", path)
			return nil
		}
		for _, m := range methods {
			registered[m+" "+path] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(registered) == 0 {
		t.Fatal("no routes registered")
	}
	for _, r := range sortedKeys(registered) {
		if !documented[r] {
			t.Errorf("route %s is not in openapi.yaml", r)
		}
	}
	for _, d := range sortedKeys(documented) {
		if !registered[d] {
			t.Errorf("openapi.yaml documents %s, which is not registered", d)
		}
	}
	rec := b.do(t, http.MethodGet, "/api/v1/openapi.yaml", "", "")
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "openapi: 3") {
		t.Fatalf("GET openapi.yaml: %d", rec.Code)
	}
}

// TestOpenAPIMarksAuth checks that exactly the token-guarded routes declare the bearer scheme.
func TestOpenAPIMarksAuth(t *testing.T) {
	t.Parallel()
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	s := &Server{}
	for _, rt := range s.table() {
		op, ok := doc.Paths[rt.path][strings.ToLower(rt.method)]
		if !ok {
			t.Errorf("%s %s missing", rt.method, rt.path)
			continue
		}
		bearer, perm := false, ""
		if fields, ok := op.(map[string]any); ok {
			perm, _ = fields["x-permission"].(string)
			list, _ := fields["security"].([]any)
			for _, item := range list {
				if m, ok := item.(map[string]any); ok {
					_, has := m["bearer"]
					bearer = bearer || has
				}
			}
		}
		if perm != string(rt.perm) {
			t.Errorf("%s %s: documented x-permission %q, the route table says %q", rt.method, rt.path, perm, rt.perm)
		}
		if needs := rt.perm != vocab.PermPublic; bearer != needs {
			t.Errorf("%s %s: documented bearer %v, route needs credentials %v", rt.method, rt.path, bearer, needs)
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
