package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestSmallAnswers: the answers issue 12 found wrong. The 202 and the metrics name the pool a
// start waits on; `tasks explain` and the API give a queued retry the same try; filters work and
// an unknown one is a 400; a refused --no-queue start never says "created" and its task shows
// its try; the default pool's deletion error says what it is; a conf over 128 KiB, the run id
// "~" and a pool name of 100,000 characters are refused.
func TestSmallAnswers(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	zRelease, failNow, dbRelease := filepath.Join(tmp, "z"), filepath.Join(tmp, "fail"), filepath.Join(tmp, "db")
	wait := func(marker string) string {
		return fmt.Sprintf("'while [ ! -f %s ]; do sleep 0.05; done'", marker)
	}
	p := newProject(t, "max_running: 8\npools:\n  a: 1\n  z: 1\n  db: 1\n", map[string]string{
		"zhold.yaml":  "tasks:\n  - {id: t, pool_requirements: {z: 1}, bash: " + wait(zRelease) + "}\n",
		"multi.yaml":  "tasks:\n  - {id: t, pool_requirements: {a: 1, z: 1}, bash: 'true'}\n",
		"zonly.yaml":  "tasks:\n  - {id: t, pool_requirements: {z: 1}, bash: 'true'}\n",
		"flaky.yaml":  fmt.Sprintf("tasks:\n  - {id: t, pool_requirements: {db: 1}, retries: 1, retry_delay: 0s, bash: 'while [ ! -f %s ]; do sleep 0.05; done; exit 1'}\n", failNow),
		"dbhold.yaml": "tasks:\n  - {id: t, pool_requirements: {db: 1}, priority_weight: 10, weight_rule: absolute, bash: " + wait(dbRelease) + "}\n",
	})
	d := p.serveAPI(t)
	defer func() {
		for _, m := range []string{zRelease, failNow, dbRelease} {
			os.WriteFile(m, nil, 0o644)
		}
	}()
	// serve says it serves once its daemon loaded the DAGs.
	if ids := d.dagIDs(t); len(ids) != 5 {
		t.Fatalf("DAGs loaded: %v", ids)
	}
	ti := func(dag, run, task string) map[string]any {
		var v map[string]any
		d.get(t, "/api/v1/dags/"+dag+"/dagRuns/"+run+"/taskInstances/"+task, &v)
		return v
	}

	// z is held: a start of multi ({a: 1, z: 1}) waits on z, not on a.
	if code, _ := d.post(t, "/api/v1/dags/zhold/dagRuns", `{"dag_run_id": "zh"}`); code != http.StatusOK {
		t.Fatalf("zhold: %d", code)
	}
	code, body := d.post(t, "/api/v1/dags/multi/dagRuns", `{"dag_run_id": "m1"}`)
	if code != http.StatusAccepted || body["pool"] != "z" {
		t.Errorf("202 of multi: %d pool %v, want z", code, body["pool"])
	}

	// A refused --no-queue start: "refused" first, never "created"; its task shows try 1.
	out, errOut, exit := p.try("dags", "trigger", "zonly", "--run-id", "nq", "--no-queue")
	if exit != 1 || strings.Contains(out+errOut, "created") || !strings.Contains(errOut, "refused") {
		t.Errorf("--no-queue: exit %d stdout %q stderr %q", exit, out, errOut)
	}
	if v := ti("zonly", "nq", "t"); v["try_number"] != float64(1) || v["state"] != "failed" {
		t.Errorf("refused task: try %v state %v, want try 1, failed", v["try_number"], v["state"])
	}

	// A queued retry: explain and the API both give the try it will run as.
	p.run(t, "dags", "trigger", "flaky", "--run-id", "f")
	waitNotice(t, 30*time.Second, "admitted", "flaky", "f", d.logs)
	if v := ti("flaky", "f", "t"); v["state"] != "running" {
		t.Fatalf("flaky once admitted: %v", v["state"])
	}
	if code, _ := d.post(t, "/api/v1/dags/dbhold/dagRuns", `{"dag_run_id": "dh"}`); code != http.StatusAccepted {
		t.Fatalf("dbhold: %d", code)
	}
	os.WriteFile(failNow, nil, 0o644)
	until(t, 30*time.Second, "the retry to wait behind dbhold", func() bool {
		v := ti("flaky", "f", "t")
		return v["state"] == "scheduled" && ti("dbhold", "dh", "t")["state"] == "running"
	}, d.logs)
	if v := ti("flaky", "f", "t"); v["try_number"] != float64(2) {
		t.Errorf("API try of the queued retry: %v, want 2", v["try_number"])
	}
	if out := p.run(t, "tasks", "explain", "flaky", "f", "t"); !strings.Contains(out, "scheduled (try 2)") {
		t.Errorf("explain of the queued retry:\n%s", out)
	}

	// Filters.
	var runs struct {
		DAGRuns []struct {
			RunID string `json:"dag_run_id"`
			State string `json:"state"`
		} `json:"dag_runs"`
	}
	d.get(t, "/api/v1/dags/~/dagRuns?state=running&order_by=run_id", &runs)
	var got []string
	for _, r := range runs.DAGRuns {
		got = append(got, r.RunID)
	}
	if strings.Join(got, ",") != "dh,f,m1,zh" {
		t.Errorf("?state=running: %v", got)
	}
	var problem struct {
		Detail string `json:"detail"`
	}
	if code := d.get(t, "/api/v1/dags/~/dagRuns?stat=running", &problem); code != http.StatusBadRequest || !strings.HasPrefix(problem.Detail, "stat:") {
		t.Errorf("unknown filter: %d %q", code, problem.Detail)
	}

	// The default pool's deletion error says what it is.
	if _, errOut, code := p.try("pools", "delete", "default"); code == 0 || !strings.Contains(errOut, "it is the default pool") ||
		strings.Contains(errOut, "is defined in") {
		t.Errorf("pools delete default: %d %q", code, errOut)
	}

	// Requests that cannot be honoured are refused, naming the field.
	big := `{"conf": {"blob": "` + strings.Repeat("x", 129<<10) + `"}}`
	if code, body := d.post(t, "/api/v1/dags/zonly/dagRuns", big); code != http.StatusBadRequest || !strings.HasPrefix(fmt.Sprint(body["detail"]), "conf:") {
		t.Errorf("conf over 128 KiB: %d %v", code, body["detail"])
	}
	if code, body := d.post(t, "/api/v1/dags/zonly/dagRuns", `{"dag_run_id": "~"}`); code != http.StatusBadRequest ||
		!strings.HasPrefix(fmt.Sprint(body["detail"]), "dag_run_id:") {
		t.Errorf("run id ~: %d %v", code, body["detail"])
	}
	if _, _, code := p.try("dags", "trigger", "zonly", "--run-id", "~"); code != 2 {
		t.Errorf("dags trigger --run-id ~: exit %d, want 2", code)
	}
	long := strings.Repeat("p", 100000)
	if _, errOut, code := p.try("pools", "set", long, "--slots", "1"); code == 0 || !strings.Contains(errOut, "too long") || len(errOut) > 1000 {
		t.Errorf("pools set with a 100,000-character name: exit %d, %d bytes of stderr", code, len(errOut))
	}
	if code, body := d.post(t, "/api/v1/pools", `{"name": "`+long+`", "slots": 1}`); code != http.StatusBadRequest ||
		len(fmt.Sprint(body["detail"])) > 1000 {
		t.Errorf("POST a 100,000-character pool name: %d (%d bytes of detail)", code, len(fmt.Sprint(body["detail"])))
	}

	// The metrics name the pool multi waited on once it is admitted.
	os.WriteFile(zRelease, nil, 0o644)
	// The metrics observe a notice before serve logs it.
	waitNotice(t, 30*time.Second, "admitted", "multi", "m1", d.logs)
	resp, err := http.Get(d.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); !strings.Contains(string(b), `poolflow_admission_wait_seconds_count{pool="z"} 2`) {
		t.Errorf("metrics once multi was admitted on z:\n%s", b)
	}
}

