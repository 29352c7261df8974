package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// TestOpenAPIQueryParams: the query parameters each route takes are exactly those openapi.yaml
// documents for it, so the document and the 400 for an unknown parameter never drift apart.
func TestOpenAPIQueryParams(t *testing.T) {
	t.Parallel()
	type param struct {
		Ref  string `yaml:"$ref"`
		Name string `yaml:"name"`
		In   string `yaml:"in"`
	}
	var doc struct {
		Paths      map[string]map[string]yaml.RawMessage `yaml:"paths"`
		Components struct {
			Parameters map[string]param `yaml:"parameters"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	queryOf := func(raw yaml.RawMessage) []string {
		var item struct {
			Parameters []param `yaml:"parameters"`
		}
		if err := yaml.Unmarshal(raw, &item); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range item.Parameters {
			if p.Ref != "" {
				p = doc.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
			}
			if p.In == "query" {
				out = append(out, p.Name)
			}
		}
		return out
	}
	s := New(Config{})
	defer s.Close()
	for _, rt := range s.table() {
		item, ok := doc.Paths[rt.path]
		if !ok {
			t.Errorf("%s is not documented", rt.path)
			continue
		}
		var want []string
		if pl, ok := item["parameters"]; ok {
			var wrapped = map[string]yaml.RawMessage{"parameters": pl}
			b, _ := yaml.Marshal(wrapped)
			want = append(want, queryOf(b)...)
		}
		want = append(want, queryOf(item[strings.ToLower(rt.method)])...)
		got := slices.Clone(rt.query)
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s %s takes %v, openapi.yaml documents %v", rt.method, rt.path, got, want)
		}
	}
}

// TestUnknownQueryParameter: a parameter a route does not take is a 400 naming it, on list
// routes and the others alike.
func TestUnknownQueryParameter(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	for _, path := range []string{"/api/v1/dags", "/api/v1/dags/quick", "/api/v1/dags/~/dagRuns", "/api/v1/pools",
		"/api/v1/importErrors", "/pools", "/api/v1/health"} {
		rec := b.do(t, http.MethodGet, path+"?stat=running", "", "")
		if rec.Code != http.StatusBadRequest || !strings.HasPrefix(problemOf(t, rec).Detail, "stat: unknown query parameter") {
			t.Errorf("GET %s?stat=running: %d %s", path, rec.Code, rec.Body)
		}
	}
	rec := b.do(t, http.MethodGet, "/api/v1/dags/~/dagRuns?state=runing", "", "")
	if rec.Code != http.StatusBadRequest || !strings.Contains(problemOf(t, rec).Detail, `state: "runing" is not one of`) {
		t.Errorf("bad state: %d %s", rec.Code, rec.Body)
	}
	rec = b.do(t, http.MethodGet, "/api/v1/dags/~/dagRuns?order_by=colour", "", "")
	if rec.Code != http.StatusBadRequest || !strings.Contains(problemOf(t, rec).Detail, "order_by") {
		t.Errorf("bad order_by: %d %s", rec.Code, rec.Body)
	}
	rec = b.do(t, http.MethodGet, "/api/v1/dags/~/dagRuns?start_date_gte=yesterday", "", "")
	if rec.Code != http.StatusBadRequest || !strings.Contains(problemOf(t, rec).Detail, "start_date_gte") {
		t.Errorf("bad date: %d %s", rec.Code, rec.Body)
	}
}

// TestRunAndTaskFilters: state, run_type, date ranges and order_by select and order runs; state
// and pool select task instances.
func TestRunAndTaskFilters(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{token: testToken, readsOpen: true})
	b.pause(t, "held") // held's load waits (paused), so its run stays running
	for _, id := range []string{"q1", "q2"} {
		if rec := b.trigger(t, "quick", id, ""); rec.Code != http.StatusOK {
			t.Fatalf("quick %s: %d %s", id, rec.Code, rec.Body)
		}
		b.waitRunEnd(t, "quick", id)
	}
	if rec := b.trigger(t, "held", "h1", `, "logical_date": "2020-01-01T00:00:00Z"`); rec.Code != http.StatusAccepted {
		t.Fatalf("held: %d %s", rec.Code, rec.Body)
	}
	ids := func(path string) []string {
		t.Helper()
		var got dagRunCollection
		if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, path, ""), &got); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range got.DAGRuns {
			out = append(out, r.DAGRunID)
		}
		if got.TotalEntries < len(out) {
			t.Errorf("%s: total %d < %d listed", path, got.TotalEntries, len(out))
		}
		return out
	}
	cases := []struct {
		path string
		want []string
	}{
		{"/api/v1/dags/~/dagRuns?state=running", []string{"h1"}},
		{"/api/v1/dags/~/dagRuns?state=success&order_by=run_id", []string{"q1", "q2"}},
		{"/api/v1/dags/~/dagRuns?state=success,running&order_by=-run_id", []string{"q2", "q1", "h1"}},
		{"/api/v1/dags/~/dagRuns?run_type=manual&order_by=run_id", []string{"h1", "q1", "q2"}},
		{"/api/v1/dags/~/dagRuns?run_type=scheduled", nil},
		{"/api/v1/dags/~/dagRuns?daemon=test-daemon&order_by=run_id", []string{"h1", "q1", "q2"}},
		{"/api/v1/dags/~/dagRuns?daemon=elsewhere,nobody", nil},
		{"/api/v1/dags/~/dagRuns?execution_date_lte=2021-01-01T00:00:00Z", []string{"h1"}},
		{"/api/v1/dags/~/dagRuns?logical_date_gte=2021-01-01", []string{"q2", "q1"}},
		{"/api/v1/dags/~/dagRuns?end_date_gte=2000-01-01T00:00:00%2B00:00&order_by=run_id", []string{"q1", "q2"}},
		{"/api/v1/dags/quick/dagRuns?order_by=run_id&limit=1&offset=1", []string{"q2"}},
	}
	for _, tc := range cases {
		if got := ids(tc.path); !slices.Equal(got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.path, got, tc.want)
		}
	}
	tis := func(path string) []string {
		t.Helper()
		var got taskInstanceCollection
		if err := json.Unmarshal(b.must(t, http.StatusOK, http.MethodGet, path, ""), &got); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ti := range got.TaskInstances {
			out = append(out, ti.TaskID)
		}
		return out
	}
	const tiPath = "/api/v1/dags/held/dagRuns/h1/taskInstances"
	for path, want := range map[string][]string{
		tiPath + "?state=scheduled":           {"load"},
		tiPath + "?state=none":                {"after"},
		tiPath + "?pool=db":                   {"load"},
		tiPath + "?order_by=-task_id":         {"load", "after"},
		tiPath + "?start_date_gte=2000-01-01": nil,
	} {
		if got := tis(path); !slices.Equal(got, want) {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
}
