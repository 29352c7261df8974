package ui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// apiPoolOf reads a pool over the API (404: ok false).
func apiPoolOf(t *testing.T, b *bundle, name string) (apiPool, bool) {
	t.Helper()
	status, body := b.srv.Call(server.WithPrincipal(context.Background(), testAdmin), http.MethodGet, "/api/v1/pools/"+name, nil, testToken)
	if status == http.StatusNotFound {
		return apiPool{}, false
	}
	var p apiPool
	if status != http.StatusOK || json.Unmarshal(body, &p) != nil {
		t.Fatalf("pool %s: %d %s", name, status, body)
	}
	return p, true
}

// holdIn writes an attempt holding slots of pool, as a daemon elsewhere would have admitted it.
func holdIn(t *testing.T, b *bundle, pool string, slots int) {
	t.Helper()
	now := time.Now().UTC()
	err := b.st.WithTx(context.Background(), func(tx store.Tx) error {
		run := store.Run{DAGID: "held", RunID: "holder", RunType: vocab.RunManual, LogicalDate: now, State: vocab.RunRunning,
			QueuedAt: now, StartDate: now, Owner: "elsewhere"}
		if err := tx.InsertRun(&run); err != nil {
			return err
		}
		e := store.Entry{Run: run.PK, TaskID: "load", TryNumber: 1, Label: "held.load try 1", Priority: 1, Due: now,
			State: vocab.EntryWaiting, CreatedAt: now, Owner: "elsewhere", Needs: []store.Requirement{{Pool: pool, Slots: slots}}}
		if err := tx.InsertEntry(&e); err != nil {
			return err
		}
		return tx.Admit(&e, "elsewhere", 1, now, now.Add(time.Hour))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPoolAdmin: an admin creates, resizes and deletes a pool from the pools page, each asked
// twice (the first post shows what it will do, the second does it through the API). A shrink
// below the slots held says what happens (running attempts keep their slots, nobody new starts
// until the pool is under its new size) and its confirmation forces it; a delete of a pool that
// holds slots too. A pool of poolflow.yaml is read-only and says why; a viewer sees none of the
// forms and is refused the posts.
func TestPoolAdmin(t *testing.T) {
	b := setup(t, setupOpts{})
	b.signIn(t, "ada", "admin")
	post := func(path string, form url.Values) *httptest.ResponseRecorder {
		t.Helper()
		return b.request(t, http.MethodPost, path, form, nil)
	}
	page := b.page(t, http.StatusOK, "/ui/pools")
	for _, want := range []string{`id="pool-new-form"`, `id="pool-readonly-db"`, "defined in poolflow.yaml: it is read-only here",
		"The default pool belongs to the configuration"} {
		if !strings.Contains(page, want) {
			t.Errorf("the admin's pools page has no %s", want)
		}
	}

	create := url.Values{"name": {"ledger"}, "slots": {"3"}, "teams": {"finance, ops"}, "description": {"the ledger DB"}, "ordering": {"strict"}}
	rec := post("/ui/pools/new", create)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "Create pool ledger?") ||
		!strings.Contains(rec.Body.String(), "3 slots, ordering strict, open to team finance, ops.") {
		t.Fatalf("create preview: %d %s", rec.Code, rec.Body)
	}
	if _, ok := apiPoolOf(t, b, "ledger"); ok {
		t.Fatal("the preview created the pool")
	}
	create.Set("confirm", "1")
	if rec = post("/ui/pools/new", create); rec.Code != http.StatusSeeOther {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	p, ok := apiPoolOf(t, b, "ledger")
	if !ok || p.Slots != 3 || p.Ordering != vocab.Strict || strings.Join(p.Teams, ",") != "finance,ops" || deref(p.Description) != "the ledger DB" {
		t.Fatalf("created %+v", p)
	}
	if page = b.page(t, http.StatusOK, "/ui/pools"); !strings.Contains(page, `id="pool-set-ledger"`) || !strings.Contains(page, `id="pool-delete-ledger"`) {
		t.Errorf("no change and delete forms on the stored pool")
	}

	holdIn(t, b, "ledger", 2)
	rec = post("/ui/pools/ledger/set", url.Values{"slots": {"1"}, "teams": {"finance"}, "description": {"the ledger DB"}})
	body := rec.Body.String()
	for _, want := range []string{"Change pool ledger?", "Slots: 3 → 1 slot.", "2 slots are held now, more than 1",
		"Running attempts keep their slots", "nobody new starts in ledger until fewer than 1 are in use",
		"Confirming forces the shrink", "Open to: team finance, ops → team finance.", `name="force" value="1"`} {
		if !strings.Contains(body, want) {
			t.Errorf("resize preview has no %q", want)
		}
	}
	if p, _ := apiPoolOf(t, b, "ledger"); p.Slots != 3 {
		t.Fatalf("the preview resized the pool: %+v", p)
	}
	// Without force the API refuses a shrink below what is held (§4.1).
	if rec = post("/ui/pools/ledger/set", url.Values{"slots": {"1"}, "confirm": {"1"}}); rec.Code != http.StatusConflict ||
		!strings.Contains(rec.Body.String(), "2 slots are held now, more than 1") {
		t.Errorf("unforced shrink below use: %d %s", rec.Code, rec.Body)
	}
	if rec = post("/ui/pools/ledger/set", url.Values{"slots": {"1"}, "teams": {"finance"}, "force": {"1"}, "confirm": {"1"}}); rec.Code != http.StatusSeeOther {
		t.Fatalf("forced shrink: %d %s", rec.Code, rec.Body)
	}
	if p, _ := apiPoolOf(t, b, "ledger"); p.Slots != 1 || p.OccupiedSlots != 2 || strings.Join(p.Teams, ",") != "finance" {
		t.Errorf("after the shrink %+v, want 1 slot with 2 still held, team finance", p)
	}
	if page = b.page(t, http.StatusOK, "/ui/pools"); !strings.Contains(page, "over capacity") {
		t.Errorf("the shrunk pool does not say it is over capacity")
	}

	rec = post("/ui/pools/ledger/delete", url.Values{})
	if body = rec.Body.String(); !strings.Contains(body, "Delete pool ledger?") || !strings.Contains(body, "2 slots are held now") ||
		!strings.Contains(body, "keep running") {
		t.Errorf("delete preview: %s", body)
	}
	if rec = post("/ui/pools/ledger/delete", url.Values{"confirm": {"1"}, "force": {"1"}}); rec.Code != http.StatusSeeOther {
		t.Fatalf("delete: %d %s", rec.Code, rec.Body)
	}
	if _, ok := apiPoolOf(t, b, "ledger"); ok {
		t.Error("ledger still exists")
	}

	if rec = post("/ui/pools/db/set", url.Values{"slots": {"5"}}); rec.Code != http.StatusConflict ||
		!strings.Contains(rec.Body.String(), "defined in poolflow.yaml") {
		t.Errorf("a file pool's change: %d %s", rec.Code, rec.Body)
	}
	if rec = post("/ui/pools/new", url.Values{"name": {"x"}, "slots": {"many"}}); rec.Code != http.StatusBadRequest ||
		!strings.Contains(rec.Body.String(), "slots: want a whole number") {
		t.Errorf("bad slots: %d %s", rec.Code, rec.Body)
	}

	// A viewer: no forms, and the posts are refused.
	b.signOut()
	b.signIn(t, "vic", "viewer")
	page = b.page(t, http.StatusOK, "/ui/pools")
	for _, bad := range []string{`pool-new-form`, `action="/ui/pools/new"`, `/set"`, `/delete"`, `pool-readonly-db`} {
		if strings.Contains(page, bad) {
			t.Errorf("a viewer's pools page has %s", bad)
		}
	}
	if rec = post("/ui/pools/new", url.Values{"name": {"sneaky"}, "slots": {"1"}, "confirm": {"1"}}); rec.Code != http.StatusForbidden {
		t.Errorf("a viewer's create: %d %s", rec.Code, rec.Body)
	}
	if _, ok := apiPoolOf(t, b, "sneaky"); ok {
		t.Error("a viewer created a pool")
	}
}

// TestBrowserPoolAdmin: in the browser, New pool → its preview dialog → the pool's card; Change
// to fewer slots → the dialog → the card's new size; Delete → the dialog (a red button) → the
// card is gone. Then a viewer signs in and sees none of the admin forms.
func TestBrowserPoolAdmin(t *testing.T) {
	b := setup(t, setupOpts{})
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/ui/pools"))
	waitFor(t, ctx, "the new pool form", `document.querySelector("#pool-new-form")`)
	do(t, ctx, chromedp.Click(chromedp.CSS(`#pool-new summary`)),
		chromedp.SetValue(chromedp.CSS(`#pool-new-form input[name=name]`), "ledger"),
		chromedp.SetValue(chromedp.CSS(`#pool-new-form input[name=slots]`), "3"),
		chromedp.SetValue(chromedp.CSS(`#pool-new-form input[name=teams]`), "finance"))
	shot(t, ctx, "pools-new-form")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#pool-new-form button[type=submit]`)))
	waitFor(t, ctx, "the create dialog", `document.querySelector("dialog#confirm-dialog[open]")`)
	if txt := eval[string](t, ctx, `document.querySelector("dialog#confirm-dialog").innerText`); !strings.Contains(txt, "Create pool ledger?") {
		t.Errorf("the dialog says %q", txt)
	}
	shot(t, ctx, "pools-new-dialog")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#dialog-confirm`)))
	waitFor(t, ctx, "ledger's card", `document.querySelector("#pool-ledger .big-num") && document.querySelector("#pool-ledger .big-num").innerText.includes("of 3 slots")`)

	openAdmin := `(document.querySelector("#pool-admin-ledger").open = true)`
	eval[bool](t, ctx, openAdmin)
	do(t, ctx, chromedp.SetValue(chromedp.CSS(`#pool-set-ledger input[name=slots]`), "2"),
		chromedp.Click(chromedp.CSS(`#pool-set-ledger button[type=submit]`)))
	waitFor(t, ctx, "the resize dialog", `document.querySelector("dialog#confirm-dialog[open]")`)
	if txt := eval[string](t, ctx, `document.querySelector("dialog#confirm-dialog").innerText`); !strings.Contains(txt, "Slots: 3 → 2 slots.") {
		t.Errorf("the resize dialog says %q", txt)
	}
	shot(t, ctx, "pools-resize-dialog")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#dialog-confirm`)))
	waitFor(t, ctx, "ledger resized", `document.querySelector("#pool-ledger .big-num") && document.querySelector("#pool-ledger .big-num").innerText.includes("of 2 slots")`)

	eval[bool](t, ctx, openAdmin)
	do(t, ctx, chromedp.Click(chromedp.CSS(`#pool-delete-ledger button[type=submit]`)))
	waitFor(t, ctx, "the delete dialog", `document.querySelector("dialog#confirm-dialog[open]") && document.querySelector("#dialog-confirm.danger")`)
	shot(t, ctx, "pools-delete-dialog")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#dialog-confirm`)))
	waitFor(t, ctx, "ledger gone", `document.querySelector("#pool-db") && !document.querySelector("#pool-ledger")`)

	// The first user turns sign-in on; a viewer sees no admin form, at desktop and phone width.
	if err := auth.CreateUser(context.Background(), b.st, "test", "vic", "vic's password", []store.Grant{{Role: vocab.RoleViewer}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, chromedp.Navigate(base+"/ui/login?next=/ui/pools"))
	waitFor(t, ctx, "the sign-in form", `document.querySelector("#login input[name=name]")`)
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#login input[name=name]`), "vic"),
		chromedp.SendKeys(chromedp.CSS(`#login input[name=password]`), "vic's password"),
		chromedp.Submit(chromedp.CSS(`#login`)))
	waitFor(t, ctx, "the pools page", `location.pathname === "/ui/pools" && document.querySelector("#pool-db")`)
	if eval[bool](t, ctx, `!!document.querySelector("#pool-new-form, form[action$='/set'], form[action$='/delete'], .read-only")`) {
		t.Error("a viewer is shown a pool admin form")
	}
	shot(t, ctx, "pools-viewer")
}

// TestLimitCards: the pools page has a card for _global (the slots each daemon's running
// attempts hold of max_running, and a link to who waits with reason global_limit) and one per
// DAG with an open run: its running runs against max_active_runs, its queued runs (linked to
// its runs list), the running tasks of its busiest run against max_active_tasks, and a link to
// the entries waiting with reason dag_limit. In the browser they read at 1280 px and on a phone.
func TestLimitCards(t *testing.T) {
	b := setup(t, setupOpts{})
	b.trigger(t, "hold", "h1")
	b.waitAdmitted(t, "hold", "h1", "keep")
	page := b.page(t, http.StatusOK, "/ui/pools")
	for _, want := range []string{
		`id="limit-global"`, "max_running 8 per daemon", `1<span class="muted"> of 8 running · ui-test</span>`,
		`href="/ui/pools?reason=global_limit" id="limit-global-waiters"`,
		`id="limit-dag-hold"`, `of 16 runs running (max_active_runs)`,
		`busiest run <code>h1</code> 1/16`, `href="/ui/pools?dag=hold&amp;reason=dag_limit" class="limit-waiters"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the limits have no %s", want)
		}
	}
	if strings.Contains(page, `id="limit-dag-quick"`) {
		t.Errorf("a DAG with no open run has a card")
	}
	// A queued run of hold's DAG links to its runs list.
	now := time.Now().UTC()
	if err := b.st.WithTx(context.Background(), func(tx store.Tx) error {
		return tx.InsertRun(&store.Run{DAGID: "hold", RunID: "later", RunType: vocab.RunManual, LogicalDate: now, State: vocab.RunQueued,
			QueuedAt: now, Owner: "elsewhere"})
	}); err != nil {
		t.Fatal(err)
	}
	if page = b.page(t, http.StatusOK, "/ui/pools"); !strings.Contains(page, `href="/ui/dags/hold/runs?state=queued" class="limit-queued">1 queued run waits`) {
		t.Errorf("the queued run is not linked")
	}
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/ui/pools#limits"))
	waitFor(t, ctx, "the limit cards", `document.querySelector("#limit-global") && document.querySelector("#limit-dag-hold")`)
	shot(t, ctx, "pools-limits")
	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/ui/pools#limits"))
	waitFor(t, ctx, "the limit cards at phone width", `document.querySelector("#limit-dag-hold")`)
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the pools page at phone width scrolls sideways: %d px wide", w)
	}
	shot(t, ctx, "pools-limits-phone")
}
