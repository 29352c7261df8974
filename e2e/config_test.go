package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Issue 12: the CLI, the API and the daemon agree on what is valid, reads never write, and
// poolflow.yaml changes live. One test per finding of the issue.

// TestValidateFolderMatchesFiles: `dags validate` over the folder and over the file give the
// same answer for a DAG that needs a pool created with `pools set`.
func TestValidateFolderMatchesFiles(t *testing.T) {
	t.Parallel()
	p := newProject(t, "pools:\n  db: 1\n", map[string]string{
		"uses_api.yaml": "tasks:\n  - {id: a, bash: 'true', pool_requirements: {api_pool: 2}}\n"})
	p.run(t, "pools", "set", "api_pool", "--slots", "2")
	file := filepath.Join(p.dags, "uses_api.yaml")
	for _, args := range [][]string{{"dags", "validate"}, {"dags", "validate", file}} {
		if out, errOut, code := p.try(args...); code != 0 || !strings.Contains(out, "1 DAG(s) valid") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	p.run(t, "pools", "delete", "api_pool", "--force")
	_, folderErr, folderCode := p.try("dags", "validate")
	_, fileErr, fileCode := p.try("dags", "validate", file)
	if folderCode != 1 || fileCode != 1 || !strings.Contains(folderErr, `unknown pool "api_pool"`) ||
		firstLine(folderErr) != firstLine(fileErr) {
		t.Errorf("without the pool: folder %d %q, file %d %q", folderCode, folderErr, fileCode, fileErr)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// TestDaemonRevalidatesOnStoredPools: a running daemon re-validates its DAGs when a stored pool
// is created or deleted; a run triggered right after `pools set` runs (it is not failed with
// "dag removed").
func TestDaemonRevalidatesOnStoredPools(t *testing.T) {
	t.Parallel()
	p := newProject(t, "pools:\n  db: 1\n", map[string]string{
		"x.yaml": "tasks:\n  - {id: a, bash: 'true', pool_requirements: {extra: 1}}\n"})
	d := p.serveAPI(t)
	file := filepath.Join(p.dags, "x.yaml")
	until(t, 30*time.Second, "the import error of x.yaml", func() bool {
		return strings.Contains(d.importErrors(t)[file], `unknown pool "extra"`)
	}, d.logs)
	p.run(t, "pools", "set", "extra", "--slots", "1")
	set := time.Now()
	p.run(t, "dags", "trigger", "x", "--run-id", "r1")
	until(t, 30*time.Second, "the import error to go", func() bool {
		return len(d.importErrors(t)) == 0 && slices.Contains(d.dagIDs(t), "x")
	}, d.logs)
	t.Logf("re-validated %v after pools set", time.Since(set).Round(time.Millisecond))
	st := p.open(t)
	runEnded(t, 30*time.Second, "x", "r1", d.logs)
	if r, _ := st.GetRun(context.Background(), "x", "r1"); r.State != "success" {
		t.Fatalf("run r1 %s: %s", r.State, r.Reason)
	}
	p.run(t, "pools", "delete", "extra", "--force")
	until(t, 30*time.Second, "the import error to come back", func() bool {
		return strings.Contains(d.importErrors(t)[file], `unknown pool "extra"`) && !slices.Contains(d.dagIDs(t), "x")
	}, d.logs)
}

// TestReadsNeverWrite: `pools list` — run elsewhere, without --config — leaves the pool table
// as the daemon wrote it; `pools set` writes only its pool; `pools list` works without write
// access to the database.
func TestReadsNeverWrite(t *testing.T) {
	t.Parallel()
	p := newProject(t, "pools:\n  fp: 3\n  default: 5\n", map[string]string{
		"u.yaml": "tasks:\n  - {id: a, bash: 'true', pool_requirements: {fp: 2}}\n"})
	d := p.serveAPI(t)
	until(t, 30*time.Second, "dag u", func() bool { return slices.Contains(d.dagIDs(t), "u") }, d.logs)
	st := p.open(t)
	before, err := st.ListPools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := func(args ...string) (string, int) {
		c := exec.Command(binary, append([]string{"--dags", p.dags, "--state", p.state}, args...)...)
		c.Dir = t.TempDir() // no poolflow.yaml there: the CLI's own config is the default
		out, err := c.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return string(out), code
	}
	if out, code := elsewhere("pools", "list"); code != 0 || !strings.Contains(out, "fp") {
		t.Fatalf("pools list: %d\n%s", code, out)
	}
	after, _ := st.ListPools(context.Background())
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("pools list changed the pool table:\nbefore %+v\nafter  %+v", before, after)
	}
	if out, code := elsewhere("pools", "set", "api", "--slots", "1"); code != 0 {
		t.Fatalf("pools set: %d %s", code, out)
	}
	after, _ = st.ListPools(context.Background())
	if len(after) != len(before)+1 || !slices.ContainsFunc(after, func(p store.Pool) bool { return p.Name == "fp" && p.Slots == 3 }) {
		t.Fatalf("pools set api changed the other pools: %+v", after)
	}
	p.run(t, "dags", "trigger", "u", "--run-id", "r1")
	if state := runEnded(t, 30*time.Second, "u", "r1", d.logs); state != "success" {
		t.Fatalf("run r1 %s, want success", state)
	}
	if os.Geteuid() == 0 {
		readOnlyList(t, p)
	} else {
		db := filepath.Join(p.state, "poolflow.db")
		if err := os.Chmod(db, 0o444); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(db, 0o644)
		if out, _, code := p.try("pools", "list"); code != 0 || !strings.Contains(out, "fp") {
			t.Fatalf("pools list on a read-only database: %d\n%s", code, out)
		}
	}
}

// readOnlyList runs `pools list` as an unprivileged user (root may write anything) over a copy
// of the project it may read but not write.
func readOnlyList(t *testing.T, p *project) {
	t.Helper()
	dir, err := os.MkdirTemp("", "poolflow-ro")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	for _, f := range []string{"poolflow"} {
		data, err := os.ReadFile(binary)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	// A consistent copy of the live database, owned by root and read-only to everyone else.
	db, err := sql.Open("sqlite3", filepath.Join(p.state, "poolflow.db"))
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(state, "poolflow.db")
	_, err = db.Exec(`VACUUM INTO ?`, copyPath)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(copyPath, 0o444); err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(p.config)
	if err := os.WriteFile(filepath.Join(dir, "poolflow.yaml"), cfg, 0o444); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, state} {
		if err := os.Chmod(d, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	defer os.Chmod(dir, 0o755)
	defer os.Chmod(state, 0o755)
	c := exec.Command(filepath.Join(dir, "poolflow"), "--config", filepath.Join(dir, "poolflow.yaml"), "--state", state,
		"--dags", filepath.Join(dir, "dags"), "pools", "list")
	c.Dir = dir
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "fp") {
		t.Fatalf("pools list without write access: %v\n%s", err, out)
	}
}

// TestRulePoolsCountAsUsed: `rules test` accepts a rule naming a stored pool, as the daemon does;
// that pool cannot be deleted without --force while the rule names it; the daemon starts.
func TestRulePoolsCountAsUsed(t *testing.T) {
	t.Parallel()
	p := newProject(t, "pools:\n  db: 1\nrules:\n  - {name: to-api, priority: 1, when: 'dag_id == \"r\"', pool: api}\n",
		map[string]string{"r.yaml": "tasks:\n  - {id: a, bash: 'true'}\n"})
	p.run(t, "pools", "set", "api", "--slots", "2")
	if out, errOut, code := p.try("rules", "test", "--attr", "dag_id=r", "-o", "json"); code != 0 || !strings.Contains(out, `"pool":"api"`) {
		t.Fatalf("rules test: %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := p.try("pools", "delete", "api"); code == 0 || !strings.Contains(errOut, "rule to-api") {
		t.Fatalf("pools delete api: exit %d %q", code, errOut)
	}
	d := p.serveAPI(t)
	until(t, 30*time.Second, "dag r", func() bool { return slices.Contains(d.dagIDs(t), "r") }, d.logs)
	code, body := d.post(t, "/api/v1/dags/r/dagRuns", `{"dag_run_id": "r1"}`)
	if code != http.StatusOK && code != http.StatusAccepted {
		t.Fatalf("trigger: %d %v", code, body)
	}
	st := p.open(t)
	run, err := st.GetRun(context.Background(), "r", "r1")
	if err != nil {
		t.Fatal(err)
	}
	e, err := st.LatestEntry(context.Background(), run.PK, "a")
	if err != nil || e.Rule != "to-api" || !slices.ContainsFunc(e.Needs, func(n store.Requirement) bool { return n.Pool == "api" }) {
		t.Fatalf("entry %+v %v", e, err)
	}
}

// TestConfigReloadsLive: poolflow.yaml changes apply to a running daemon — on_resize: drain,
// max_running — without restarting the running attempt; an invalid file is reported in the
// health answer and the UI while the previous configuration stays; SIGHUP re-reads the file.
func TestConfigReloadsLive(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	marker, pidFile := filepath.Join(tmp, "release"), filepath.Join(tmp, "hold.pid")
	started := pipe(t, tmp, "started")
	cfg := func(slots, maxRunning int) string {
		return fmt.Sprintf("max_running: %d\npools:\n  db: {slots: %d, on_resize: drain}\n", maxRunning, slots)
	}
	p := newProject(t, cfg(1, 2), map[string]string{
		"hold.yaml": fmt.Sprintf("tasks:\n  - id: t\n    pool_requirements: {db: 1}\n    bash: 'echo $$ > %s; echo $$ > %s; while [ ! -f %s ]; do sleep 0.05; done'\n",
			pidFile, started.Path, marker),
		"wait.yaml": "tasks:\n  - {id: t, bash: 'true', pool_requirements: {db: 1}}\n",
	})
	d := p.serveAPI(t)
	until(t, 30*time.Second, "the DAGs", func() bool { return len(d.dagIDs(t)) == 2 }, d.logs)
	p.run(t, "dags", "trigger", "hold", "--run-id", "h")
	line(t, started, "hold to run")
	pid, _ := os.ReadFile(pidFile)
	if code, _ := d.post(t, "/api/v1/dags/wait/dagRuns", `{"dag_run_id": "w"}`); code != http.StatusAccepted {
		t.Fatalf("wait: %d, want 202 (db is held)", code)
	}
	type poolJSON struct {
		Slots      int  `json:"slots"`
		DrainingTo *int `json:"draining_to"`
	}
	pool := func() poolJSON {
		var v poolJSON
		d.get(t, "/api/v1/pools/db", &v)
		return v
	}
	if err := os.WriteFile(p.config, []byte(cfg(2, 4)), 0o644); err != nil {
		t.Fatal(err)
	}
	until(t, 30*time.Second, "db to drain toward 2 slots", func() bool {
		v := pool()
		return v.Slots == 1 && v.DrainingTo != nil && *v.DrainingTo == 2
	}, d.logs)
	type health struct {
		Config struct {
			Status string  `json:"status"`
			Error  *string `json:"error"`
		} `json:"config"`
	}
	// An invalid file: reported, and the previous configuration stays in force.
	if err := os.WriteFile(p.config, []byte("max_running: many\npools:\n  db: {slots: 2, colour: red}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	until(t, 30*time.Second, "the invalid file to be reported", func() bool {
		var h health
		d.get(t, "/api/v1/health", &h)
		return h.Config.Status == "unhealthy" && h.Config.Error != nil && strings.Contains(*h.Config.Error, "max_running") &&
			strings.Contains(*h.Config.Error, "pools.db.colour")
	}, d.logs)
	resp, err := http.Get(d.url + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	page := new(strings.Builder)
	_, _ = fmt.Fprint(page, readAll(resp))
	if !strings.Contains(page.String(), "Configuration not in force") {
		t.Errorf("the UI shows no banner:\n%s", page)
	}
	if v := pool(); v.DrainingTo == nil || *v.DrainingTo != 2 {
		t.Errorf("db after the invalid file: %+v", v)
	}
	// SIGHUP re-reads a file whose size and time did not change (the watcher cannot see it).
	if err := os.WriteFile(p.config, []byte(cfg(3, 4)), 0o644); err != nil {
		t.Fatal(err)
	}
	until(t, 30*time.Second, "slots 3", func() bool { v := pool(); return v.DrainingTo != nil && *v.DrainingTo == 3 }, d.logs)
	info, _ := os.Stat(p.config)
	if err := os.WriteFile(p.config, []byte(cfg(4, 4)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p.config, info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	// The watcher cannot see this change (the file's size and time are as before): only SIGHUP
	// brings it in.
	if v := pool(); v.DrainingTo == nil || *v.DrainingTo != 3 {
		t.Fatalf("db before SIGHUP: %+v, want still draining toward 3", v)
	}
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	until(t, 30*time.Second, "SIGHUP to apply slots 4", func() bool {
		v := pool()
		return v.DrainingTo != nil && *v.DrainingTo == 4
	}, d.logs)
	var h health
	d.get(t, "/api/v1/health", &h)
	if h.Config.Status != "healthy" {
		t.Errorf("health after the fix: %+v", h)
	}
	now, _ := os.ReadFile(pidFile)
	if string(now) != string(pid) {
		t.Fatalf("the running attempt was restarted: pid %s then %s", pid, now)
	}
	if err := syscall.Kill(atoi(string(pid)), 0); err != nil {
		t.Fatalf("the running attempt died: %v", err)
	}
	os.WriteFile(marker, nil, 0o644)
	st := p.open(t)
	// The reload SIGHUP asked for is in the audit log, with serve's user as its actor.
	if evs, _, err := st.ListEvents(context.Background(), store.EventFilter{Action: vocab.ActionReload}); err != nil ||
		len(evs) != 1 || !strings.HasPrefix(evs[0].Actor, "cli:") || evs[0].Outcome != "ok" || !strings.Contains(evs[0].Params, "SIGHUP") {
		t.Errorf("reload events %+v %v", evs, err)
	}
	until(t, 30*time.Second, "w to succeed and the drain to finish", func() bool {
		r, err := st.GetRun(context.Background(), "wait", "w")
		v := pool()
		return err == nil && r.State == "success" && v.Slots == 4 && v.DrainingTo == nil
	}, d.logs)
}

func atoi(s string) int {
	n := 0
	for _, c := range strings.TrimSpace(s) {
		n = n*10 + int(c-'0')
	}
	return n
}

func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}
