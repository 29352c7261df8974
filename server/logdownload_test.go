package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestLogDownload: ?download=true answers the whole log with a Content-Disposition naming the
// attempt, on the daemon that ran it and through another one; OpenLog streams the same bytes
// from either; a bad value is a 400 naming the parameter.
func TestLogDownload(t *testing.T) {
	t.Parallel()
	h := setupLogHosts(t, testToken)
	if rec := h.trigger(t, "echo", "e1", `, "conf": {"name": "far-away"}`); rec.Code != http.StatusOK {
		t.Fatalf("trigger: %d %s", rec.Code, rec.Body)
	}
	if state := h.waitRunEnd(t, "echo", "e1"); state != "success" {
		t.Fatalf("run ended %s", state)
	}
	path := "/api/v1/dags/echo/dagRuns/e1/taskInstances/say/logs/1"
	plain := get(h.srv, path, bearer)
	if plain.Header().Get("Content-Disposition") != "" {
		t.Errorf("a plain read names a file: %q", plain.Header().Get("Content-Disposition"))
	}
	const want = "attachment; filename=echo_e1_say_try1.log"
	for name, srv := range map[string]*Server{"where it ran": h.srv, "through the other daemon": h.other} {
		rec := get(srv, path+"?download=true", bearer)
		if rec.Code != http.StatusOK || rec.Body.String() != plain.Body.String() || !strings.Contains(rec.Body.String(), "far-away") {
			t.Errorf("%s: %d %q, want 200 %q", name, rec.Code, rec.Body, plain.Body)
		}
		if got := rec.Header().Get("Content-Disposition"); got != want {
			t.Errorf("%s: Content-Disposition %q, want %q", name, got, want)
		}
		d, err := srv.TaskInstance(context.Background(), "echo", "e1", "say")
		if err != nil {
			t.Fatal(err)
		}
		ls, err := srv.OpenLog(context.Background(), d, 1, testToken)
		if err != nil {
			t.Fatalf("%s: OpenLog: %v", name, err)
		}
		body, err := io.ReadAll(ls.Body)
		ls.Body.Close()
		if err != nil || string(body) != plain.Body.String() || ls.Size != int64(len(body)) {
			t.Errorf("%s: OpenLog read %q (size %d, %v), want %q", name, body, ls.Size, err, plain.Body)
		}
	}
	rec := get(h.srv, path+"?download=maybe", bearer)
	if p := problemOf(t, rec); rec.Code != http.StatusBadRequest || !strings.Contains(p.Detail, "download") {
		t.Errorf("download=maybe: %d %+v, want a 400 naming download", rec.Code, p)
	}
}

// TestLogAttachment: the file name is the attempt's, with what a file name cannot hold replaced
// and a non-ASCII id kept in the RFC 2231 form.
func TestLogAttachment(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		dag, run, task string
		want           string
	}{
		{"etl", "manual__2026-12-02T07:00:00+00:00", "load", `attachment; filename=etl_manual__2026-12-02T07_00_00+00_00_load_try2.log`},
		{"etl", "my run", "load", `attachment; filename="etl_my run_load_try2.log"`},
		{"a/b", `r"1`, "t\\x", `attachment; filename=a_b_r_1_t_x_try2.log`},
		{"été", "r1", "t", `attachment; filename*=utf-8''%C3%A9t%C3%A9_r1_t_try2.log`},
	} {
		if got := LogAttachment(c.dag, c.run, c.task, 2); got != c.want {
			t.Errorf("LogAttachment(%q, %q, %q) = %s, want %s", c.dag, c.run, c.task, got, c.want)
		}
	}
}
