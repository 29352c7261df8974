package ui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/executor/runner"
	"github.com/poolflow/poolflow/internal/testwait"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

func TestRootRedirectsToUI(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	rec := b.get(t, "/")
	if rec.Code != http.StatusFound || rec.Header().Get("Location") != "/ui/" {
		t.Fatalf("GET /: %d %q", rec.Code, rec.Header().Get("Location"))
	}
}

// TestPages opens every page of a finished run and checks what each must show.
func TestPages(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.trigger(t, "diamond", "r1")
	if st := b.waitRunEnd(t, "diamond", "r1"); st != "success" {
		t.Fatalf("run ended %s", st)
	}
	tests := []struct {
		path string
		want []string
	}{
		{"/ui/", []string{`href="/ui/dags/diamond"`, "one quick task", `class="chip" href="/ui/?tag=demo"`,
			`href="/ui/dags/diamond/runs/r1"`, "manual only"}},
		{"/ui/?tag=demo", []string{`href="/ui/dags/quick"`}},
		{"/ui/dags/diamond", []string{`<svg`, `data-task="join"`, `class="grid"`, `data-runs="1" data-tasks="4"`,
			`action="/ui/dags/diamond/trigger"`, `href="/ui/dags/diamond/runs/r1/tasks/left"`}},
		{"/ui/dags/diamond?run=r1", []string{`data-state="success"`}},
		{"/ui/dags/diamond/runs/r1", []string{`class="gantt"`, `href="/ui/dags/diamond/runs/r1/tasks/start"`,
			`href="/ui/pools#pool-default"`, "success"}},
		{"/ui/dags/diamond/runs/r1/tasks/join", []string{"try 1", `id="log-1"`, "Requirements", "_global"}},
		{"/ui/pools", []string{`id="pool-db"`, "the database", `class="timeline"`, `class="occupancy"`, "strict",
			"Recent terminal entries"}},
		{"/ui/login", []string{"no users yet"}},
	}
	for _, tt := range tests {
		body := b.page(t, http.StatusOK, tt.path)
		for _, w := range tt.want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s: no %q in the page", tt.path, w)
			}
		}
		if !strings.Contains(body, `<script src="/ui/static/app.js" defer></script>`) {
			t.Errorf("GET %s: no script", tt.path)
		}
	}
	if rec := b.get(t, "/ui/static/style.css"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "prefers-color-scheme: dark") {
		t.Errorf("style.css: %d", rec.Code)
	}
	if rec := b.get(t, "/ui/static/app.js"); rec.Code != http.StatusOK {
		t.Errorf("app.js: %d", rec.Code)
	}
}

func TestNotFoundPages(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.trigger(t, "quick", "r1")
	b.waitRunEnd(t, "quick", "r1")
	for path, want := range map[string]string{
		"/ui/dags/nosuch":                          "dag nosuch not found",
		"/ui/dags/quick/runs/nosuch":               "dag run nosuch of dag quick not found",
		"/ui/dags/quick/runs/r1/tasks/nosuch":      "task nosuch not found in dag run r1 of dag quick",
		"/ui/dags/nosuch/runs/r1":                  "dag nosuch not found",
		"/ui/dags/quick/runs/r1/tasks/only/logs/9": "",
		"/ui/nothing/here":                         "There is no page at /ui/nothing/here.",
		"/ui/dags/diamond?run=nosuch":              "dag run nosuch of dag diamond not found",
	} {
		rec := b.get(t, path)
		if rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, rec.Code)
			continue
		}
		if want == "" {
			continue
		}
		body := rec.Body.String()
		if !strings.Contains(strings.ToLower(body), strings.ToLower(want)) || !strings.Contains(body, "<h1>Not found</h1>") {
			t.Errorf("GET %s: the 404 page does not say %q:\n%s", path, want, body)
		}
	}
}