// TestConfigErrorsAtOnce: poolflow.yaml's problems — fields, pool resolution and rules — are
// reported in one go.
func TestConfigErrorsAtOnce(t *testing.T) {
	t.Parallel()
	p := newProject(t, `max_running: 4
pools:
  db: {slots: 3, colour: blue}
  wh: {slots: 2, ordering: strict, starvation_after: 5m}
  default: {slots: remainder}
rules:
  - {name: r, priority: 1, when: 'dag_idd == "x"', pool: db}
`, nil)
	_, errOut, code := p.try("dags", "validate")
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"pools.db.colour: unknown field", "pools.wh.starvation_after: not allowed on a strict pool",
		"pools.default.slots: remainder is -1", "rule r: when: unknown name dag_idd"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

// TestCLIStopsOnSignal: `timeout` stops a `dags validate` that cannot finish (a FIFO named like
// a DAG file blocked its read forever, and SIGTERM was ignored).
func TestCLIStopsOnSignal(t *testing.T) {
	t.Parallel()
	p := newProject(t, "", map[string]string{"ok.yaml": "tasks:\n  - {id: a, bash: 'true'}\n"})
	if err := syscall.Mkfifo(filepath.Join(p.dags, "stuck.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := exec.Command("timeout", "-s", "TERM", "2", binary, "--config", p.config, "--dags", p.dags, "--state", p.state,
		"dags", "validate")
	// timeout and poolflow in a group of their own, so the test can end both if it must.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	done := make(chan error, 1)
	var out syncBuffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("dags validate did not stop under timeout:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "stuck.yaml") || !strings.Contains(out.String(), "not a regular file") {
		t.Errorf("output:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(p.state, "poolflow.db")); err == nil {
		t.Errorf("dags validate, a read, created the database")
	}
}

// syncBuffer is a buffer two writers (stdout, stderr) share.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
