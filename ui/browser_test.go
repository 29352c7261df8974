package ui

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Browser tests: chromedp drives Debian's chromium against a real server (httptest on a
// loopback port, a real daemon and store behind it). Each test saves full-page screenshots to
// $POOLFLOW_UI_SHOTS (make ui-shots sets it), else to its temporary folder. Every wait is on a
// condition in the page (chromedp.Poll), never a fixed sleep.

// browser is one chromium process shared by the tests; each test gets its own tab.
var browser struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if browser.cancel != nil {
		browser.cancel()
	}
	os.Exit(code)
}

// chromiumPath finds the browser: $POOLFLOW_CHROMIUM, else chromium on the PATH.
func chromiumPath() string {
	if p := os.Getenv("POOLFLOW_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// tab opens a browser tab at 1280×900, or skips the test loudly when there is no chromium (and
// fails it in CI, where .ci/run installs it).
func tab(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		msg := "chromium not found (apt-get install chromium, or set POOLFLOW_CHROMIUM): the browser tests of the web UI did NOT run"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		fmt.Fprintln(os.Stderr, "\n!!!!!!!! "+msg+" !!!!!!!!")
		t.Skip(msg)
	}
	browser.once.Do(func() {
		dir, err := os.MkdirTemp("", "poolflow-chromium")
		if err != nil {
			browser.err = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
			chromedp.DisableGPU, chromedp.UserDataDir(dir), chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
			chromedp.Flag("no-first-run", true), chromedp.Flag("hide-scrollbars", true))
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelCtx := chromedp.NewContext(alloc)
		browser.ctx = ctx
		browser.cancel = func() { cancelCtx(); cancelAlloc(); os.RemoveAll(dir) }
		browser.err = chromedp.Do(ctx) // starts the browser
	})
	if browser.err != nil {
		t.Fatalf("start chromium: %v", browser.err)
	}
	ctx, cancel := chromedp.NewContext(browser.ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancelT)
	return ctx
}

// serve puts the bundle's server on a loopback port, as serve does.
func serve(t *testing.T, b *bundle) string {
	t.Helper()
	ts := httptest.NewServer(b.srv)
	t.Cleanup(ts.Close)
	return ts.URL
}

// shot saves a full-page screenshot named name.png.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("POOLFLOW_UI_SHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitFor waits until a JavaScript condition holds in the page: it is checked at once and again
// at each change of the page's DOM (a MutationObserver), not at every animation frame.
func waitFor(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		_, err = chromedp.Run(ctx, chromedp.Poll[bool]("!!("+cond+")", chromedp.WithPollingMutation(),
			chromedp.WithPollingTimeout(time.Until(deadline))))
		// A navigation under the poll (a form that redirects) destroys the page's context:
		// poll again in the new page.
		if err == nil || !strings.Contains(err.Error(), "(-32000)") || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body ? document.body.innerText.slice(0, 3000) : ''"))
		t.Fatalf("waiting for %s (%s): %v\npage:\n%s", what, cond, err, body)
	}
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// markPage sets a marker that a reload would lose, to check that a page changed without one.
const markPage = "window.__poolflowMark = 42"
const pageKept = "window.__poolflowMark === 42"

// TestBrowserPages opens every page, at desktop and phone width, and checks the pictures: one
// graph node per task, one grid cell per task × run.
func TestBrowserPages(t *testing.T) {
	b := setup(t, setupOpts{})
	for _, id := range []string{"r1", "r2", "r3"} {
		b.trigger(t, "diamond", id)
		b.waitRunEnd(t, "diamond", id)
	}
	b.trigger(t, "hold", "h1")
	b.waitAdmitted(t, "hold", "h1", "keep")
	b.trigger(t, "held", "w1")
	b.waiting(t, "held", "w1", "load")
	b.trigger(t, "gate", "g1")
	base := serve(t, b)
	ctx := tab(t)

	do(t, ctx, chromedp.Navigate(base+"/"))
	waitFor(t, ctx, "the DAG list", `document.querySelector("a.dag-link[href='/ui/dags/diamond']")`)
	if n := eval[int](t, ctx, `document.querySelectorAll("table.dags tbody tr").length`); n != 10 {
		t.Errorf("DAG list: %d rows, want 10", n)
	}
	shot(t, ctx, "dags")

	do(t, ctx, chromedp.Navigate(base+"/ui/dags/diamond"))
	waitFor(t, ctx, "the graph", `document.querySelector("svg.graph")`)
	if n := eval[int](t, ctx, `document.querySelectorAll("svg.graph g.node").length`); n != 4 {
		t.Errorf("graph: %d nodes, want one per task (4)", n)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("svg.graph g.node[data-state=success]").length`); n != 4 {
		t.Errorf("graph: %d success nodes in the last run, want 4", n)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("svg.graph path.edge").length`); n != 4 {
		t.Errorf("graph: %d edges, want 4", n)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("table.grid tbody a.cell").length`); n != 4*3 {
		t.Errorf("grid: %d cells, want one per task × run (12)", n)
	}
	shot(t, ctx, "dag")

	do(t, ctx, chromedp.Navigate(base+"/ui/dags/diamond/runs/r1"))
	waitFor(t, ctx, "the Gantt chart", `document.querySelectorAll("svg.gantt rect.bar").length === 4`)
	shot(t, ctx, "run")

	do(t, ctx, chromedp.Navigate(base+"/ui/dags/diamond/runs/r1/tasks/join"))
	waitFor(t, ctx, "the attempt", `document.querySelector("details.attempt[open] pre.log")`)
	shot(t, ctx, "task")

	do(t, ctx, chromedp.Navigate(base+"/ui/dags/held/runs/w1/tasks/load"))
	waitFor(t, ctx, "the wait reason", `document.body.innerText.includes("pool db is full")`)
	// The waiting try has no log yet: it says so instead of "wrote no output".
	waitFor(t, ctx, "the queued try", `document.querySelector("details.attempt[open] .queued-note") && !document.querySelector("details.attempt[open] pre.log")`)
	shot(t, ctx, "task-waiting")

	do(t, ctx, chromedp.Navigate(base+"/ui/pools"))
	waitFor(t, ctx, "the pools", `document.querySelector("#pool-db svg.timeline") && document.querySelector("#pool-db tr[data-queue-id]")`)
	if got := eval[string](t, ctx, `document.querySelector("#pool-db table.waiting td.why").innerText`); !strings.Contains(got, "pool db is full") {
		t.Errorf("pools page: waiting reason %q", got)
	}
	shot(t, ctx, "pools")

	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(base+"/ui/pools"))
	waitFor(t, ctx, "the pools at phone width", `document.querySelector("#pool-db")`)
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 400 {
		t.Errorf("pools page at phone width scrolls sideways: %d px wide", w)
	}
	shot(t, ctx, "pools-phone")
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/diamond"))
	waitFor(t, ctx, "the DAG page at phone width", `document.querySelector("svg.graph")`)
	// The page itself never scrolls sideways at phone width (the graph and tables scroll in
	// their boxes); a long file path once made the whole page wider than the screen.
	waitFor(t, ctx, "the page to fit the screen", `document.documentElement.scrollWidth <= window.innerWidth`)
	shot(t, ctx, "dag-phone")
	do(t, ctx, chromedp.EmulateViewport(1280, 900))

	do(t, ctx, chromedp.Navigate(base+"/ui/dags/nosuch"))
	waitFor(t, ctx, "the 404 page", `document.querySelector("h1") && document.querySelector("h1").innerText === "Not found"`)
	shot(t, ctx, "not-found")
}

// TestBrowserTrigger triggers a run from the form and watches it reach success in the grid
// and the graph, without the page reloading.
func TestBrowserTrigger(t *testing.T) {
	b := setup(t, setupOpts{})
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/diamond"))
	waitFor(t, ctx, "the trigger form", `document.querySelector("#trigger-form")`)
	eval[int](t, ctx, markPage)
	do(t, ctx,
		chromedp.SetValue(chromedp.CSS(`#trigger-form textarea[name=conf]`), `{"who": "browser"}`),
		chromedp.SetValue(chromedp.CSS(`#trigger-form input[name=run_id]`), "from_form"),
		chromedp.Click(chromedp.CSS(`#trigger-form button[type=submit]`)))
	waitFor(t, ctx, "the answer", `document.querySelector("#trigger-form .form-msg.ok")`)
	waitFor(t, ctx, "the run in the grid", `document.querySelector("a.runbar[data-run=from_form]")`)
	waitFor(t, ctx, "success", `document.querySelectorAll("table.grid a.cell[data-state=success]").length === 4 &&
		document.querySelector("a.runbar[data-run=from_form]").classList.contains("st-success")`)
	if !eval[bool](t, ctx, pageKept) {
		t.Error("the page reloaded")
	}
	shot(t, ctx, "trigger-success")
	// A bad conf answers inline.
	do(t, ctx,
		chromedp.SetValue(chromedp.CSS(`#trigger-form textarea[name=conf]`), `{"who": `),
		chromedp.Click(chromedp.CSS(`#trigger-form button[type=submit]`)))
	waitFor(t, ctx, "the conf error", `document.querySelector("#trigger-form .form-msg.err") &&
		document.querySelector("#trigger-form .form-msg.err").innerText.includes("conf: not valid JSON")`)
	shot(t, ctx, "trigger-bad-conf")
}

// TestBrowserLogFollow reads a log line that the task writes while the page is open.
func TestBrowserLogFollow(t *testing.T) {
	b := setup(t, setupOpts{})
	base := serve(t, b)
	b.trigger(t, "talk", "l1")
	b.waitAdmitted(t, "talk", "l1", "say")
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/talk/runs/l1/tasks/say"))
	waitFor(t, ctx, "the first line", `document.querySelector("#log-1") && document.querySelector("#log-1").textContent.includes("first line")`)
	if eval[string](t, ctx, `document.querySelector("#log-1").dataset.running`) != "1" {
		t.Fatal("the attempt is not shown running")
	}
	eval[int](t, ctx, markPage)
	// Text selected while the log is followed stays selected as lines arrive and the run ends.
	if !eval[bool](t, ctx, selectText("#log-1", "first line")) {
		t.Fatal("cannot select in the log")
	}
	b.release(t, "go-on")
	waitFor(t, ctx, "the second line", `document.querySelector("#log-1").textContent.includes("second line")`)
	waitFor(t, ctx, "success", `document.querySelector(".head-actions .badge.st-success")`)
	waitRefreshes(t, ctx, 1)
	if !eval[bool](t, ctx, pageKept) {
		t.Error("the page reloaded")
	}
	if got := eval[string](t, ctx, `getSelection().toString()`); got != "first line" {
		t.Errorf("following the log changed the selection to %q", got)
	}
	if got := eval[string](t, ctx, `document.querySelector("#log-1").textContent`); strings.Count(got, "first line") != 1 {
		t.Errorf("log shown as %q", got)
	}
	shot(t, ctx, "log-follow")
}

// TestBrowserCancelFromPools cancels a waiting entry with its button on the pools page.
func TestBrowserCancelFromPools(t *testing.T) {
	b := setup(t, setupOpts{})
	b.trigger(t, "hold", "h1")
	b.waitAdmitted(t, "hold", "h1", "keep")
	b.trigger(t, "held", "w1")
	d := b.waiting(t, "held", "w1", "load")
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/ui/pools"))
	row := fmt.Sprintf(`#pool-db tr[data-queue-id="%d"]`, d.Entry.ID)
	waitFor(t, ctx, "the waiting entry", `document.querySelector('`+row+`')`)
	shot(t, ctx, "pools-waiting")
	eval[int](t, ctx, markPage)
	eval[bool](t, ctx, `window.confirm = () => true, true`)
	do(t, ctx, chromedp.Click(chromedp.CSS(row+` button`)))
	waitFor(t, ctx, "the entry to leave the queue", `!document.querySelector('`+row+`') &&
		document.querySelector("#pool-db .pool-tables").innerText.includes("No one is waiting")`)
	if !eval[bool](t, ctx, pageKept) {
		t.Error("the page reloaded")
	}
	if got := eval[string](t, ctx, `document.querySelector("#pool-db details.recent").textContent`); !strings.Contains(got, "cancelled") {
		t.Errorf("recent entries do not show the cancel: %q", got)
	}
	shot(t, ctx, "pools-cancelled")
}

// TestBrowserApprove approves a gate with a note.
func TestBrowserApprove(t *testing.T) {
	b := setup(t, setupOpts{})
	b.trigger(t, "gate", "g1")
	base := serve(t, b)
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/gate/runs/g1/tasks/approve"))
	waitFor(t, ctx, "the approval form", `document.querySelector("#approve")`)
	// A gate has no log: its attempt says why instead of "wrote no output".
	waitFor(t, ctx, "the gate's attempt", `document.querySelector("details.attempt .queued-note") && !document.querySelector("details.attempt pre.log")`)
	shot(t, ctx, "gate")
	do(t, ctx, chromedp.SetValue(chromedp.CSS(`#gate-form input[name=note]`), "ship it"),
		chromedp.Click(chromedp.CSS(`#approve`)))
	waitFor(t, ctx, "the approval", `document.body.innerText.includes("approved by api") && document.body.innerText.includes("ship it")`)
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/gate/runs/g1"))
	waitFor(t, ctx, "the run to succeed", `document.querySelector(".head-actions .badge.st-success")`)
	shot(t, ctx, "gate-approved")
}

// TestBrowserSignIn: with a token, an action is refused until the user signs in.
func TestBrowserSignIn(t *testing.T) {
	b := setup(t, setupOpts{})
	if err := auth.CreateUser(context.Background(), b.st, "test", "otto", "otto's password",
		[]store.Grant{{Role: vocab.RoleOperator}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := auth.CreateUser(context.Background(), b.st, "test", "vera", "vera's password",
		[]store.Grant{{Role: vocab.RoleViewer}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	b.trigger(t, "gate", "g1")
	base := serve(t, b)
	ctx := tab(t)
	// A user exists: every page sends the browser to sign in.
	do(t, ctx, chromedp.Navigate(base+"/ui/dags/gate/runs/g1/tasks/approve"))
	waitFor(t, ctx, "the sign-in form", `document.querySelector("#login input[name=name]")`)
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#login input[name=name]`), "otto"),
		chromedp.SendKeys(chromedp.CSS(`#login input[name=password]`), "wrong password"),
		chromedp.Submit(chromedp.CSS(`#login`)))
	waitFor(t, ctx, "the wrong password", `document.querySelector("#login .error")`)
	shot(t, ctx, "signin")
	do(t, ctx, chromedp.SetValue(chromedp.CSS(`#login input[name=password]`), "otto's password"),
		chromedp.Submit(chromedp.CSS(`#login`)))
	waitFor(t, ctx, "the task page", `location.pathname === "/ui/dags/gate/runs/g1/tasks/approve" && document.querySelector("#approve")`)
	if eval[bool](t, ctx, `document.cookie.includes("`+sessionCookie+`")`) {
		t.Error("the session cookie is readable by scripts")
	}
	if who := eval[string](t, ctx, `document.querySelector("#whoami").innerText`); who != "otto" {
		t.Errorf("signed in as %q", who)
	}
	do(t, ctx, chromedp.SetValue(chromedp.CSS(`#gate-form input[name=note]`), "ship it"),
		chromedp.Click(chromedp.CSS(`#approve`)))
	waitFor(t, ctx, "the approval", `document.body.innerText.includes("approved by otto") && document.body.innerText.includes("ship it")`)
	shot(t, ctx, "signin-approved")
	do(t, ctx, chromedp.Navigate(base+"/ui/events"))
	waitFor(t, ctx, "the audit log", `[...document.querySelectorAll("tr")].some(r => r.innerText.includes("otto") && r.innerText.includes("approve"))`)
	shot(t, ctx, "signin-events")
	evs, _, err := b.st.ListEvents(context.Background(), store.EventFilter{Action: vocab.ActionApprove})
	if err != nil || len(evs) != 1 || evs[0].Actor != "otto" {
		t.Fatalf("approve events %+v %v", evs, err)
	}
	// The account page: a token is made, shown once, and revoked.
	do(t, ctx, chromedp.Navigate(base+"/ui/account"))
	waitFor(t, ctx, "the account page", `document.querySelector("#token-form")`)
	do(t, ctx, chromedp.SetValue(chromedp.CSS(`#token-form input[name=name]`), "laptop"),
		chromedp.Submit(chromedp.CSS(`#token-form`)))
	waitFor(t, ctx, "the new token", `document.querySelector("#new-token-secret")`)
	secret := eval[string](t, ctx, `document.querySelector("#new-token-secret").innerText`)
	if !strings.HasPrefix(secret, auth.TokenPrefix) {
		t.Fatalf("new token %q", secret)
	}
	shot(t, ctx, "account-token")
	do(t, ctx, chromedp.Navigate(base+"/ui/account"))
	waitFor(t, ctx, "the token listed", `document.querySelector("#tokens tr[data-token] form")`)
	if eval[bool](t, ctx, `document.body.innerText.includes(`+strconv.Quote(secret)+`)`) {
		t.Fatal("the account page shows the secret again")
	}
	// Sign out, then vera (a viewer) sees no approve button and no trigger form.
	do(t, ctx, chromedp.Click(chromedp.CSS(`header form[action="/ui/logout"] button`)))
	waitFor(t, ctx, "the sign-in form", `document.querySelector("#login input[name=name]")`)
	do(t, ctx, chromedp.Navigate(base+"/ui/login?next=/ui/dags/gate"))
	waitFor(t, ctx, "the sign-in form", `document.querySelector("#login input[name=name]")`)
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#login input[name=name]`), "vera"),
		chromedp.SendKeys(chromedp.CSS(`#login input[name=password]`), "vera's password"),
		chromedp.Submit(chromedp.CSS(`#login`)))
	waitFor(t, ctx, "the DAG page", `location.pathname === "/ui/dags/gate" && document.querySelector("#whoami")`)
	if eval[bool](t, ctx, `!!document.querySelector("#trigger-form") || !!document.querySelector("form[action$='/pause']")`) {
		t.Error("a viewer is shown the trigger or pause form")
	}
	shot(t, ctx, "signin-viewer")
}
