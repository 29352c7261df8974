package e2e

import (
	"html"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const reportV1 = `# report, first version
tasks:
  - {id: build, bash: 'echo building the first way'}
`

const reportV2 = `# report, second version
tasks:
  - {id: build, bash: 'echo building the second way'}
  - {id: ship, bash: 'echo shipping', depends_on: [build]}
`

var runCodeRE = regexp.MustCompile(`href="([^"]*)" id="run-code"`)

// TestEachRunShowsItsOwnCode (§12) with a real poolflow serve: the DAG file changes between two
// runs; each run's page links to the code it ran, which is its own text, the older one says it
// is not the current version, and the API answers both texts.
func TestEachRunShowsItsOwnCode(t *testing.T) {
	t.Parallel()
	p := newProject(t, "", map[string]string{"report.yaml": reportV1})
	s := p.serve(t)
	s.trigger("report", "r1")
	if st := runEnded(t, 30*time.Second, "report", "r1", s.logs); st != "success" {
		t.Fatalf("r1 ended %s", st)
	}
	if err := os.WriteFile(filepath.Join(p.dags, "report.yaml"), []byte(reportV2), 0o644); err != nil {
		t.Fatal(err)
	}
	until(t, 30*time.Second, "version 2 recorded", func() bool {
		_, body := s.get("/api/v1/dags/report")
		return strings.Contains(body, `"dag_version": 2`)
	}, s.logs)
	s.trigger("report", "r2")
	if st := runEnded(t, 30*time.Second, "report", "r2", s.logs); st != "success" {
		t.Fatalf("r2 ended %s", st)
	}

	for run, want := range map[string]struct{ own, other string }{
		"r1": {reportV1, reportV2}, "r2": {reportV2, reportV1},
	} {
		page := s.status("/ui/dags/report/runs/"+run, http.StatusOK)
		m := runCodeRE.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("run %s's page has no link to its code:\n%s", run, page)
		}
		code := s.status(html.UnescapeString(m[1]), http.StatusOK)
		for _, line := range strings.Split(strings.TrimSpace(want.own), "\n") {
			if !strings.Contains(code, html.EscapeString(line)) {
				t.Errorf("run %s's Code tab lacks its line %q", run, line)
			}
		}
		if first := strings.SplitN(want.other, "\n", 2)[0]; strings.Contains(code, html.EscapeString(first)) {
			t.Errorf("run %s's Code tab shows the other version (%q)", run, first)
		}
		if noted := strings.Contains(page, `id="version-note"`); noted != (run == "r1") {
			t.Errorf("run %s: says it is not the current version: %v", run, noted)
		}
	}
	for n, text := range map[string]string{"1": reportV1, "2": reportV2} {
		req, _ := http.NewRequest(http.MethodGet, s.base+"/api/v1/dagSources/report?version_number="+n, nil)
		req.Header.Set("Accept", "text/plain")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != text {
			t.Errorf("dagSources version %s: %d %q", n, resp.StatusCode, b)
		}
	}
}

// TestDBCleanBesideADaemon (§12): poolflow db clean deletes an old run, its rows and its logs
// while poolflow serve runs on the same store, keeps the DAG's last run, refuses a date in the
// future, and the daemon goes on running DAGs.
func TestDBCleanBesideADaemon(t *testing.T) {
	t.Parallel()
	p := newProject(t, "", map[string]string{"report.yaml": reportV1})
	s := p.serve(t)
	for _, run := range []string{"r1", "r2"} {
		s.trigger("report", run)
		if st := runEnded(t, 30*time.Second, "report", run, s.logs); st != "success" {
			t.Fatalf("%s ended %s", run, st)
		}
	}
	logDir := func(run string) bool {
		_, err := os.Stat(filepath.Join(p.state, "logs", "report", run))
		return err == nil
	}
	if !logDir("r1") || !logDir("r2") {
		t.Fatal("the runs wrote no logs")
	}
	c := p.cmd("db", "clean", "--before", time.Now().Add(48*time.Hour).UTC().Format("2006-01-02"), "--yes")
	if out, err := c.CombinedOutput(); err == nil || !strings.Contains(string(out), "is in the future") {
		t.Fatalf("a future date: %v\n%s", err, out)
	}
	out := p.run(t, "db", "clean", "--before", "0s", "--yes")
	if !strings.Contains(out, "Deleted 1 runs") {
		t.Fatalf("db clean:\n%s", out)
	}
	s.status("/api/v1/dags/report/dagRuns/r1", http.StatusNotFound)
	s.status("/api/v1/dags/report/dagRuns/r2", http.StatusOK)
	if logDir("r1") || !logDir("r2") {
		t.Fatalf("logs after the clean: r1 %v (want gone), r2 %v (want kept)", logDir("r1"), logDir("r2"))
	}
	s.trigger("report", "r3")
	if st := runEnded(t, 30*time.Second, "report", "r3", s.logs); st != "success" {
		t.Fatalf("r3 after the clean ended %s", st)
	}
}
