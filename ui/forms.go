package ui

import (
	"html"
	"net/url"
	"regexp"
	"strings"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/vocab"
)

// Buttons a user may not use are not shown (§15). Every action of the UI is a form that posts
// to a path naming what it does; formPermission maps that path to the API permission behind it,
// and a rendered page loses the forms its viewer lacks the permission for (on the DAG's team, when
// the path names a DAG). Done on the page's HTML, like the CSRF field, so a new form is covered
// without touching its template; TestFormsCovered checks every posting form of the templates has
// a permission here.

// postingForm matches a whole posting form (forms do not nest) and captures its action and the
// rest of its opening tag.
var postingForm = regexp.MustCompile(`(?s)<form method="post" action="([^"]*)"([^>]*)>.*?</form>`)

// dataDAG is a form's data-dag attribute: the DAG it acts on when its action does not name it
// (a backfill's pause, unpause and cancel).
var dataDAG = regexp.MustCompile(`\sdata-dag="([^"]*)"`)

// formPermission is the permission an action path needs ("" = any signed-in or open caller)
// and the DAG it acts on ("" = none).
func formPermission(action string) (vocab.Permission, string) {
	action = strings.ReplaceAll(action, "&amp;", "&")
	dag := ""
	if rest, ok := strings.CutPrefix(action, "/ui/dags/"); ok {
		seg, _, _ := strings.Cut(rest, "/")
		if d, err := url.PathUnescape(seg); err == nil {
			dag = d
		}
	}
	if strings.HasPrefix(action, "/ui/backfills/") {
		return vocab.PermBackfill, "" // a backfill's pause, unpause and cancel (§11); its form's data-dag names the DAG
	}
	last := action[strings.LastIndex(action, "/")+1:]
	if strings.HasPrefix(action, "/ui/pools/") && (last == "new" || last == "set" || last == "delete") {
		return vocab.PermPools, "" // create, change and delete a pool (§15: admins)
	}
	switch last {
	case "backfill":
		return vocab.PermBackfill, dag
	case "login", "logout":
		return "", ""
	case "trigger":
		return vocab.PermTrigger, dag
	case "pause":
		return vocab.PermPause, dag
	case "approve", "reject":
		return vocab.PermApprove, dag
	case "fail", "cancel":
		return vocab.PermCancel, dag
	case "clear", "mark", "note", "delete":
		return vocab.PermRepair, dag
	case "tokens", "revoke":
		return vocab.PermOwnToken, ""
	case "test": // a notifier's Send test (§13)
		return vocab.PermNotify, ""
	}
	return vocab.PermUsers, dag // an action this table does not know: admins only, until it is added
}

// withoutForbiddenForms drops the forms p may not use from a rendered page; team gives a DAG's
// team.
func withoutForbiddenForms(page []byte, p auth.Principal, team func(dag string) string) []byte {
	if p.Kind == auth.KindOpen {
		return page
	}
	return postingForm.ReplaceAllFunc(page, func(form []byte) []byte {
		m := postingForm.FindSubmatch(form)
		perm, dag := formPermission(string(m[1]))
		if d := dataDAG.FindSubmatch(m[2]); dag == "" && d != nil {
			dag = html.UnescapeString(string(d[1]))
		}
		if perm == "" {
			return form
		}
		if dag != "" && !p.Can(perm, team(dag)) || dag == "" && !p.CanAny(perm) {
			return nil
		}
		return form
	})
}

// dagTeam is a DAG's team ("" = none, or not loaded).
func (u *UI) dagTeam(dag string) string { return u.api.DAGTeam(dag) }
