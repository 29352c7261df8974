package ui

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// TestFormsCovered: every posting form of the templates maps to a known permission, so that
// withoutForbiddenForms hides exactly the buttons a user may not use (an unknown action would be
// admins-only: a new form must be added to formPermission).
func TestFormsCovered(t *testing.T) {
	t.Parallel()
	action := regexp.MustCompile(`<form method="post" action="([^"]*)"`)
	n := 0
	err := fs.WalkDir(templateFS, "templates", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, _ := fs.ReadFile(templateFS, path)
		for _, m := range action.FindAllStringSubmatch(string(data), -1) {
			n++
			if m[1] == "{{.Action}}" {
				// The note form and the clear/mark preview's confirm post to the path of the form
				// they stand for (…/note, …/clear, …/mark): covered by those.
				continue
			}
			// The template's action, with its expressions standing for path segments.
			a := regexp.MustCompile(`\{\{[^}]*\}\}`).ReplaceAllString(m[1], "x")
			if perm, _ := formPermission(a); perm == vocab.PermUsers {
				t.Errorf("%s: form action %q has no permission in formPermission", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 15 {
		t.Fatalf("found %d posting forms", n)
	}
}

// TestFormsHidden: a viewer's page keeps no action form; an operator of finance keeps finance's
// DAG's forms only; an admin and the open server keep all.
func TestFormsHidden(t *testing.T) {
	t.Parallel()
	page := []byte(`<p>x</p><form method="post" action="/ui/dags/etl/trigger" class="stack"><button>Go</button></form>` +
		`<form method="post" action="/ui/dags/pay/pause" class="inline"><button>Pause</button></form>` +
		`<form method="post" action="/ui/logout" class="inline"><button>Sign out</button></form>` +
		`<form method="post" action="/ui/backfills/7/cancel" data-dag="pay" data-action><button>Cancel</button></form>` +
		`<form method="post" action="/ui/backfills/8/cancel" data-dag="etl" data-action><button>Cancel</button></form>`)
	team := func(dag string) string {
		if dag == "pay" {
			return "finance"
		}
		return ""
	}
	user := func(grants string) auth.Principal {
		gs, _ := store.ParseGrants(grants)
		return auth.Principal{Kind: auth.KindUser, Name: "u", Grants: gs}
	}
	for _, tt := range []struct {
		p    auth.Principal
		keep []string
		drop []string
	}{
		{user("viewer"), []string{"/ui/logout"}, []string{"/trigger", "/pause", "/backfills/"}},
		{user("operator:finance"), []string{"/ui/dags/pay/pause", "/ui/logout", "/ui/backfills/7/cancel"}, []string{"/trigger", "/ui/backfills/8/"}},
		{user("admin"), []string{"/trigger", "/pause", "/ui/logout", "/backfills/7/", "/backfills/8/"}, nil},
		{auth.Open, []string{"/trigger", "/pause", "/backfills/8/"}, nil},
	} {
		out := string(withoutForbiddenForms(page, tt.p, team))
		for _, k := range tt.keep {
			if !strings.Contains(out, k) {
				t.Errorf("%v: %s dropped", tt.p.Grants, k)
			}
		}
		for _, d := range tt.drop {
			if strings.Contains(out, d) {
				t.Errorf("%v: %s kept", tt.p.Grants, d)
			}
		}
		if !strings.Contains(out, "<p>x</p>") {
			t.Error("the page lost its text")
		}
	}
	withToken := string(withCSRF(page, "TOK"))
	if strings.Count(withToken, `<input type="hidden" name="csrf" value="TOK">`) != 5 {
		t.Errorf("csrf fields: %s", withToken)
	}
}
