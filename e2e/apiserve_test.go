package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// apiDaemon is a running `poolflow serve` of a project, with the base URL of its API and JSON
// helpers for it (serveProc, in serve_test.go, is the one the liveness tests kill and restart).
type apiDaemon struct {
	cmd  *exec.Cmd
	url  string
	logs *logBuf
}

var apiListenRE = regexp.MustCompile(`http://127\.0\.0\.1:\d+`)

// serveAPI starts `poolflow serve` on a free port and waits for its address in the log; the
// test's cleanup stops it with SIGTERM.
func (p *project) serveAPI(t *testing.T, extra ...string) *apiDaemon {
	t.Helper()
	c := p.cmd(append([]string{"serve", "--listen", "127.0.0.1:0"}, extra...)...)
	c.Env = append(os.Environ(), "POOLFLOW_LOG_LEVEL=debug") // its notices: see logBuf
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stdout = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	d := &apiDaemon{cmd: c, logs: &logBuf{}}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			d.logs.add(line)
			if strings.Contains(line, "poolflow serving") {
				if u := apiListenRE.FindString(line); u != "" {
					select {
					case found <- u:
					default:
					}
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = c.Process.Signal(syscall.SIGTERM)
		_ = c.Wait()
		if t.Failed() {
			t.Logf("serve log:\n%s", d.log())
		}
	})
	select {
	case d.url = <-found:
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not start:\n%s", d.log())
	}
	return d
}

func (d *apiDaemon) log() string { return d.logs.String() }

// get reads an API path and decodes its JSON answer into v (when not nil); it returns the status.
func (d *apiDaemon) get(t *testing.T, path string, v any) int {
	t.Helper()
	resp, err := http.Get(d.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v\n%s", path, err, body)
		}
	}
	return resp.StatusCode
}

// post sends a JSON body and returns the status and the decoded answer.
func (d *apiDaemon) post(t *testing.T, path, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(d.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// importErrors is GET /api/v1/importErrors as file -> message.
func (d *apiDaemon) importErrors(t *testing.T) map[string]string {
	t.Helper()
	var got struct {
		ImportErrors []struct {
			Filename   string `json:"filename"`
			StackTrace string `json:"stack_trace"`
		} `json:"import_errors"`
	}
	if code := d.get(t, "/api/v1/importErrors?limit=1000", &got); code != http.StatusOK {
		t.Fatalf("importErrors: %d", code)
	}
	out := map[string]string{}
	for _, ie := range got.ImportErrors {
		out[ie.Filename] = ie.StackTrace
	}
	return out
}

// dagIDs is the loaded DAGs of GET /api/v1/dags.
func (d *apiDaemon) dagIDs(t *testing.T) []string {
	t.Helper()
	var got struct {
		DAGs []struct {
			DAGID string `json:"dag_id"`
		} `json:"dags"`
	}
	d.get(t, "/api/v1/dags?limit=1000", &got)
	var out []string
	for _, x := range got.DAGs {
		out = append(out, x.DAGID)
	}
	return out
}

// try runs a poolflow command and returns stdout, stderr and the exit code, whatever it is.
func (p *project) try(args ...string) (string, string, int) {
	c := p.cmd(args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
		errb.WriteString(err.Error())
	}
	return out.String(), errb.String(), code
}
