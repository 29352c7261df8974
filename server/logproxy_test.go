package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/poolflow/poolflow/internal/testwait"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// logHosts is two daemons' APIs on one store, as two hosts have them: the bundle's daemon
// (test-daemon) serves its API on a loopback port it advertises in its owner row and runs the
// attempts; other is a second API with a state folder of its own, which holds none of their
// logs.
type logHosts struct {
	*bundle
	url   string // test-daemon's API
	other *Server
}

func setupLogHosts(t testing.TB, token string) *logHosts {
	t.Helper()
	var h atomic.Pointer[Server]
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.Load().ServeHTTP(w, r)
	}))
	url := "http://" + ts.Listener.Addr().String()
	b := setup(t, setupOpts{token: token, api: url, noStop: true})
	h.Store(b.srv)
	ts.Start()
	t.Cleanup(ts.Close)
	t.Cleanup(func() { _ = b.daemon.Stop() })
	other := New(Config{Store: b.st, StateDir: t.TempDir(), Token: token, Settings: b.cfg,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { other.Close() })
	return &logHosts{bundle: b, url: url, other: other}
}

// get sends a GET to srv with the given headers.
func get(srv *Server, path string, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	return rec
}

var bearer = map[string]string{"Authorization": "Bearer " + testToken}

func withBearer(kv ...string) map[string]string {
	h := map[string]string{"Authorization": "Bearer " + testToken}
	for i := 0; i+1 < len(kv); i += 2 {
		h[kv[i]] = kv[i+1]
	}
	return h
}

// putOwner writes an owner row as a daemon's start does.
func putOwner(t *testing.T, st store.Store, o store.Owner) {
	t.Helper()
	if err := st.WithTx(context.Background(), func(tx store.Tx) error { return tx.PutOwner(&o) }); err != nil {
		t.Fatal(err)
	}
}

// ranBy records that daemon ran try 1 of task of run: the attempt's row names it.
func ranBy(t *testing.T, st store.Store, dagID, runID, task, daemon string) {
	t.Helper()
	ctx := context.Background()
	run, err := st.GetRun(ctx, dagID, runID)
	if err != nil {
		t.Fatal(err)
	}
	atts, err := st.ListAttempts(ctx, run.PK, task)
	if err != nil || len(atts) == 0 {
		t.Fatalf("attempts of %s: %v %v", task, atts, err)
	}
	a := atts[0]
	a.Daemon = daemon
	if err := st.WithTx(ctx, func(tx store.Tx) error { return tx.PutAttempts([]*store.Attempt{&a}) }); err != nil {
		t.Fatal(err)
	}
}

