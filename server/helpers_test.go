package server

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/storetest"
	"github.com/poolflow/poolflow/vocab"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

const testToken = "s3cret"

// testConfig has a strict one-slot pool, a pool with a tiny backlog and a stored-pool-friendly
// default.
const testConfig = `
max_running: 8
pools:
  db:
    slots: 1
    ordering: strict
    description: the database
  small:
    slots: 2
    max_queued: 1
  default: 4
`

// testDAGs: quick runs at once; paused waits (its DAG is paused by the test); gate is an
// approval gate; echo writes its params to its log.
var testDAGs = map[string]string{
	"quick.yaml": `
description: one quick task
tags: [demo]
owner: tests
tasks:
  - id: only
    command: ["true"]
`,
	"held.yaml": `
description: waits for db while paused
params: {region: eu}
tasks:
  - id: load
    command: ["true"]
    pool_requirements: {db: 1}
    queue_timeout: 1h
  - id: after
    depends_on: [load]
    command: ["true"]
`,
	"gate.yaml": `
tasks:
  - id: approve
    approval: {timeout: 24h}
  - id: publish
    depends_on: [approve]
    command: ["true"]
`,
	"echo.yaml": `
params: {name: world}
tasks:
  - id: say
    command: ["printenv", "POOLFLOW_PARAMS"]
    pool_requirements: {small: 1}
`,
	"urgent.yaml": `
tasks:
  - id: fix
    command: ["true"]
    pool_requirements: {db: 1}
    priority_weight: 10
`,
	"sensor.yaml": `
tasks:
  - id: wait
    sensor: {file_exists: /nonexistent/poolflow-test, mode: poke, poke_interval: 1h, timeout: 2h}
    pool_requirements: {db: 1}
`,
	"broken.yaml": `
tasks:
  - id: a
    command: ["true"]
    pool_requirements: {nosuch: 1}
`,
}

// bundle is one test's fixtures: a real SQLite file, a started daemon and the server.
type bundle struct {
	dir      string
	dagsDir  string
	stateDir string
	st       store.Store
	cfg      *config.Config
	daemon   *executor.Daemon
	srv      *Server
	notices  chan executor.Notice
	metrics  *Metrics
}

type setupOpts struct {
	token string
	// readsOpen lets callers without credentials read (auth.anonymous: viewer), as every read
	// was before users existed (§15).
	readsOpen bool
	noStop    bool   // the test stops the daemon itself
	api       string // the API address the daemon advertises in its owner row
	config    string // added to testConfig (notifiers:)
	// dags are DAG files written besides testDAGs, by file name.
	dags map[string]string
}