// TestEscaping: a DAG id, a conf and an import error full of markup come out as text.
func TestEscaping(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	evil := `<script>alert("x")</script>`
	err := b.st.WithTx(context.Background(), func(tx store.Tx) error {
		if err := tx.UpsertDAG(evil, "dags/"+evil+".yaml", "@daily", time.Now()); err != nil {
			return err
		}
		return tx.SetImportErrors(map[string]string{"dags/" + evil + ".yaml": "dags/x.yaml:1:1: " + evil}, time.Now())
	})
	if err != nil {
		t.Fatal(err)
	}
	conf := `{"q": "it's \"quoted\" </script><script>alert(1)</script>", "n": 1}`
	rec := b.request(t, http.MethodPost, "/ui/dags/quotes/trigger",
		url.Values{"conf": {conf}, "run_id": {"q1"}, "queue": {"yes"}}, nil)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/ui/dags/quotes/runs/q1" {
		t.Fatalf("trigger: %d %q %s", rec.Code, rec.Header().Get("Location"), rec.Body.String())
	}
	b.waitRunEnd(t, "quotes", "q1")
	pages := []string{"/ui/", "/ui/dags/" + url.PathEscape(evil), "/ui/dags/quotes/runs/q1", "/ui/dags/quotes/runs/q1/tasks/say"}
	for _, p := range pages {
		rec := b.get(t, p)
		body := rec.Body.String()
		if strings.Contains(body, "<script>alert") {
			t.Errorf("GET %s: markup from data reached the page unescaped", p)
		}
	}
	if body := b.page(t, http.StatusOK, "/ui/"); !strings.Contains(body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") {
		t.Errorf("the DAG list does not show the id as text")
	}
	run := b.page(t, http.StatusOK, "/ui/dags/quotes/runs/q1")
	if !strings.Contains(run, `it&#39;s \&#34;quoted\&#34; &lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;`) {
		t.Errorf("the run page does not show the conf as text:\n%s", run)
	}
	// The task's log holds the params as the task printed them.
	task := b.page(t, http.StatusOK, "/ui/dags/quotes/runs/q1/tasks/say")
	if !strings.Contains(task, `&lt;script&gt;alert(2)&lt;/script&gt;`) {
		t.Errorf("the task page does not show the log as text")
	}
	nf := b.get(t, "/ui/dags/"+url.PathEscape("<b>nosuch</b>"))
	if nf.Code != http.StatusNotFound || strings.Contains(nf.Body.String(), "<b>nosuch") {
		t.Errorf("404 page: %d, escaped: %v", nf.Code, !strings.Contains(nf.Body.String(), "<b>nosuch"))
	}
}

func TestTriggerForm(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	fetch := map[string]string{"X-Poolflow-Fetch": "1"}
	tests := []struct {
		name   string
		form   url.Values
		status int
		msg    string
	}{
		{"bad json", url.Values{"conf": {`{"a": }`}}, http.StatusBadRequest, "conf: not valid JSON"},
		{"not an object", url.Values{"conf": {`[1, 2]`}}, http.StatusBadRequest, "Conf: want a JSON object"},
		{"bad run id", url.Values{"run_id": {"a/b"}}, http.StatusBadRequest, `Dag_run_id: "a/b" may only hold`},
		{"ok", url.Values{"conf": {`{"name": "you"}`}, "run_id": {"t1"}}, http.StatusOK, "Run t1 started."},
		{"duplicate", url.Values{"run_id": {"t1"}}, http.StatusConflict, "t1"},
	}
	for _, tt := range tests {
		rec := b.request(t, http.MethodPost, "/ui/dags/quick/trigger", tt.form, fetch)
		var res actionResult
		if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
			t.Fatalf("%s: answer is not JSON: %s", tt.name, rec.Body.String())
		}
		if rec.Code != tt.status || !strings.Contains(res.Message, tt.msg) || res.OK != (tt.status < 300) {
			t.Errorf("%s: %d %+v, want %d with %q", tt.name, rec.Code, res, tt.status, tt.msg)
		}
	}
	// Without the script, a refusal is a page saying why, with the API's status.
	rec := b.request(t, http.MethodPost, "/ui/dags/quick/trigger", url.Values{"conf": {`"x"`}}, nil)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "The action was refused") {
		t.Errorf("form without script: %d", rec.Code)
	}
	rec = b.request(t, http.MethodPost, "/ui/dags/nosuch/trigger", url.Values{}, nil)
	if rec.Code != http.StatusNotFound {
		t.Errorf("unknown DAG: %d", rec.Code)
	}
	// no-queue: refused when the pool is full.
	b.trigger(t, "hold", "h1")
	b.waitAdmitted(t, "hold", "h1", "keep")
	rec = b.request(t, http.MethodPost, "/ui/dags/held/trigger", url.Values{"queue": {"no"}}, fetch)
	if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "asked not to queue") {
		t.Errorf("no-queue: %d %s", rec.Code, rec.Body.String())
	}
}

