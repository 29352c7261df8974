package e2e

import (
	"context"
	"html"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/poolflow/poolflow/executor/runner"
	"github.com/poolflow/poolflow/internal/testwait"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/store/storetest"
	"github.com/poolflow/poolflow/vocab"
)

// TestLogsFromAnyHost: two `poolflow serve` daemons on one store (a SQLite file outside both
// state folders; a PostgreSQL installation when POOLFLOW_TEST_POSTGRES is set), each with a
// state folder of its own as two hosts have. An attempt d1 runs has its log in d1's folder;
// d2's API follows it while it runs (range requests, as on d1) and reads it after the end,
// with the caller's token, and so does d2's task page; once d1 is killed, d2 says which host
// holds the log. On the code before this commit d2 answered 404 "no log" to every read.
func TestLogsFromAnyHost(t *testing.T) {
	t.Parallel()
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			testLogsFromAnyHost(t, driver)
		})
	}
}

func testLogsFromAnyHost(t *testing.T, driver string) {
	const token = "s3cret"
	marks := t.TempDir()
	gate := filepath.Join(marks, "go-on")
	said := pipe(t, marks, "said")
	p := newProject(t, "api:\n  token: "+token+"\n", map[string]string{"talk.yaml": "tasks:\n  - id: say\n" +
		"    bash: \"echo first line; echo said > '" + said.Path + "'; while [ ! -e '" + gate + "' ]; do sleep 0.02; done; echo second line\"\n"})
	target := filepath.Join(p.dir, "shared.db")
	if driver == "postgres" {
		target = storetest.PostgresSchema(t, storetest.PostgresDSN(t))
	}
	p.run(t, "--store", target, "store", "migrate")
	st, err := store.Open(context.Background(), target, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	start := func(id string) *serveProc {
		q := *p
		q.state = filepath.Join(p.dir, "state-"+id) // one state folder per host
		s := q.startServe(t, "", "--store", target, "--daemon-id", id)
		s.waitServing(30 * time.Second)
		return s
	}
	d1, d2 := start("d1"), start("d2")
	// Each advertises where it listens (a loopback address: both run on this host).
	for _, d := range []struct {
		id string
		s  *serveProc
	}{{"d1", d1}, {"d2", d2}} {
		if o, err := st.GetOwner(context.Background(), d.id); err != nil || o.API != d.s.base {
			t.Fatalf("owner row of %s: API %q (%v), want %s", d.id, o.API, err, d.s.base)
		}
	}
	auth := map[string]string{"Authorization": "Bearer " + token}
	if code, _, body := d1.request(http.MethodPost, "/api/v1/dags/talk/dagRuns", `{"dag_run_id": "r1"}`, auth); code != http.StatusOK {
		t.Fatalf("trigger on d1: %d %s", code, body)
	}
	path := "/api/v1/dags/talk/dagRuns/r1/taskInstances/say/logs/1"
	first, second := "first line\n", "second line\n"
	// The task says it wrote its first line; d1's runner copies it to the log on its own time, so
	// the log is read again each time the file changes.
	line(t, said, "the attempt's first line")
	var code int
	var hdr http.Header
	var body string
	if err := testwait.Until(runner.LogPath(filepath.Join(p.dir, "state-d1"), "talk", "r1", "say", 1), 30*time.Second, func() bool {
		code, hdr, body = d2.request(http.MethodGet, path, "", auth)
		return code == http.StatusOK && body == first && hdr.Get("X-Poolflow-Log-Daemon") == "d1"
	}); err != nil {
		t.Fatalf("the running attempt's log through d2: %d %q from %q", code, body, hdr.Get("X-Poolflow-Log-Daemon"))
	}
	if code, _, _ := d2.request(http.MethodGet, path, "", nil); code != http.StatusUnauthorized {
		t.Fatalf("without the token: %d", code)
	}
	rng := map[string]string{"Authorization": "Bearer " + token, "Range": "bytes=11-"}
	if code, hdr, body := d2.request(http.MethodGet, path, "", rng); code != http.StatusRequestedRangeNotSatisfiable ||
		hdr.Get("Content-Range") != "bytes */11" {
		t.Fatalf("following at the end of the log: %d %q %s", code, hdr.Get("Content-Range"), body)
	}
	touch(t, gate)
	if st := runEnded(t, 30*time.Second, "talk", "r1", d1.logs); st != string(vocab.RunSuccess) {
		t.Fatalf("run r1 ended %s", st)
	}
	if code, _, body := d2.request(http.MethodGet, path, "", rng); code != http.StatusPartialContent || body != second {
		t.Fatalf("following the ended attempt's log through d2: %d %q", code, body)
	}
	if code, _, body := d2.request(http.MethodGet, path, "", auth); code != http.StatusOK || body != first+second {
		t.Fatalf("the ended attempt's log through d2: %d %q", code, body)
	}
	page := "/ui/dags/talk/runs/r1/tasks/say"
	// The page reads the log from d1 with api.token, the credential the page was read with.
	if code, _, body := d2.request(http.MethodGet, page, "", auth); code != http.StatusOK ||
		!strings.Contains(body, ">"+first+second+"</pre>") {
		t.Fatalf("d2's task page: %d\n%s", code, body)
	}
	if a, err := st.ListAttempts(context.Background(), runPK(t, st, "talk", "r1"), "say"); err != nil || len(a) != 1 || a[0].Daemon != "d1" {
		t.Fatalf("attempts %+v %v, want one d1 ran", a, err)
	}

	d1.kill()
	host := ownerHost(t, st, "d1")
	want := "try 1 of task say (run r1 of DAG talk) is on host " + host + " (daemon d1), which is gone since"
	code, _, body = d2.request(http.MethodGet, path, "", auth)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, want) {
		t.Fatalf("once d1 is gone: %d %s, want 503 with %q", code, body, want)
	}
	if code, _, body := d2.request(http.MethodGet, page, "", auth); code != http.StatusOK || !strings.Contains(html.UnescapeString(body), want) {
		t.Fatalf("d2's task page once d1 is gone: %d\n%s", code, body)
	}
	d2.stop(30 * time.Second)
}

// request sends one request to the daemon's API with the given headers and returns the status,
// the answer's headers and its body.
func (s *serveProc) request(method, path, body string, hdr map[string]string) (int, http.Header, string) {
	s.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func runPK(t *testing.T, st store.Store, dagID, runID string) int64 {
	t.Helper()
	r, err := st.GetRun(context.Background(), dagID, runID)
	if err != nil {
		t.Fatal(err)
	}
	return r.PK
}

func ownerHost(t *testing.T, st store.Store, id string) string {
	t.Helper()
	o, err := st.GetOwner(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return o.Host
}
