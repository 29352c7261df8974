package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/store"
)

// project is a temporary folder with poolflow.yaml, dags/ and state/.
type project struct {
	dir, config, dags, state string
}

func newProject(t *testing.T, cfg string, dags map[string]string) *project {
	t.Helper()
	dir := t.TempDir()
	p := &project{dir: dir, config: filepath.Join(dir, "poolflow.yaml"), dags: filepath.Join(dir, "dags"),
		state: filepath.Join(dir, "state")}
	if err := os.MkdirAll(p.dags, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, body := range dags {
		if err := os.WriteFile(filepath.Join(p.dags, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// run runs the CLI in-process and returns stdout, stderr and the exit code.
func (p *project) run(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	all := append([]string{"--config", p.config, "--dags", p.dags, "--state", p.state}, args...)
	err := Run(context.Background(), all, &out, &errb)
	code := 0
	var ee *ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.Code
		if ee.Err != nil {
			errb.WriteString(ee.Err.Error())
		}
	case err != nil:
		code = 1
		errb.WriteString(err.Error())
	}
	return out.String(), errb.String(), code
}

const poolsYAML = "max_running: 8\npools:\n  db: 1\n  wh:\n    slots: 4\n    ordering: strict\n"

func TestDagsValidate(t *testing.T) {
	t.Parallel()
	p := newProject(t, poolsYAML, map[string]string{
		"good.yaml": "tasks:\n  - {id: a, bash: echo hi, pool_requirements: {db: 1}}\n",
		"bad.yaml":  "tasks:\n  - id: a\n    bash: echo hi\n    pool_requirements: {wh: 5}\n  - {id: b, depends_on: [zz], bash: echo}\n",
	})
	out, errOut, code := p.run("dags", "validate")
	if code != ExitFailed {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"bad.yaml:4:", "dag bad, task a: pool_requirements.wh: 5 slots exceed capacity 4", "task b", "zz"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	out, errOut, code = p.run("dags", "validate", filepath.Join(p.dags, "good.yaml"))
	if code != 0 || !strings.Contains(out, "1 DAG(s) valid") {
		t.Fatalf("validate good.yaml: exit %d\n%s%s", code, out, errOut)
	}
}

// TestDagsValidateFileAgreesWithTheDaemon (issue 25): a file whose dag_id an earlier file of
// the DAGs folder defines passed `dags validate FILE`, while the daemon refuses it.
func TestDagsValidateFileAgreesWithTheDaemon(t *testing.T) {
	t.Parallel()
	p := newProject(t, poolsYAML, map[string]string{
		"a.yaml": "dag_id: etl\ntasks:\n  - {id: a, bash: echo}\n",
		"b.yaml": "dag_id: etl\ntasks:\n  - {id: b, bash: echo}\n",
	})
	want := filepath.Join(p.dags, "b.yaml") + ":1:9: dag etl: dag_id: dag etl is already defined in " + filepath.Join(p.dags, "a.yaml")
	for _, args := range [][]string{{"dags", "validate"}, {"dags", "validate", filepath.Join(p.dags, "b.yaml")}} {
		out, errOut, code := p.run(args...)
		if code != ExitFailed || !strings.Contains(errOut, want) {
			t.Errorf("%v: exit %d, want 1 and %s\n%s%s", args, code, want, out, errOut)
		}
	}
	if out, errOut, code := p.run("dags", "validate", filepath.Join(p.dags, "a.yaml")); code != 0 {
		t.Errorf("validate a.yaml: exit %d\n%s%s", code, out, errOut)
	}
}

func TestDagsTestJSON(t *testing.T) {
	t.Parallel()
	p := newProject(t, poolsYAML, map[string]string{
		"ok.yaml":   "tasks:\n  - {id: a, bash: echo hi, pool_requirements: {db: 1}}\n  - {id: b, depends_on: [a], bash: echo}\n",
		"fail.yaml": "tasks:\n  - {id: a, command: [\"false\"]}\n  - {id: b, depends_on: [a], bash: echo}\n",
	})
	cases := []struct {
		dag   string
		code  int
		state string
		tasks map[string][3]string // state, requirements JSON, reason (or "null")
	}{
		{"ok", 0, "success", map[string][3]string{"a": {"success", `{"db":1}`, "null"}, "b": {"success", `{"default":1}`, "null"}}},
		{"fail", 1, "failed", map[string][3]string{"a": {"failed", `{"default":1}`, `"exit status 1"`}, "b": {"upstream_failed", `{"default":1}`, `"upstream_failed: trigger rule all_success"`}}},
	}
	for _, tc := range cases {
		out, errOut, code := p.run("dags", "test", tc.dag, "-o", "json")
		if code != tc.code {
			t.Fatalf("%s: exit %d, want %d\n%s", tc.dag, code, tc.code, errOut)
		}
		var rep struct {
			DAGID string `json:"dag_id"`
			RunID string `json:"run_id"`
			State string `json:"state"`
			Tasks []map[string]json.RawMessage
		}
		dec := json.NewDecoder(strings.NewReader(out))
		if err := dec.Decode(&rep); err != nil || dec.More() {
			t.Fatalf("%s: stdout is not exactly one JSON object: %v\n%s", tc.dag, err, out)
		}
		if rep.DAGID != tc.dag || rep.State != tc.state || !strings.HasPrefix(rep.RunID, "test__") {
			t.Errorf("%s: %+v", tc.dag, rep)
		}
		for _, task := range rep.Tasks {
			var id, state string
			json.Unmarshal(task["task_id"], &id)
			json.Unmarshal(task["state"], &state)
			want := tc.tasks[id]
			var reqs bytes.Buffer
			json.Compact(&reqs, task["requirements"])
			if state != want[0] || reqs.String() != want[1] || string(task["reason"]) != want[2] {
				t.Errorf("%s.%s: state %s requirements %s reason %s, want %v", tc.dag, id, state, task["requirements"], task["reason"], want)
			}
			var start string
			if json.Unmarshal(task["start_date"], &start) == nil && start != "" {
				if _, err := time.Parse(time.RFC3339Nano, start); err != nil || !strings.HasSuffix(start, "Z") {
					t.Errorf("start_date %q is not RFC 3339 UTC", start)
				}
			}
		}
	}
	if _, _, code := p.run("dags", "test", "nope"); code != ExitUsage {
		t.Errorf("unknown DAG: exit %d, want 2", code)
	}
	if _, _, code := p.run("dags", "test", "ok", "--conf", "not json"); code != ExitUsage {
		t.Errorf("bad --conf: exit %d, want 2", code)
	}
	if _, _, code := p.run("dags", "test"); code != ExitUsage {
		t.Errorf("missing DAG_ID: exit %d, want 2", code)
	}
}

func TestPoolsCommands(t *testing.T) {
	t.Parallel()
	p := newProject(t, poolsYAML, map[string]string{"uses.yaml": "tasks:\n  - {id: a, bash: echo, pool_requirements: {api: 3}}\n"})
	if _, errOut, code := p.run("pools", "set", "api", "--slots", "5", "--description", "rate-limited API"); code != 0 {
		t.Fatalf("pools set: %d %s", code, errOut)
	}
	out, _, code := p.run("pools", "list", "-o", "json")
	if code != 0 {
		t.Fatal(code)
	}
	var got struct {
		Pools []PoolView `json:"pools"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	byName := map[string]PoolView{}
	for _, v := range got.Pools {
		byName[v.Name] = v
	}
	if v := byName["api"]; v.Slots != 5 || v.Source != "store" || v.Description != "rate-limited API" {
		t.Errorf("api = %+v", v)
	}
	if v := byName["db"]; v.Slots != 1 || v.Source != "file" {
		t.Errorf("db = %+v", v)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"pools", "set", "db", "--slots", "3"}, "defined in"},
		{[]string{"pools", "set", "api", "--slots", "2"}, "fewer than uses.a needs"},
		{[]string{"pools", "set", "api", "--slots", "5", "--team", "finance"}, "teams [finance] would turn away uses (no team)"},
		{[]string{"pools", "delete", "api"}, "required by uses.a"},
		{[]string{"pools", "set", "_x", "--slots", "1"}, "_x"},
		{[]string{"pools", "delete", "missing"}, "not found"},
	}
	for _, tc := range cases {
		_, errOut, code := p.run(tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want it to mention %q", tc.args, code, errOut, tc.want)
		}
	}
	if _, errOut, code := p.run("pools", "delete", "api", "--force"); code != 0 {
		t.Fatalf("forced delete: %d %s", code, errOut)
	}
}

func TestRulesTest(t *testing.T) {
	t.Parallel()
	cfg := poolsYAML + `rules:
  - {name: heavy, priority: 10, when: 'dag_id startsWith "etl_" and "heavy" in tags', pool: wh, slots: 2}
  - {name: manual, priority: 20, when: 'trigger == "manual"', pool: db}
`
	p := newProject(t, cfg, nil)
	out, errOut, code := p.run("rules", "test", "--attr", "dag_id=etl_x", "--attr", "tags=heavy,nightly", "--attr", "trigger=manual", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res["rule"] != "heavy" || res["pool"] != "wh" || res["slots"] != float64(2) {
		t.Errorf("result %v", res)
	}
	out, _, code = p.run("rules", "test", "--attr", "dag_id=other", "--attr", "trigger=schedule")
	if code != 0 || !strings.Contains(out, "default") {
		t.Errorf("no match: exit %d\n%s", code, out)
	}
	bad := newProject(t, poolsYAML+"rules:\n  - {name: x, priority: 1, when: 'nope(', pool: db}\n", nil)
	if _, errOut, code := bad.run("rules", "test", "--attr", "dag_id=a"); code != 1 || !strings.Contains(errOut, "rule x") {
		t.Errorf("invalid rules: exit %d, stderr %q", code, errOut)
	}
}

// TestExplainForceCancel drives a daemon in-process: a task waiting for a full pool is explained
// in words, a force start still has to fit, and a cancel fails the attempt.
func TestExplainForceCancel(t *testing.T) {
	t.Parallel()
	p := newProject(t, poolsYAML, map[string]string{"q.yaml": `
tasks:
  - {id: a, bash: sleep 30, pool_requirements: {db: 1}, priority_weight: 5, weight_rule: absolute}
  - {id: b, bash: echo b, pool_requirements: {db: 1}, weight_rule: absolute}
`})
	admitted := make(chan string, 10)
	d, st := p.daemon(t, "cli-test", func(n executor.Notice) {
		if n.Kind == executor.NoticeAdmitted {
			admitted <- n.TaskID
		}
	})
	res, err := d.Trigger(context.Background(), executor.TriggerRequest{DAGID: "q", RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Queued || res.Pool != "db" {
		t.Fatalf("trigger = %+v, want queued on db", res)
	}
	if got := <-admitted; got != "a" {
		t.Fatalf("admitted %s first, want a", got)
	}
	out, errOut, code := p.run("tasks", "explain", "q", "r1", "b")
	if code != 0 || !strings.Contains(out, "waiting: pool db is full (needs 1, 0 of 1 free; held by q.a try 1)") ||
		!strings.Contains(out, "requirements: db=1") {
		t.Fatalf("explain: exit %d\n%s%s", code, out, errOut)
	}
	// The reason is computed when read, the same for the CLI, the API's task instance and the
	// pools board (§4.5).
	const why = "waiting: pool db is full (needs 1, 0 of 1 free; held by q.a try 1)"
	api := server.New(server.Config{Store: st, Writer: st})
	defer api.Close()
	var ti server.TaskInstanceJSON
	getJSON(t, api, "/api/v1/dags/q/dagRuns/r1/taskInstances/b", &ti)
	if ti.WaitReason == nil || ti.WaitReason.Code != "pool_full" || ti.WaitReason.Text != why {
		t.Errorf("API task instance reason %+v, want pool_full %q", ti.WaitReason, why)
	}
	var board server.BoardJSON
	getJSON(t, api, "/pools", &board)
	found := false
	for _, pool := range board.Pools {
		for _, e := range pool.Waiting {
			if pool.Name == "db" && e.TaskID == "b" {
				found = e.Reason != nil && e.Reason.Text == why
			}
		}
	}
	if !found {
		t.Errorf("the pools board does not show b waiting with %q: %+v", why, board)
	}
	if out, errOut, code := p.run("tasks", "run", "--force", "q", "r1", "b"); code != 0 || !strings.Contains(out, "applied") {
		t.Fatalf("force: exit %d\n%s%s", code, out, errOut)
	}
	e, err := st.LatestEntry(context.Background(), mustRun(t, st).PK, "b")
	if err != nil || !e.Force || e.State != "waiting" {
		t.Fatalf("after force: %+v %v (a forced entry must still fit)", e, err)
	}
	if out, errOut, code := p.run("tasks", "cancel", "q", "r1", "b"); code != 0 {
		t.Fatalf("cancel: exit %d\n%s%s", code, out, errOut)
	}
	out, _, _ = p.run("tasks", "explain", "q", "r1", "b")
	if !strings.Contains(out, "failed") || !strings.Contains(out, "cancelled by operator") {
		t.Fatalf("after cancel:\n%s", out)
	}
	if _, errOut, code := p.run("tasks", "cancel", "q", "r1", "b"); code == 0 || !strings.Contains(errOut, "not waiting") {
		t.Fatalf("second cancel: exit %d %s", code, errOut)
	}
}

func mustRun(t *testing.T, st store.Store) store.Run {
	t.Helper()
	r, err := st.GetRun(context.Background(), "q", "r1")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestVersionAndUsage(t *testing.T) {
	t.Parallel()
	p := newProject(t, "", nil)
	if out, _, code := p.run("version"); code != 0 || !strings.Contains(out, "poolflow ") {
		t.Errorf("version: %d %q", code, out)
	}
	if _, _, code := p.run("nope"); code != ExitUsage {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
}

// TestRemainderShrinksWithStoredPools: a default pool with slots: remainder gives up the slots
// of every other finite pool, stored ones included (the seed's default pool rule).
func TestRemainderShrinksWithStoredPools(t *testing.T) {
	t.Parallel()
	p := newProject(t, "max_running: 10\npools:\n  db: 2\n  big: -1\n  default: {slots: remainder}\n", nil)
	slots := func() int {
		out, errOut, code := p.run("pools", "list", "-o", "json")
		if code != 0 {
			t.Fatalf("pools list: %s", errOut)
		}
		var got struct{ Pools []PoolView }
		json.Unmarshal([]byte(out), &got)
		for _, v := range got.Pools {
			if v.Name == "default" {
				return v.Slots
			}
		}
		return -99
	}
	if n := slots(); n != 8 {
		t.Fatalf("default = %d, want 10 - 2 (the unlimited pool is left out)", n)
	}
	if _, errOut, code := p.run("pools", "set", "api", "--slots", "3"); code != 0 {
		t.Fatal(errOut)
	}
	if n := slots(); n != 5 {
		t.Fatalf("default = %d after a stored 3-slot pool, want 5", n)
	}
	if _, errOut, code := p.run("pools", "set", "huge", "--slots", "5"); code == 0 || !strings.Contains(errOut, "remainder") {
		t.Fatalf("a pool leaving default below 1 slot: exit %d %q", code, errOut)
	}
	if _, _, code := p.run("pools", "delete", "api"); code != 0 {
		t.Fatal("delete api")
	}
	if n := slots(); n != 8 {
		t.Fatalf("default = %d after deleting api, want 8", n)
	}
}

// TestGateAndPauseCommands drives a daemon in-process: `tasks approve` through the store's
// commands reaches the daemon that owns the run; `dags pause` and `dags trigger --no-queue`
// behave as documented.
func TestGateAndPauseCommands(t *testing.T) {
	t.Parallel()
	p := newProject(t, poolsYAML, map[string]string{
		"gate.yaml": "tasks:\n  - {id: ok, approval: {}}\n  - {id: after, depends_on: [ok], bash: echo after}\n",
		"busy.yaml": "tasks:\n  - {id: a, bash: sleep 30, pool_requirements: {db: 1}}\n",
	})
	notices := make(chan executor.Notice, 1000)
	_, st := p.daemon(t, "cli-gate", func(n executor.Notice) {
		select {
		case notices <- n:
		default:
		}
	})

	if out, errOut, code := p.run("dags", "trigger", "gate", "--run-id", "g1"); code != 0 || !strings.Contains(out, "created run g1") {
		t.Fatalf("trigger: %d %s%s", code, out, errOut)
	}
	// The daemon finds the CLI's run when it passes after the CLI's commit: look after each pass.
	afterPasses(t, notices, "the gate to wait for approval", func() bool {
		out, _, _ := p.run("tasks", "explain", "gate", "g1", "ok")
		return strings.Contains(out, "awaiting_approval")
	})
	if out, errOut, code := p.run("tasks", "approve", "gate", "g1", "ok", "--note", "ship it"); code != 0 || !strings.Contains(out, "applied") {
		t.Fatalf("approve: %d %s%s", code, out, errOut)
	}
	waitNotice(t, notices, "the run to end", func(n executor.Notice) bool {
		return n.Kind == executor.NoticeRunEnded && n.DAGID == "gate" && n.RunID == "g1"
	})
	if r, err := st.GetRun(context.Background(), "gate", "g1"); err != nil || r.State != "success" {
		t.Fatalf("run g1 %s %v, want success", r.State, err)
	}
	if out, _, _ := p.run("tasks", "explain", "gate", "g1", "ok"); !strings.Contains(out, ": ship it") || !strings.Contains(out, "approved by") {
		t.Errorf("explain after approval:\n%s", out)
	}

	// busy holds db; a --no-queue start of it cannot be admitted at once and is refused.
	if _, errOut, code := p.run("dags", "trigger", "busy", "--run-id", "b1"); code != 0 {
		t.Fatal(errOut)
	}
	waitNotice(t, notices, "busy to hold db", func(n executor.Notice) bool {
		return n.Kind == executor.NoticeAdmitted && n.DAGID == "busy" && n.RunID == "b1"
	})
	if out, _, _ := p.run("tasks", "explain", "busy", "b1", "a"); !strings.Contains(out, "running") {
		t.Fatalf("explain busy once admitted:\n%s", out)
	}
	if _, errOut, code := p.run("dags", "trigger", "busy", "--run-id", "b2", "--no-queue"); code != 1 || !strings.Contains(errOut, "asked not to queue") {
		t.Fatalf("--no-queue: exit %d %q", code, errOut)
	}
	if out, _, code := p.run("dags", "pause", "busy"); code != 0 || !strings.Contains(out, "paused") {
		t.Fatalf("pause: %d %s", code, out)
	}
	out, _, _ := p.run("dags", "list", "-o", "json")
	if !strings.Contains(out, `"is_paused": true`) {
		t.Fatalf("dags list after pause:\n%s", out)
	}
}

// waitNotice waits for the first of the daemon's notices that matches ok.
func waitNotice(t *testing.T, notices <-chan executor.Notice, what string, ok func(executor.Notice) bool) executor.Notice {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case n := <-notices:
			if ok(n) {
				return n
			}
		case <-timeout:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// afterPasses checks cond, and again after each pass the daemon commits, until it holds: for
// what the daemon does when it finds another process's write.
func afterPasses(t *testing.T, notices <-chan executor.Notice, what string, cond func() bool) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for !cond() {
		select {
		case <-notices:
		case <-timeout:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// daemon starts a daemon over the project in-process, as `poolflow serve` would, and stops it
// (and closes its store) when the test ends.
func (p *project) daemon(t *testing.T, id string, notify func(executor.Notice)) (*executor.Daemon, store.Store) {
	t.Helper()
	cfg, err := config.Load(p.config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(p.state, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), filepath.Join(p.state, "poolflow.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d, err := executor.New(executor.Config{Store: st, Settings: cfg, DAGsDir: p.dags, StateDir: p.state, DaemonID: id,
		KillGrace: 100 * time.Millisecond, ShutdownGrace: time.Second, Notify: notify})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop() })
	return d, st
}

// getJSON reads path from the API handler h into v, failing the test unless it answers 200.
func getJSON(t *testing.T, h http.Handler, path string, v any) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = "127.0.0.1"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}