func TestOriginIsChecked(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	for _, tt := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"no origin", map[string]string{"Origin": "-"}, http.StatusForbidden},
		{"other site", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"cross-site fetch", map[string]string{"Origin": "-", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"same origin", nil, http.StatusSeeOther},
		{"same-origin fetch", map[string]string{"Origin": "-", "Sec-Fetch-Site": "same-origin"}, http.StatusSeeOther},
	} {
		rec := b.request(t, http.MethodPost, "/ui/dags/quick/pause", url.Values{"paused": {"true"}}, tt.hdr)
		if rec.Code != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, rec.Code, tt.want)
		}
	}
	if !strings.Contains(b.page(t, http.StatusOK, "/ui/dags/quick"), "paused") {
		t.Error("the DAG is not shown paused")
	}
}

// TestSignIn: with a user, pages ask to sign in; a wrong password or an unknown name is
// refused alike; sign-in renews the session's token, sets an HttpOnly SameSite=Strict cookie,
// and the session acts as the user (the audit log names them); a forged cookie is nobody; a
// form without the session's CSRF token is refused; sign-out ends the session on the server.
func TestSignIn(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	if err := auth.CreateUser(context.Background(), b.st, "test", "otto", "otto's password", []store.Grant{{Role: vocab.RoleOperator}},
		time.Now()); err != nil {
		t.Fatal(err)
	}
	form := url.Values{"run_id": {"s1"}}
	rec := b.request(t, http.MethodPost, "/ui/dags/quick/trigger", form, nil)
	if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), "Sign in") {
		t.Fatalf("without a session: %d", rec.Code)
	}
	if rec := b.get(t, "/ui/dags/quick"); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/ui/login?next=%2Fui%2Fdags%2Fquick" {
		t.Errorf("a page without sign-in: %d to %q", rec.Code, rec.Header().Get("Location"))
	}
	before := b.jar[sessionCookie]
	for _, bad := range []url.Values{
		{"name": {"otto"}, "password": {"wrong password"}},
		{"name": {"nobody"}, "password": {"otto's password"}},
	} {
		rec = b.request(t, http.MethodPost, "/ui/login", bad, nil)
		if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), "That name and password do not match.") {
			t.Fatalf("%v: %d", bad, rec.Code)
		}
	}
	rec = b.request(t, http.MethodPost, "/ui/login", url.Values{"name": {"otto"}, "password": {"otto's password"},
		"next": {"//evil.example/"}}, nil)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/ui/" {
		t.Fatalf("sign-in: %d to %q", rec.Code, rec.Header().Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range rec.Result().Cookies() {
		if c.Name == sessionCookie {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Value == before || before == "" {
		t.Fatalf("session cookie %+v (before sign-in %q)", cookie, before)
	}
	if strings.Contains(cookie.Value, "otto") {
		t.Fatal("the cookie carries the user's name")
	}
	rec = b.request(t, http.MethodPost, "/ui/dags/quick/trigger", form, nil)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("signed in: %d %s", rec.Code, rec.Body.String())
	}
	b.waitRunEnd(t, "quick", "s1")
	evs, _, err := b.st.ListEvents(context.Background(), store.EventFilter{DAGID: "quick", Action: vocab.ActionTrigger})
	if err != nil || len(evs) != 1 || evs[0].Actor != "otto" {
		t.Fatalf("trigger events %+v %v", evs, err)
	}
	if body := b.page(t, http.StatusOK, "/ui/dags/quick/runs/s1/tasks/only"); !strings.Contains(body, `id="log-1"`) ||
		!strings.Contains(body, `id="whoami">otto</a>`) {
		t.Error("the signed-in page lacks the log or the user's name")
	}
	// The page before sign-in carried the pre-sign-in token: it is worth nothing now.
	if rec := b.request(t, http.MethodGet, "/ui/dags/quick", nil, map[string]string{"Cookie": sessionCookie + "=" + before}); rec.Code != http.StatusSeeOther {
		t.Errorf("the session token from before sign-in: %d", rec.Code)
	}
	// A forged cookie is nobody.
	if rec := b.request(t, http.MethodGet, "/ui/dags/quick", nil, map[string]string{"Cookie": sessionCookie + "=forged"}); rec.Code != http.StatusSeeOther {
		t.Errorf("a forged session cookie: %d", rec.Code)
	}
	// A form without the CSRF token, or with another's, is refused even from this origin.
	for _, tok := range []string{"-", "not-the-token"} {
		rec = b.request(t, http.MethodPost, "/ui/dags/quick/pause", url.Values{"paused": {"true"}, "csrf": {tok}}, nil)
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "CSRF") {
			t.Errorf("csrf %q: %d", tok, rec.Code)
		}
	}
	signedIn := b.jar[sessionCookie]
	rec = b.request(t, http.MethodPost, "/ui/logout", url.Values{}, nil)
	if rec.Code != http.StatusSeeOther {
		t.Errorf("sign-out: %d", rec.Code)
	}
	if rec := b.request(t, http.MethodGet, "/ui/dags/quick", nil, map[string]string{"Cookie": sessionCookie + "=" + signedIn}); rec.Code != http.StatusSeeOther {
		t.Errorf("the session after sign-out: %d", rec.Code)
	}
	evs, _, _ = b.st.ListEvents(context.Background(), store.EventFilter{})
	var seen []string
	for _, e := range evs {
		if e.Action == vocab.ActionSignIn || e.Action == vocab.ActionSignOut {
			seen = append(seen, e.Actor+" "+string(e.Action)+" "+e.Outcome)
		}
	}
	if want := []string{"otto sign_out ok", "otto sign_in ok", "api:192.0.2.1 sign_in refused: unknown user or wrong password",
		"api:192.0.2.1 sign_in refused: unknown user or wrong password"}; strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Errorf("sign-in events %q, want %q", seen, want)
	}
}

