package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/poolflow/poolflow/internal/testwait"
)

// binary is the poolflow binary TestMain builds for the end-to-end test; buildErr says why it
// could not be built.
var (
	binary   string
	buildErr error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "poolflow-server-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "poolflow")
	build := exec.Command("go", "build", "-o", binary, "github.com/poolflow/poolflow/cmd/poolflow")
	var out bytes.Buffer
	build.Stdout, build.Stderr = &out, &out
	if err := build.Run(); err != nil {
		// Only the end-to-end test needs the binary; it reports this.
		buildErr = fmt.Errorf("build poolflow: %v\n%s", err, out.String())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestServeEndToEnd starts the real binary with `serve` on a free port, triggers a run with conf
// over HTTP, waits for the daemon to log its end, reads its log over HTTP, and stops the daemon with SIGTERM.
func TestServeEndToEnd(t *testing.T) {
	t.Parallel()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	dir := t.TempDir()
	dags, state := filepath.Join(dir, "dags"), filepath.Join(dir, "state")
	if err := os.MkdirAll(dags, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "poolflow.yaml")
	files := map[string]string{
		cfg: "pools:\n  db: 1\n",
		filepath.Join(dags, "greet.yaml"): `
params: {name: world}
tasks:
  - id: hello
    command: ["printenv", "POOLFLOW_PARAMS"]
    pool_requirements: {db: 1}
  - id: after
    depends_on: [hello]
    command: ["true"]
`,
	}
	for path, body := range files {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve", "--config", cfg, "--dags", dags, "--state", state,
		"--listen", "127.0.0.1:0", "--daemon-id", "e2e")
	cmd.Env = append(os.Environ(), "POOLFLOW_API_TOKEN="+testToken)
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	base, logs := serveAddress(t, stderr)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})

	c := &client{t: t, base: base}
	// serve says it serves once its daemon started; before, the API answers 503.
	if !logs.Wait(`msg="poolflow serving"`, 20*time.Second) {
		t.Fatalf("serve did not start serving:\n%s", logs.String())
	}
	if status, body := c.call(http.MethodGet, "/api/v1/health", "", ""); status != http.StatusOK || strings.Contains(body, "unhealthy") {
		t.Fatalf("health once serving: %d %s", status, body)
	}
	status, body := c.call(http.MethodPost, "/api/v1/dags/greet/dagRuns",
		`{"dag_run_id": "e2e_1", "conf": {"name": "from-e2e"}}`, testToken)
	if status != http.StatusOK && status != http.StatusAccepted {
		t.Fatalf("trigger: %d %s", status, body)
	}
	if status, _ := c.call(http.MethodPost, "/api/v1/dags/greet/dagRuns", `{}`, ""); status != http.StatusUnauthorized {
		t.Fatalf("trigger without token: %d", status)
	}
	// The daemon logs each run's end after the pass that ended it committed.
	if !logs.Wait(`msg="run ended" dag_id=greet run_id=e2e_1`, 20*time.Second) {
		t.Fatalf("run e2e_1 did not end:\n%s", logs.String())
	}
	c.runState("greet", "e2e_1", "success")
	status, log := c.call(http.MethodGet, "/api/v1/dags/greet/dagRuns/e2e_1/taskInstances/hello/logs/1", "", testToken)
	if status != http.StatusOK || !strings.Contains(log, `"name":"from-e2e"`) {
		t.Fatalf("log: %d %q", status, log)
	}
	// With authentication on (api.token), /metrics is a read like any other: a scraper sends a
	// token (Prometheus' authorization: {credentials: …}).
	if status, _ := c.call(http.MethodGet, "/metrics", "", ""); status != http.StatusUnauthorized {
		t.Fatalf("metrics without the token: %d", status)
	}
	if status, _ := c.call(http.MethodGet, "/metrics", "", testToken); status != http.StatusOK {
		t.Fatalf("metrics: %d", status)
	}

	// Graceful shutdown: SIGTERM lets the process finish and exit 0.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		if err != nil {
			t.Fatalf("serve exited with %v; stderr:\n%s", err, logs.String())
		}
	case <-ctx.Done():
		t.Fatalf("serve did not exit after SIGTERM; stderr:\n%s", logs.String())
	}
}

var listenRE = regexp.MustCompile(`listen=(http://\S+)`)

// serveAddress reads serve's log until it says where it listens; the rest of the log is kept in
// the returned buffer for failure messages.
func serveAddress(t *testing.T, stderr io.Reader) (string, *testwait.Log) {
	t.Helper()
	logs := &testwait.Log{}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			logs.Write([]byte(sc.Text() + "\n"))
			if m := listenRE.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		if !sent {
			close(found)
		}
	}()
	select {
	case addr, ok := <-found:
		if !ok {
			t.Fatalf("serve exited before listening:\n%s", logs.String())
		}
		return addr, logs
	case <-time.After(15 * time.Second):
		t.Fatalf("serve did not report its address:\n%s", logs.String())
	}
	return "", nil
}

type client struct {
	t    *testing.T
	base string
}

func (c *client) call(method, path, body, token string) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// runState fails the test unless the API says the run is in state want.
func (c *client) runState(dagID, runID, want string) {
	c.t.Helper()
	status, body := c.call(http.MethodGet, "/api/v1/dags/"+dagID+"/dagRuns/"+runID, "", testToken)
	if status != http.StatusOK {
		c.t.Fatalf("get run: %d %s", status, body)
	}
	var run struct {
		State string `json:"state"`
	}
	if err := json.Unmarshal([]byte(body), &run); err != nil {
		c.t.Fatal(err)
	}
	if run.State != want {
		c.t.Fatalf("run %s is %s, want %s: %s", runID, run.State, want, body)
	}
}