// TestLogFromAnotherDaemon reads an ended attempt's log through a daemon that did not run it,
// and every answer for a holder that cannot be asked. On the code before this commit the other
// daemon answered 404 "no log" to every read.
func TestLogFromAnotherDaemon(t *testing.T) {
	t.Parallel()
	h := setupLogHosts(t, testToken)
	if rec := h.trigger(t, "echo", "e1", `, "conf": {"name": "far-away"}`); rec.Code != http.StatusOK {
		t.Fatalf("trigger: %d %s", rec.Code, rec.Body)
	}
	if state := h.waitRunEnd(t, "echo", "e1"); state != "success" {
		t.Fatalf("run ended %s", state)
	}
	path := "/api/v1/dags/echo/dagRuns/e1/taskInstances/say/logs/1"
	local := get(h.srv, path, bearer)
	if local.Code != http.StatusOK || !strings.Contains(local.Body.String(), "far-away") {
		t.Fatalf("the log where it ran: %d %s", local.Code, local.Body)
	}

	far := get(h.other, path, bearer)
	if far.Code != http.StatusOK || far.Body.String() != local.Body.String() {
		t.Fatalf("the log through the other daemon: %d %q, want 200 %q", far.Code, far.Body, local.Body)
	}
	if got := far.Header().Get(logDaemonHeader); got != "test-daemon" {
		t.Errorf("%s: %q, want test-daemon", logDaemonHeader, got)
	}
	if ct := far.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("content type %q", ct)
	}
	ranged := get(h.other, path, withBearer("Range", "bytes=2-6"))
	want := get(h.srv, path, withBearer("Range", "bytes=2-6"))
	if ranged.Code != http.StatusPartialContent || ranged.Body.String() != want.Body.String() ||
		ranged.Header().Get("Content-Range") != want.Header().Get("Content-Range") {
		t.Fatalf("range through the other daemon: %d %q %q, want 206 %q %q", ranged.Code, ranged.Body,
			ranged.Header().Get("Content-Range"), want.Body, want.Header().Get("Content-Range"))
	}
	if rec := get(h.other, path, nil); rec.Code != http.StatusUnauthorized {
		t.Fatalf("no token: %d, want the other daemon's own 401", rec.Code)
	}

	t.Run("the caller's credentials go along", func(t *testing.T) {
		// An API without a token of its own forwards what the caller sent, and only that.
		open := New(Config{Store: h.st, StateDir: t.TempDir(), Settings: h.cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		defer open.Close()
		rec := get(open, path, nil)
		if rec.Code != http.StatusUnauthorized || !strings.Contains(problemOf(t, rec).Detail, "daemon test-daemon") {
			t.Fatalf("no credentials: %d %s, want test-daemon's 401 named", rec.Code, rec.Body)
		}
		if rec := get(open, path, bearer); rec.Code != http.StatusOK || rec.Body.String() != local.Body.String() {
			t.Fatalf("the caller's token: %d %s", rec.Code, rec.Body)
		}
	})

	t.Run("a forwarded request is not forwarded again", func(t *testing.T) {
		rec := get(h.other, path, withBearer(forwardedHeader, "d9"))
		if rec.Code != http.StatusNotFound || !strings.Contains(problemOf(t, rec).Detail, "does not forward") {
			t.Fatalf("forwarded: %d %s", rec.Code, rec.Body)
		}
	})

	// A ghost daemon on another host; its row is written as each case needs it.
	now := time.Now()
	alive := store.Owner{ID: "ghost", Kind: vocab.OwnerDaemon, Host: "otherhost", PID: 7, StartedAt: now, Heartbeat: now,
		LeaseUntil: now.Add(time.Hour)}
	ranBy(t, h.st, "echo", "e1", "say", "ghost")
	for _, c := range []struct {
		name   string
		owner  func(o *store.Owner)
		status int
		detail string
	}{
		{"gone", func(o *store.Owner) {
			o.API, o.Heartbeat, o.LeaseUntil = h.url, now.Add(-time.Minute), now.Add(-time.Second)
		}, http.StatusServiceUnavailable, "is on host otherhost (daemon ghost), which is gone since " +
			now.Add(-time.Minute).UTC().Format(time.RFC3339)},
		{"no API address", func(o *store.Owner) {}, http.StatusServiceUnavailable, "advertises no API address"},
		{"a dags test process", func(o *store.Owner) { o.Kind = vocab.OwnerTest }, http.StatusServiceUnavailable,
			"in the state folder of dags test process ghost, which serves no API"},
		{"loopback on another host", func(o *store.Owner) { o.API = "http://127.0.0.1:1" }, http.StatusServiceUnavailable,
			"advertises only a loopback address (http://127.0.0.1:1)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := alive
			c.owner(&o)
			putOwner(t, h.st, o)
			rec := get(h.other, path, bearer)
			if rec.Code != c.status || !strings.Contains(problemOf(t, rec).Detail, c.detail) {
				t.Fatalf("%d %s, want %d with %q", rec.Code, rec.Body, c.status, c.detail)
			}
			if d := problemOf(t, rec).Detail; !strings.Contains(d, "try 1 of task say (run e1 of DAG echo)") {
				t.Errorf("the answer does not name the attempt: %s", d)
			}
		})
	}

	t.Run("no owner row", func(t *testing.T) {
		ranBy(t, h.st, "echo", "e1", "say", "vanished")
		defer ranBy(t, h.st, "echo", "e1", "say", "ghost")
		rec := get(h.other, path, bearer)
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(problemOf(t, rec).Detail, "vanished, which has no owner row") {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	})

	// The ghost on this host (its pid, 1, runs), at an address the test controls.
	here, _ := os.Hostname()
	var mu sync.Mutex
	var seen []*http.Request
	answer := func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, h.url+r.URL.Path, http.StatusFound) }
	ghost := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Clone(context.Background()))
		a := answer
		mu.Unlock()
		a(w, r)
	}))
	defer ghost.Close()
	o := alive
	o.Host, o.PID, o.API = here, 1, ghost.URL
	putOwner(t, h.st, o)

	t.Run("what is forwarded", func(t *testing.T) {
		mu.Lock()
		seen = nil
		answer = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Range", "bytes 0-2/10")
			w.Header().Set("X-Secret", "no")
			w.WriteHeader(http.StatusPartialContent)
			_, _ = io.WriteString(w, "abc")
		}
		mu.Unlock()
		rec := get(h.other, path, withBearer("Range", "bytes=0-2", "Cookie", "poolflow_token=other", "X-Other", "no"))
		if rec.Code != http.StatusPartialContent || rec.Body.String() != "abc" || rec.Header().Get("Content-Range") != "bytes 0-2/10" {
			t.Fatalf("%d %q %v", rec.Code, rec.Body, rec.Header())
		}
		if rec.Header().Get("X-Secret") != "" {
			t.Error("a header of the other daemon's answer that is not a file's was passed on")
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != 1 {
			t.Fatalf("%d requests reached the ghost, want 1", len(seen))
		}
		r := seen[0]
		if r.URL.Path != path || r.URL.RawQuery != "" {
			t.Errorf("asked for %s?%s, want %s: the path is built from stored ids, never the caller's", r.URL.Path, r.URL.RawQuery, path)
		}
		if r.Header.Get("Authorization") != "Bearer "+testToken || r.Header.Get("Range") != "bytes=0-2" {
			t.Errorf("credentials or range not forwarded: %v", r.Header)
		}
		if r.Header.Get("Cookie") != "" || r.Header.Get("X-Other") != "" {
			t.Errorf("the caller's other headers were forwarded: %v", r.Header)
		}
		if r.Header.Get(forwardedHeader) == "" {
			t.Errorf("the request does not say it was forwarded: %v", r.Header)
		}
	})

	t.Run("a redirect is not followed", func(t *testing.T) {
		mu.Lock()
		seen = nil
		answer = func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, h.url+r.URL.Path, http.StatusFound) }
		mu.Unlock()
		rec := get(h.other, path, bearer)
		if rec.Code != http.StatusBadGateway || !strings.Contains(problemOf(t, rec).Detail, "answered 302") {
			t.Fatalf("%d %s, want 502 naming the redirect", rec.Code, rec.Body)
		}
	})

	t.Run("a daemon that cannot be reached", func(t *testing.T) {
		dead := httptest.NewServer(http.NotFoundHandler())
		o := o
		o.API = dead.URL
		dead.Close()
		putOwner(t, h.st, o)
		rec := get(h.other, path, bearer)
		if rec.Code != http.StatusBadGateway || !strings.Contains(problemOf(t, rec).Detail, "whose API at "+dead.URL+" cannot be reached") {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		// Asked again at once, it answers without waiting for another dial.
		rec = get(h.other, path, bearer)
		if rec.Code != http.StatusBadGateway || !strings.Contains(problemOf(t, rec).Detail, "tried ") {
			t.Fatalf("again: %d %s", rec.Code, rec.Body)
		}
	})

	t.Run("the daemon that ran it is this one's own address", func(t *testing.T) {
		// The ghost advertises test-daemon's address and the file is not here: test-daemon
		// does not ask itself.
		o := o
		o.API = h.url
		putOwner(t, h.st, o)
		if rec := get(h.srv, path, bearer); rec.Code != http.StatusOK {
			t.Fatalf("with the file in its own folder: %d %s", rec.Code, rec.Body)
		}
		run, _ := h.st.GetRun(context.Background(), "echo", "e1")
		if err := os.Remove(h.srv.LogPath(run, "say", 1)); err != nil {
			t.Fatal(err)
		}
		rec := get(h.srv, path, bearer)
		if rec.Code != http.StatusBadGateway || !strings.Contains(problemOf(t, rec).Detail, "this daemon's own address") {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	})
}

// TestLogFollowThroughAnotherDaemon follows a running attempt's log through a daemon that does
// not run it, with the range requests a local reader uses, then reads it after the end, and once
// its daemon has stopped is told which host holds it.
func TestLogFollowThroughAnotherDaemon(t *testing.T) {
	t.Parallel()
	h := setupLogHosts(t, testToken)
	gate := filepath.Join(h.dir, "go-on")
	said, err := testwait.NewPipe(filepath.Join(h.dir, "said"))
	if err != nil {
		t.Fatal(err)
	}
	defer said.Close()
	h.writeDAG(t, "talk.yaml", "tasks:\n  - id: say\n    bash: \"echo first line; echo said > '"+said.Path+
		"'; while [ ! -e '"+gate+"' ]; do sleep 0.02; done; echo second line\"\n")
	h.waitDAG(t, "talk")
	if rec := h.trigger(t, "talk", "l1", ""); rec.Code != http.StatusOK {
		t.Fatalf("trigger: %d %s", rec.Code, rec.Body)
	}
	path := "/api/v1/dags/talk/dagRuns/l1/taskInstances/say/logs/1"
	first := "first line\n"
	// The task says it wrote its first line; the runner copies it to the log on its own time, so
	// the log is read again each time the file changes.
	if _, err := said.Line(30 * time.Second); err != nil {
		t.Fatalf("the attempt's first line: %v", err)
	}
	run, err := h.st.GetRun(context.Background(), "talk", "l1")
	if err != nil {
		t.Fatal(err)
	}
	var rec *httptest.ResponseRecorder
	if err := testwait.Until(h.srv.LogPath(run, "say", 1), 30*time.Second, func() bool {
		rec = get(h.other, path, bearer)
		return rec.Code == http.StatusOK && rec.Body.String() == first
	}); err != nil {
		t.Fatalf("the first line through the other daemon: %d %q", rec.Code, rec.Body)
	}
	// Nothing new yet: the same 416 a local reader gets at the end of the file.
	rec = get(h.other, path, withBearer("Range", "bytes=11-"))
	if rec.Code != http.StatusRequestedRangeNotSatisfiable || rec.Header().Get("Content-Range") != "bytes */11" {
		t.Fatalf("at the end: %d %q %s", rec.Code, rec.Header().Get("Content-Range"), rec.Body)
	}
	touch(t, gate)
	if state := h.waitRunEnd(t, "talk", "l1"); state != "success" {
		t.Fatalf("run ended %s", state)
	}
	if rec := get(h.other, path, withBearer("Range", "bytes=11-")); rec.Code != http.StatusPartialContent ||
		rec.Body.String() != "second line\n" {
		t.Fatalf("following the ended attempt through the other daemon: %d %q", rec.Code, rec.Body)
	}
	if rec := get(h.other, path, bearer); rec.Code != http.StatusOK || rec.Body.String() != first+"second line\n" {
		t.Fatalf("after the end: %d %q", rec.Code, rec.Body)
	}
	if err := h.daemon.Stop(); err != nil {
		t.Fatal(err)
	}
	rec = get(h.other, path, bearer)
	here, _ := os.Hostname()
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(problemOf(t, rec).Detail,
		"is on host "+here+" (daemon test-daemon), which is gone since") {
		t.Fatalf("once test-daemon stopped: %d %s", rec.Code, rec.Body)
	}
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkLogRead reads a log over HTTP from the daemon that holds it (local) and through
// another daemon (proxied), both over loopback: a whole 10 KiB log, the UI's 256 KiB tail of a
// 1 MiB log, a follower's read of the last 500 bytes, and a whole 10 MiB log.
func BenchmarkLogRead(b *testing.B) {
	h := setupLogHosts(b, testToken)
	if rec := h.trigger(b, "echo", "e1", ""); rec.Code != http.StatusOK {
		b.Fatalf("trigger: %d %s", rec.Code, rec.Body)
	}
	h.waitRunEnd(b, "echo", "e1")
	run, _ := h.st.GetRun(context.Background(), "echo", "e1")
	file := h.srv.LogPath(run, "say", 1)
	other := httptest.NewServer(h.other)
	defer other.Close()
	path := "/api/v1/dags/echo/dagRuns/e1/taskInstances/say/logs/1"
	client := &http.Client{}
	line := []byte("2026-12-02T06:59:43Z INFO loading partition 0042 of table events: 18,231 rows in 0.42s\n")
	for _, c := range []struct {
		name       string
		size, read int
		rng        string
	}{
		{"whole-10KiB", 10 << 10, 10 << 10, ""},
		{"tail-256KiB-of-1MiB", 1 << 20, 256 << 10, "bytes=-262144"},
		{"follow-500B", 1 << 20, 500, fmt.Sprintf("bytes=%d-", (1<<20)-500)},
		{"whole-10MiB", 10 << 20, 10 << 20, ""},
	} {
		body := bytes.Repeat(line, c.size/len(line)+1)[:c.size]
		if err := os.WriteFile(file, body, 0o644); err != nil {
			b.Fatal(err)
		}
		for _, where := range []struct{ name, base string }{{"local", h.url}, {"proxied", other.URL}} {
			b.Run(c.name+"/"+where.name, func(b *testing.B) {
				b.SetBytes(int64(c.read))
				for b.Loop() {
					req, _ := http.NewRequest(http.MethodGet, where.base+path, nil)
					req.Header.Set("Authorization", "Bearer "+testToken)
					if c.rng != "" {
						req.Header.Set("Range", c.rng)
					}
					resp, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
						b.Fatalf("%s: %d", where.name, resp.StatusCode)
					}
				}
			})
		}
	}
}