// TestSignInThrottled: a flood of wrong passwords for one name is refused after the first few
// without checking them; another name from another browser still gets in.
func TestSignInThrottled(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.signIn(t, "ada", "admin")
	b.signOut()
	refused := 0
	for range 1000 {
		rec := b.request(t, http.MethodPost, "/ui/login", url.Values{"name": {"ada"}, "password": {"guess"}}, nil)
		switch rec.Code {
		case http.StatusTooManyRequests:
			refused++
		case http.StatusUnauthorized:
		default:
			t.Fatalf("a guess: %d", rec.Code)
		}
	}
	if refused < 980 {
		t.Fatalf("%d of 1000 guesses throttled", refused)
	}
	rec := b.request(t, http.MethodPost, "/ui/login", url.Values{"name": {"ada"}, "password": {"password-ada"}}, nil)
	if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "try again in") {
		t.Fatalf("the real password during the flood: %d", rec.Code)
	}
	// Another user, from another address, is not held up.
	if err := auth.CreateUser(context.Background(), b.st, "test", "bob", "password-bob", []store.Grant{{Role: vocab.RoleViewer}},
		time.Now()); err != nil {
		t.Fatal(err)
	}
	b.signOut()
	rec = b.request(t, http.MethodPost, "/ui/login", url.Values{"name": {"bob"}, "password": {"password-bob"}},
		map[string]string{"RemoteAddr": "198.51.100.7:4242"})
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("bob from elsewhere during the flood: %d", rec.Code)
	}
	// A minute after the flood, ada gets in.
	b.signOut()
	b.advance(time.Minute)
	rec = b.request(t, http.MethodPost, "/ui/login", url.Values{"name": {"ada"}, "password": {"password-ada"}}, nil)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("ada after the flood: %d %s", rec.Code, rec.Body)
	}
	// Two hours and more without a request end the session.
	if rec := b.get(t, "/ui/"); rec.Code != http.StatusOK {
		t.Fatalf("signed in: %d", rec.Code)
	}
	b.advance(sessionIdle + time.Minute)
	if rec := b.get(t, "/ui/"); rec.Code != http.StatusSeeOther {
		t.Fatalf("after %s idle: %d", sessionIdle, rec.Code)
	}
}

