package ui

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/dag"
	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/internal/testwait"
	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/storetest"
	"github.com/poolflow/poolflow/vocab"
	"golang.org/x/crypto/bcrypt"
)

const testToken = "s3cret"

// testConfig: db is a strict one-slot pool, so one holder makes everyone else wait.
const testConfig = `
max_running: 8
pools:
  db:
    slots: 1
    ordering: strict
    description: the database
  default: 4
`

// testDAGs: quick succeeds at once; diamond has four tasks; hold keeps db until the file
// "release" exists in the test's folder; held waits for db; gate is an approval gate; talk logs
// a line, says so on the pipe "talked", waits for the file "go-on", then logs another; quotes
// echoes its params; flaky's extract (one slot of db) fails until the file "fixed" exists, then
// load follows it.
func testDAGs(dir string) map[string]string {
	return map[string]string{
		"quick.yaml": `
description: one quick task
tags: [demo]
owner: tests
tasks:
  - id: only
    command: ["true"]
`,
		"diamond.yaml": `
tasks:
  - id: start
    command: ["true"]
  - id: left
    depends_on: [start]
    command: ["true"]
  - id: right
    depends_on: [start]
    command: ["true"]
  - id: join
    depends_on: [left, right]
    command: ["true"]
`,
		"hold.yaml": `
tasks:
  - id: keep
    bash: "while [ ! -e '` + filepath.Join(dir, "release") + `' ]; do sleep 0.05; done"
    pool_requirements: {db: 1}
`,
		"held.yaml": `
tasks:
  - id: load
    command: ["true"]
    pool_requirements: {db: 1}
    queue_timeout: 1h
`,
		"gate.yaml": `
tasks:
  - id: approve
    approval: {timeout: 24h}
  - id: publish
    depends_on: [approve]
    command: ["true"]
`,
		"talk.yaml": `
tasks:
  - id: say
    bash: "echo first line; echo said > '` + filepath.Join(dir, "talked") + `'; while [ ! -e '` + filepath.Join(dir, "go-on") + `' ]; do sleep 0.05; done; echo second line"
`,
		"flaky.yaml": `
tasks:
  - id: extract
    bash: "test -e '` + filepath.Join(dir, "fixed") + `'"
    pool_requirements: {db: 1}
  - id: load
    depends_on: [extract]
    command: ["true"]
    pool_requirements: {default: 2}
`,
		"emits.yaml": `
tasks:
  - id: emit
    bash: |
      printf '%s' '{"files": ["<b>a.csv</b>"], "n": 1}' > "$POOLFLOW_OUTPUT"
  - id: use
    depends_on: [emit]
    command: ["echo", "${{ tasks.emit.output.files[0] }} and more", "${{ dag_id }}"]
    env: {API_TOKEN: "${{ run_id }}", FILE: "${{ tasks.emit.output.files[0] }}"}
`,
		"mapped.yaml": `
tasks:
  - id: each
    expand: [a, b, bad, d, e]
    command: ["sh", "-c", 'test "$1" != bad', "each", "${{ item }}"]
  - id: after
    depends_on: [each]
    trigger_rule: all_done
    command: ["true"]
`,
		"quotes.yaml": `
params: {name: world}
tasks:
  - id: say
    bash: "printenv POOLFLOW_PARAMS; echo '<script>alert(2)</script>'"
`,
	}
}

// bundle is one test's fixtures: a real SQLite file, a started daemon, the API server with the
// UI mounted.
type bundle struct {
	dir      string
	st       store.Store
	daemon   *executor.Daemon
	srv      *server.Server
	notices  chan executor.Notice
	stateDir string
	talked   *testwait.Pipe // talk's say writes a line here once it logged its first

	// The browser's side of a session: the cookies the UI set and the CSRF token of its pages.
	// request keeps them and sends them, as a browser would.
	mu   sync.Mutex
	jar  map[string]string
	csrf string
	// ahead moves the UI's clock (sign-in throttle, idle sessions) forward.
	ahead atomic.Int64
}

// advance moves the UI's clock forward by d.
func (b *bundle) advance(d time.Duration) { b.ahead.Add(int64(d)) }

func init() { auth.Cost = bcrypt.MinCost }