func setup(t testing.TB, opts setupOpts) *bundle {
	t.Helper()
	dir := t.TempDir()
	b := &bundle{dir: dir, dagsDir: filepath.Join(dir, "dags"), stateDir: filepath.Join(dir, "state"),
		notices: make(chan executor.Notice, 10000), metrics: NewMetrics()}
	for _, d := range []string{b.dagsDir, b.stateDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range testDAGs {
		if err := os.WriteFile(filepath.Join(b.dagsDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range opts.dags {
		if err := os.WriteFile(filepath.Join(b.dagsDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse("poolflow.yaml", []byte(testConfig+opts.config))
	if err != nil {
		t.Fatal(err)
	}
	if opts.readsOpen {
		cfg.Auth.Anonymous = vocab.RoleViewer
	}
	b.cfg = cfg
	st := storetest.Open(t, filepath.Join(b.stateDir, "poolflow.db"), store.Options{Synchronous: "OFF"})
	b.st = st
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := executor.New(executor.Config{Store: st, Settings: cfg, DAGsDir: b.dagsDir, StateDir: b.stateDir,
		DaemonID: "test-daemon", API: opts.api, Logger: quiet, KillGrace: 200 * time.Millisecond, ShutdownGrace: 2 * time.Second,
		Notify: func(n executor.Notice) {
			b.metrics.Observe(n)
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
	if !opts.noStop {
		t.Cleanup(func() { _ = d.Stop() })
	}
	b.daemon = d
	b.srv = New(Config{Store: st, Daemon: d, StateDir: b.stateDir, Token: opts.token, Logger: quiet, Settings: cfg,
		Metrics: b.metrics, Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
		CommandWait: 2 * time.Second})
	t.Cleanup(func() { b.srv.Close() })
	return b
}

// do sends one request to the server in-process.
func (b *bundle) do(t testing.TB, method, path, body, token string) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	b.srv.ServeHTTP(rec, req)
	return rec
}

// rangeGet sends a GET with a Range header and the token.
func (b *bundle) rangeGet(t testing.TB, path, rng string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Range", rng)
	rec := httptest.NewRecorder()
	b.srv.ServeHTTP(rec, req)
	return rec
}

// must sends a request and fails the test unless it answers want.
func (b *bundle) must(t testing.TB, want int, method, path, body string) []byte {
	t.Helper()
	rec := b.do(t, method, path, body, testToken)
	if rec.Code != want {
		t.Fatalf("%s %s: status %d, want %d; body %s", method, path, rec.Code, want, rec.Body.String())
	}
	return rec.Body.Bytes()
}

// pause pauses a DAG through the API.
func (b *bundle) pause(t testing.TB, dagID string) {
	t.Helper()
	b.must(t, http.StatusOK, http.MethodPatch, "/api/v1/dags/"+dagID, `{"is_paused": true}`)
}

// trigger starts a run with a fixed id and returns the answer's status.
func (b *bundle) trigger(t testing.TB, dagID, runID, extra string) *httptest.ResponseRecorder {
	t.Helper()
	body := `{"dag_run_id": "` + runID + `"` + extra + `}`
	return b.do(t, http.MethodPost, "/api/v1/dags/"+dagID+"/dagRuns", body, testToken)
}

// waitRunEnd waits for the daemon's notice that a run ended and returns its state.
func (b *bundle) waitRunEnd(t testing.TB, dagID, runID string) string {
	t.Helper()
	timeout := time.After(20 * time.Second)
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

var (
	timeRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`)
	// Generated run ids and waiting words embed times too.
	embeddedTimeRE = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`)
)

// normalize makes a JSON answer comparable: times become "<time>", durations "<duration>", the
// test's temporary folder "<dir>", and the output is indented with sorted keys.
func (b *bundle) normalize(t testing.TB, data []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("answer is not JSON: %v\n%s", err, data)
	}
	v = normalizeValue(v, "", b.dir)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func normalizeValue(v any, key, dir string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			x[k] = normalizeValue(val, k, dir)
		}
		return x
	case []any:
		for i, val := range x {
			x[i] = normalizeValue(val, key, dir)
		}
		return x
	case string:
		if timeRE.MatchString(x) {
			return "<time>"
		}
		x = strings.ReplaceAll(x, dir, "<dir>")
		return embeddedTimeRE.ReplaceAllString(x, "<time>")
	case float64:
		if key == "duration" {
			return "<duration>"
		}
	}
	return v
}

// golden compares a normalized JSON answer with testdata/golden/<name>.json (-update rewrites it).
func (b *bundle) golden(t testing.TB, name string, data []byte) {
	t.Helper()
	got := b.normalize(t, data)
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run go test -update)", name, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("golden %s differs:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// problemOf decodes an error answer.
func problemOf(t testing.TB, rec *httptest.ResponseRecorder) problem {
	t.Helper()
	var p problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatalf("error answer is not a problem: %v\n%s", err, rec.Body.String())
	}
	if p.Status != rec.Code || p.Title == "" {
		t.Fatalf("problem %+v does not match status %d", p, rec.Code)
	}
	return p
}

// writeDAG adds a DAG file; the daemon loads it on its next look at the folder.
func (b *bundle) writeDAG(t testing.TB, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(b.dagsDir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitDAG waits until the daemon has loaded a DAG. Its registry's watcher reads the folder off
// the loop and wakes the loop when something changed: the daemon's next pass follows, so the
// DAG is looked for again after each notice.
func (b *bundle) waitDAG(t testing.TB, id string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for b.srv.findDAG(id) == nil {
		select {
		case <-b.notices:
		case <-timeout:
			t.Fatalf("dag %s not loaded", id)
		}
	}
}
