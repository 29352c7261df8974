package ui

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/executor/runner"
	"github.com/poolflow/poolflow/internal/testwait"
	"github.com/poolflow/poolflow/server"
)

// twoHosts is two daemons on one store, each with its own state folder and its API and UI on
// a loopback port it advertises, as two hosts have them: the bundle's (ui-test) runs the
// attempts the tests trigger on it; other (ui-other) reads their logs from it.
type twoHosts struct {
	*bundle
	other    *server.Server
	otherURL string
}

// listen serves whatever handler h holds on a loopback port and returns its base URL.
func listen(t *testing.T, h *atomic.Pointer[http.Handler]) (*httptest.Server, string) {
	t.Helper()
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*h.Load()).ServeHTTP(w, r)
	}))
	return ts, "http://" + ts.Listener.Addr().String()
}

func setupTwoHosts(t *testing.T, token string) *twoHosts {
	t.Helper()
	var first, second atomic.Pointer[http.Handler]
	ts1, url1 := listen(t, &first)
	b := setup(t, setupOpts{token: token, api: url1})
	h1 := http.Handler(b.srv)
	first.Store(&h1)
	ts1.Start()
	t.Cleanup(ts1.Close)

	ts2, url2 := listen(t, &second)
	st, err := b.st.Reopen(context.Background()) // its own handle: the two see each other's commits
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg, err := config.Parse("poolflow.yaml", []byte(testConfig))
	if err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(b.dir, "state-other")
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	d, err := executor.New(executor.Config{Store: st, Settings: cfg, DAGsDir: filepath.Join(b.dir, "dags"),
		StateDir: stateDir, DaemonID: "ui-other", API: url2, Logger: quiet, ShutdownGrace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop() })
	other := server.New(server.Config{Store: st, Daemon: d, StateDir: stateDir, Token: token, Logger: quiet,
		Settings: cfg, UI: New})
	t.Cleanup(func() { other.Close() })
	h2 := http.Handler(other)
	second.Store(&h2)
	ts2.Start()
	t.Cleanup(ts2.Close)
	return &twoHosts{bundle: b, other: other, otherURL: url2}
}

// getOther sends a GET to the other daemon's server in process, with the token (as a script
// reading pages would) when it is set.
func (h *twoHosts) getOther(path, token string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.other.ServeHTTP(rec, req)
	return rec
}

// TestTaskPageFromAnotherDaemon: the task page and the log follower of the daemon that did not
// run an attempt show its log, read from the daemon that ran it with the signed-in user's token;
// once that daemon has stopped, the page says which host holds the log. On the code before this
// commit the other daemon's page showed an empty log.
func TestTaskPageFromAnotherDaemon(t *testing.T) {
	t.Parallel()
	h := setupTwoHosts(t, testToken)
	h.trigger(t, "talk", "l1")
	h.waitAdmitted(t, "talk", "l1", "say")
	page := "/ui/dags/talk/runs/l1/tasks/say"
	tail := page + "/logs/1"
	// The task says it wrote its first line; the runner copies it to the log on its own time, so
	// the log is read again each time the file changes.
	if _, err := h.talked.Line(30 * time.Second); err != nil {
		t.Fatalf("say's first line: %v", err)
	}
	var rec *httptest.ResponseRecorder
	if err := testwait.Until(runner.LogPath(h.stateDir, "talk", "l1", "say", 1), 30*time.Second, func() bool {
		rec = h.getOther(tail, testToken)
		return rec.Body.String() == "first line\n"
	}); err != nil {
		t.Fatalf("the follower on the other daemon: %d %q", rec.Code, rec.Body)
	}
	if rec.Header().Get("X-Log-Running") != "1" || rec.Header().Get("X-Log-Size") != "11" {
		t.Errorf("running %q size %q", rec.Header().Get("X-Log-Running"), rec.Header().Get("X-Log-Size"))
	}
	if body := h.getOther(page, testToken).Body.String(); !strings.Contains(body, `data-offset="11" data-running="1">first line`) {
		t.Errorf("the task page on the other daemon does not show the running log:\n%s", body)
	}
	if rec := h.getOther(tail, ""); rec.Code != http.StatusSeeOther {
		t.Errorf("signed out: %d", rec.Code)
	}
	h.release(t, "go-on")
	h.waitRunEnd(t, "talk", "l1")
	rec = h.getOther(tail+"?offset=11", testToken)
	if rec.Body.String() != "second line\n" || rec.Header().Get("X-Log-Size") != "23" || rec.Header().Get("X-Log-Running") != "0" {
		t.Errorf("after the end: %q size %q running %q", rec.Body, rec.Header().Get("X-Log-Size"), rec.Header().Get("X-Log-Running"))
	}
	if rec := h.getOther(tail+"?offset=23", testToken); rec.Body.Len() != 0 || rec.Header().Get("X-Log-Size") != "23" {
		t.Errorf("at the end: %q size %q", rec.Body, rec.Header().Get("X-Log-Size"))
	}
	if err := h.daemon.Stop(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	body := h.getOther(page, testToken).Body.String()
	if !strings.Contains(body, `id="log-note-1"`) || !strings.Contains(body, htmlText("is on host "+host+" (daemon ui-test), which is gone since")) {
		t.Errorf("once ui-test stopped, the page does not say where the log is:\n%s", body)
	}
	if rec := h.getOther(tail, testToken); rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "gone since") {
		t.Errorf("the follower once ui-test stopped: %d %q", rec.Code, rec.Body)
	}
}

// TestBrowserLogFollowFromAnotherDaemon follows, in the other daemon's UI, the log of an attempt
// the first daemon runs: the line the task writes while the page is open appears.
func TestBrowserLogFollowFromAnotherDaemon(t *testing.T) {
	h := setupTwoHosts(t, "")
	h.trigger(t, "talk", "l1")
	h.waitAdmitted(t, "talk", "l1", "say")
	ctx := tab(t)
	do(t, ctx, chromedp.Navigate(h.otherURL+"/ui/dags/talk/runs/l1/tasks/say"))
	waitFor(t, ctx, "the first line", `document.querySelector("#log-1") && document.querySelector("#log-1").textContent.includes("first line")`)
	if eval[string](t, ctx, `document.querySelector("#log-1").dataset.running`) != "1" {
		t.Fatal("the attempt is not shown running")
	}
	eval[int](t, ctx, markPage)
	h.release(t, "go-on")
	waitFor(t, ctx, "the second line", `document.querySelector("#log-1").textContent.includes("second line")`)
	waitFor(t, ctx, "success", `document.querySelector(".head-actions .badge.st-success")`)
	if !eval[bool](t, ctx, pageKept) {
		t.Error("the page reloaded")
	}
	if got := eval[string](t, ctx, `document.querySelector("#log-1").textContent`); got != "first line\nsecond line\n" {
		t.Errorf("log shown as %q", got)
	}
	shot(t, ctx, "log-follow-other-daemon")
}