// TestActions cancels a waiting entry from the pools page and from the task page, approves and
// rejects gates, and marks a task failed, through the forms.
func TestActions(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.trigger(t, "hold", "h1")
	b.waitAdmitted(t, "hold", "h1", "keep")
	b.trigger(t, "held", "w1")
	d := b.waiting(t, "held", "w1", "load")
	pools := b.page(t, http.StatusOK, "/ui/pools")
	reason := d.Entry.Reason
	if !strings.Contains(reason, "pool db is full") || !strings.Contains(pools, htmlText(reason)) {
		t.Fatalf("the pools page does not give the reason %q", reason)
	}
	cancel := "/ui/pools/db/queue/" + itoa(int(d.Entry.ID)) + "/cancel"
	if !strings.Contains(pools, `action="`+cancel+`"`) {
		t.Fatalf("no cancel form for entry %d", d.Entry.ID)
	}
	rec := b.request(t, http.MethodPost, cancel, url.Values{"back": {"/ui/pools"}}, nil)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/ui/pools" {
		t.Fatalf("cancel: %d %s", rec.Code, rec.Body.String())
	}
	if rec := b.request(t, http.MethodPost, cancel, url.Values{}, nil); rec.Code != http.StatusConflict {
		t.Errorf("second cancel: %d", rec.Code)
	}
	task := b.page(t, http.StatusOK, "/ui/dags/held/runs/w1/tasks/load")
	if !strings.Contains(task, "failed") {
		t.Errorf("the cancelled task is not failed")
	}
	// A try that never started says so, and how it ended, instead of "started –".
	if !strings.Contains(task, "never started: cancelled while waiting for db") || !strings.Contains(task, "It was never admitted") {
		t.Errorf("the cancelled try does not say it never started")
	}
	// The task page's cancel, on another waiting entry.
	b.trigger(t, "held", "w2")
	b.waiting(t, "held", "w2", "load")
	if !strings.Contains(b.page(t, http.StatusOK, "/ui/dags/held/runs/w2/tasks/load"), `id="cancel-entry"`) {
		t.Error("no cancel button on a waiting task")
	}
	rec = b.request(t, http.MethodPost, "/ui/dags/held/runs/w2/tasks/load/cancel", url.Values{}, nil)
	if rec.Code != http.StatusSeeOther {
		t.Errorf("task cancel: %d %s", rec.Code, rec.Body.String())
	}
	// Mark failed.
	rec = b.request(t, http.MethodPost, "/ui/dags/hold/runs/h1/tasks/keep/fail", url.Values{}, nil)
	if rec.Code != http.StatusSeeOther {
		t.Errorf("mark failed: %d %s", rec.Code, rec.Body.String())
	}
	if st := b.waitRunEnd(t, "hold", "h1"); st != "failed" {
		t.Errorf("marked-failed run ended %s", st)
	}
	// Gates.
	b.trigger(t, "gate", "g1")
	b.trigger(t, "gate", "g2")
	page := b.page(t, http.StatusOK, "/ui/dags/gate/runs/g1/tasks/approve")
	if !strings.Contains(page, `id="approve"`) || !strings.Contains(page, "waiting: for a person to approve or reject") {
		t.Fatalf("no approval form")
	}
	rec = b.request(t, http.MethodPost, "/ui/dags/gate/runs/g1/tasks/approve/approve", url.Values{"note": {`"ok" <b>`}}, nil)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("approve: %d %s", rec.Code, rec.Body.String())
	}
	if st := b.waitRunEnd(t, "gate", "g1"); st != "success" {
		t.Errorf("approved run ended %s", st)
	}
	rec = b.request(t, http.MethodPost, "/ui/dags/gate/runs/g2/tasks/approve/reject", url.Values{"note": {"no"}},
		map[string]string{"X-Poolflow-Fetch": "1"})
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "approve rejectd") && !strings.Contains(rec.Body.String(), "rejected") {
		t.Errorf("reject: %d %s", rec.Code, rec.Body.String())
	}
	if st := b.waitRunEnd(t, "gate", "g2"); st != "failed" {
		t.Errorf("rejected run ended %s", st)
	}
	if page := b.page(t, http.StatusOK, "/ui/dags/gate/runs/g1/tasks/approve"); !strings.Contains(page, "approved by api") ||
		!strings.Contains(page, "&#34;ok&#34; &lt;b&gt;") {
		t.Errorf("the decision and its note are not shown")
	}
	rec = b.request(t, http.MethodPost, "/ui/dags/gate/runs/g1/tasks/approve/approve", url.Values{}, nil)
	if rec.Code != http.StatusConflict {
		t.Errorf("second approve: %d", rec.Code)
	}
}