// testAdmin is who the helpers' in-process API calls act as, whatever users the test made.
var testAdmin = auth.Principal{Kind: auth.KindUser, Name: "test-helper", Grants: []store.Grant{{Role: vocab.RoleAdmin}}}

type setupOpts struct {
	config string // added to testConfig (notifiers:)
	token  string
	api    string            // the API address the daemon advertises in its owner row
	dags   []*dag.DAG        // Go DAGs registered besides the YAML ones
	yaml   map[string]string // YAML DAG files written besides testDAGs' (file name → text)
	// lineSync is server.Config.LineSyncEntries: lines this long are read again in the background.
	lineSync int
}

func setup(t testing.TB, opts setupOpts) *bundle {
	t.Helper()
	dir := t.TempDir()
	b := &bundle{dir: dir, stateDir: filepath.Join(dir, "state"), notices: make(chan executor.Notice, 10000)}
	talked, err := testwait.NewPipe(filepath.Join(dir, "talked"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { talked.Close() })
	b.talked = talked
	dagsDir := filepath.Join(dir, "dags")
	for _, d := range []string{dagsDir, b.stateDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := testDAGs(dir)
	for name, body := range opts.yaml {
		files[name] = body
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dagsDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse("poolflow.yaml", []byte(testConfig+opts.config))
	if err != nil {
		t.Fatal(err)
	}
	st := storetest.Open(t, filepath.Join(b.stateDir, "poolflow.db"), store.Options{Synchronous: "OFF"})
	b.st = st
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := executor.New(executor.Config{Store: st, Settings: cfg, DAGsDir: dagsDir, GoDAGs: opts.dags, StateDir: b.stateDir,
		DaemonID: "ui-test", API: opts.api, Logger: quiet, KillGrace: 200 * time.Millisecond, ShutdownGrace: 2 * time.Second,
		Notify: func(n executor.Notice) {
			select {
			case b.notices <- n:
			default:
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Release what hold keeps, so that stopping does not wait for it.
	t.Cleanup(func() {
		_ = os.WriteFile(filepath.Join(dir, "release"), nil, 0o644)
		_ = os.WriteFile(filepath.Join(dir, "go-on"), nil, 0o644)
		_ = d.Stop()
	})
	b.daemon = d
	b.srv = server.New(server.Config{Store: st, Daemon: d, StateDir: b.stateDir, Token: opts.token, Logger: quiet,
		Settings: cfg, CommandWait: 2 * time.Second, LineSyncEntries: opts.lineSync, UI: func(api *server.Server) http.Handler {
			u := New(api).(*UI)
			u.now = func() time.Time { return time.Now().Add(time.Duration(b.ahead.Load())) }
			return u
		}})
	t.Cleanup(func() { b.srv.Close() })
	return b
}

// request sends one request in process, as a browser would: with the cookies earlier answers
// set (unless hdr gives a Cookie), keeping the ones this answer sets; a form post carries this
// server's Origin unless the test sets another (or none, with origin "-"), and the CSRF token of
// the session unless the form has one (csrf "-" sends none).
func (b *bundle) request(t testing.TB, method, path string, form url.Values, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	if form != nil && method == http.MethodPost {
		form = cloneValues(form)
		switch form.Get("csrf") {
		case "":
			form.Set("csrf", b.csrfToken(t))
		case "-":
			form.Del("csrf")
		}
	}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req := httptest.NewRequest(method, path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://example.com")
	}
	if addr, ok := hdr["RemoteAddr"]; ok {
		req.RemoteAddr = addr
		delete(hdr, "RemoteAddr")
	}
	for k, v := range hdr {
		if v == "-" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	if _, own := hdr["Cookie"]; !own {
		b.mu.Lock()
		for k, v := range b.jar {
			req.AddCookie(&http.Cookie{Name: k, Value: v})
		}
		b.mu.Unlock()
	}
	rec := httptest.NewRecorder()
	b.srv.ServeHTTP(rec, req)
	if _, own := hdr["Cookie"]; !own {
		b.keepCookies(rec)
	}
	return rec
}

func (b *bundle) keepCookies(rec *httptest.ResponseRecorder) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.jar == nil {
		b.jar = map[string]string{}
	}
	for _, c := range rec.Result().Cookies() {
		if c.MaxAge < 0 || c.Value == "" {
			delete(b.jar, c.Name)
		} else {
			b.jar[c.Name] = c.Value
		}
	}
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)

// csrfToken is the CSRF token of the bundle's session, read from a page once.
func (b *bundle) csrfToken(t testing.TB) string {
	t.Helper()
	b.mu.Lock()
	tok := b.csrf
	b.mu.Unlock()
	if tok != "" {
		return tok
	}
	rec := b.request(t, http.MethodGet, "/ui/login", nil, nil)
	m := csrfMeta.FindStringSubmatch(rec.Body.String())
	if m == nil {
		t.Fatalf("no CSRF token on the sign-in page: %d %s", rec.Code, rec.Body)
	}
	b.mu.Lock()
	b.csrf = m[1]
	b.mu.Unlock()
	return m[1]
}

// signOut forgets the bundle's session, as a new browser.
func (b *bundle) signOut() {
	b.mu.Lock()
	b.jar, b.csrf = nil, ""
	b.mu.Unlock()
}

// signIn creates a user with grants (unless it exists) and signs the bundle's browser in as it.
func (b *bundle) signIn(t testing.TB, name, grants string) {
	t.Helper()
	if _, err := b.st.GetUser(context.Background(), name); err != nil {
		gs, err := store.ParseGrants(grants)
		if err != nil {
			t.Fatal(err)
		}
		if err := auth.CreateUser(context.Background(), b.st, "test", name, "password-"+name, gs, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	rec := b.request(t, http.MethodPost, "/ui/login", url.Values{"name": {name}, "password": {"password-" + name}}, nil)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("sign-in of %s: %d %s", name, rec.Code, rec.Body)
	}
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

func (b *bundle) get(t testing.TB, path string) *httptest.ResponseRecorder {
	t.Helper()
	return b.request(t, http.MethodGet, path, nil, nil)
}

// page fetches a page and fails unless it answers want.
func (b *bundle) page(t testing.TB, want int, path string) string {
	t.Helper()
	rec := b.get(t, path)
	if rec.Code != want {
		t.Fatalf("GET %s: %d, want %d\n%s", path, rec.Code, want, rec.Body.String())
	}
	return rec.Body.String()
}

// trigger starts a run over the API with a fixed id.
func (b *bundle) trigger(t testing.TB, dagID, runID string) {
	t.Helper()
	status, body := b.srv.Call(server.WithPrincipal(context.Background(), testAdmin), http.MethodPost,
		"/api/v1/dags/"+dagID+"/dagRuns", map[string]any{"dag_run_id": runID}, testToken)
	if status != http.StatusOK && status != http.StatusAccepted {
		t.Fatalf("trigger %s: %d %s", dagID, status, body)
	}
}

// waitRunEnd waits for the daemon's notice that a run ended and returns its state.
func (b *bundle) waitRunEnd(t testing.TB, dagID, runID string) string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case n := <-b.notices:
			if n.Kind == executor.NoticeRunEnded && n.DAGID == dagID && n.RunID == runID {
				return n.State
			}
		case <-timeout:
			t.Fatalf("run %s of %s did not end", runID, dagID)
		}
	}
}

// waitAdmitted waits for the notice that a task of a run was admitted.
func (b *bundle) waitAdmitted(t testing.TB, dagID, runID, taskID string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case n := <-b.notices:
			if n.Kind == executor.NoticeAdmitted && n.DAGID == dagID && n.RunID == runID && n.TaskID == taskID {
				return
			}
		case <-timeout:
			t.Fatalf("%s of run %s was not admitted", taskID, runID)
		}
	}
}

// waiting reads a task's queue entry, which must wait with a reason: a manual start is answered
// after the pass that queued its ready tasks, and a reason is computed when read.
func (b *bundle) waiting(t testing.TB, dagID, runID, taskID string) server.TaskInstanceDetail {
	t.Helper()
	d, err := b.srv.TaskInstance(context.Background(), dagID, runID, taskID)
	if err != nil || d.Entry == nil || d.Entry.State != "waiting" || d.Entry.Reason == "" {
		t.Fatalf("%s of run %s is not waiting with a reason: %+v %v", taskID, runID, d.Entry, err)
	}
	return d
}

func (b *bundle) release(t testing.TB, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(b.dir, name), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}