func TestLogTail(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.trigger(t, "talk", "l1")
	b.waitAdmitted(t, "talk", "l1", "say")
	path := "/ui/dags/talk/runs/l1/tasks/say/logs/1"
	// The task says it wrote its first line; the runner copies it to the log on its own time, so
	// the log is read again each time the file changes.
	if _, err := b.talked.Line(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	var rec *httptest.ResponseRecorder
	if err := testwait.Until(runner.LogPath(b.stateDir, "talk", "l1", "say", 1), 30*time.Second, func() bool {
		rec = b.get(t, path)
		return strings.Contains(rec.Body.String(), "first line")
	}); err != nil {
		t.Fatal(err)
	}
	if rec.Header().Get("X-Log-Running") != "1" {
		t.Errorf("running attempt: X-Log-Running %q", rec.Header().Get("X-Log-Running"))
	}
	size := rec.Header().Get("X-Log-Size")
	b.release(t, "go-on")
	b.waitRunEnd(t, "talk", "l1")
	rec = b.get(t, path+"?offset="+size)
	if rec.Body.String() != "second line\n" || rec.Header().Get("X-Log-Running") != "0" {
		t.Errorf("tail after %s: %q running %q", size, rec.Body.String(), rec.Header().Get("X-Log-Running"))
	}
}

var entityRE = regexp.MustCompile(`[&<>"']`)

// htmlText is how html/template writes a text.
func htmlText(s string) string {
	return entityRE.ReplaceAllStringFunc(s, func(c string) string {
		return map[string]string{"&": "&amp;", "<": "&lt;", ">": "&gt;", `"`: "&#34;", "'": "&#39;"}[c]
	})
}

// TestGanttAxis: a short run's Gantt axis is in milliseconds from its first attempt and spans
// the run (its last bar ends at the right edge); a long one is in wall-clock time.
func TestGanttAxis(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		end  time.Duration
		want []string
		not  []string
	}{
		{"19 ms", 19 * time.Millisecond, []string{">+5 ms<", ">+15 ms<"}, []string{">12:00:"}},
		{"800 ms", 800 * time.Millisecond, []string{">+100 ms<", ">+800 ms<"}, []string{">12:00:"}},
		{"40 s", 40 * time.Second, []string{">12:00:10<", ">12:00:40<"}, []string{">+"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bars := []bar{{Task: "a", State: "success", Start: t0, End: t0.Add(c.end / 2)},
				{Task: "b", State: "success", Start: t0.Add(c.end / 2), End: t0.Add(c.end)}}
			got := string(ganttSVG([]string{"a", "b"}, nil, bars))
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("no tick %q in %s", w, got)
				}
			}
			for _, n := range c.not {
				if strings.Contains(got, n) {
					t.Errorf("tick %q in %s", n, got)
				}
			}
			// b ends at the axis' right edge: x = label width + chart width.
			if !strings.Contains(got, `x="575" y="50" width="425"`) {
				t.Errorf("bar b does not end at the right edge: %s", got)
			}
		})
	}
}

// TestTimelineTickLabels: an hour's axis labels every ten minutes, except a tick too close to
// the "now" label at the right edge, whose label would overprint it (its grid line stays).
func TestTimelineTickLabels(t *testing.T) {
	to := time.Date(2026, 12, 1, 12, 21, 0, 0, time.UTC) // a tick at 12:20, a minute before now
	got := string(timelineSVG("db", 1, nil, to.Add(-time.Hour), to))
	for _, want := range []string{">11:30<", ">12:10<", ">now<"} {
		if !strings.Contains(got, want) {
			t.Errorf("no label %q", want)
		}
	}
	if strings.Contains(got, ">12:20<") {
		t.Error("the 12:20 label overprints now")
	}
	if n := strings.Count(got, `class="grid"`); n != 6 {
		t.Errorf("%d grid lines, want 6 (11:30 to 12:20)", n)
	}
}

// TestTaskOutput: the task page shows a task instance's output as indented JSON, escaped (§14).
func TestTaskOutput(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.trigger(t, "emits", "o1")
	if state := b.waitRunEnd(t, "emits", "o1"); state != "success" {
		t.Fatalf("run ended %s", state)
	}
	page := b.page(t, http.StatusOK, "/ui/dags/emits/runs/o1/tasks/emit")
	want := htmlText("{\n  \"files\": [\n    \"<b>a.csv</b>\"\n  ],\n  \"n\": 1\n}")
	if !strings.Contains(page, `<pre class="json" id="task-output">`+want+`</pre>`) {
		t.Fatalf("task page lacks the output %q:\n%s", want, page)
	}
	// The task after it shows its argv and env rendered, one item per argument, the token masked.
	page = b.page(t, http.StatusOK, "/ui/dags/emits/runs/o1/tasks/use")
	for _, want := range []string{
		`<li><code>` + htmlText("<b>a.csv</b> and more") + `</code></li><li><code>emits</code></li>`,
		`<dt><code>FILE</code></dt><dd><code>` + htmlText("<b>a.csv</b>") + `</code></dd>`,
		`<dt><code>API_TOKEN</code></dt><dd><span class="muted" title="named like a secret: not shown">***</span></dd>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("task page lacks %s", want)
		}
	}
	if strings.Contains(page, ">o1<") && strings.Contains(page, "API_TOKEN</code></dt><dd><code>o1") {
		t.Error("the token's value is shown")
	}
}
