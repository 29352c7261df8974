package server

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestConditional: a read answers with an ETag, a 304 when the client has the body, gzip when
// accepted and worth it; errors, flushed and self-encoded responses pass through untouched.
func TestConditional(t *testing.T) {
	big := strings.Repeat("poolflow pools ", 500)
	h := conditional(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, big)
		case "/small":
			_, _ = io.WriteString(w, "ok")
		case "/missing":
			http.Error(w, "no such thing", http.StatusNotFound)
		case "/flush":
			_, _ = io.WriteString(w, "first")
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, big)
		case "/nostore":
			w.Header().Set("Cache-Control", "no-store")
			_, _ = io.WriteString(w, big)
		case "/post":
			_, _ = io.WriteString(w, big)
		}
	}))
	do := func(method, path string, hdr map[string]string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	gunzip := func(t *testing.T, rec *httptest.ResponseRecorder) string {
		t.Helper()
		if rec.Header().Get("Content-Encoding") != "gzip" {
			t.Fatalf("not gzipped: %v", rec.Header())
		}
		zr, err := gzip.NewReader(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	plain := do("GET", "/big", nil)
	etag := plain.Header().Get("ETag")
	if plain.Code != 200 || plain.Body.String() != big || etag == "" || plain.Header().Get("Content-Encoding") != "" {
		t.Fatalf("plain read: %d %v", plain.Code, plain.Header())
	}
	zipped := do("GET", "/big", map[string]string{"Accept-Encoding": "br, gzip"})
	if got := gunzip(t, zipped); got != big {
		t.Fatalf("gzip body differs")
	}
	if zipped.Body.Len() != 0 || zipped.Header().Get("ETag") == etag || !strings.Contains(zipped.Header().Get("Vary"), "Accept-Encoding") {
		t.Errorf("gzip answer headers: %v", zipped.Header())
	}
	for _, tag := range []string{etag, zipped.Header().Get("ETag"), `"other", ` + etag, "W/" + etag, "*"} {
		if rec := do("GET", "/big", map[string]string{"If-None-Match": tag, "Accept-Encoding": "gzip"}); rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
			t.Errorf("If-None-Match %s: %d, %d bytes, want 304 and none", tag, rec.Code, rec.Body.Len())
		}
	}
	if rec := do("GET", "/big", map[string]string{"If-None-Match": `"stale"`}); rec.Code != 200 || rec.Body.String() != big {
		t.Errorf("a stale ETag: %d", rec.Code)
	}
	if rec := do("GET", "/big", map[string]string{"Accept-Encoding": "gzip;q=0"}); rec.Header().Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0 got gzip")
	}
	if rec := do("GET", "/small", map[string]string{"Accept-Encoding": "gzip"}); rec.Body.String() != "ok" || rec.Header().Get("Content-Encoding") != "" {
		t.Errorf("small body: %q %v", rec.Body.String(), rec.Header())
	}
	if rec := do("GET", "/missing", map[string]string{"Accept-Encoding": "gzip"}); rec.Code != 404 || rec.Header().Get("ETag") != "" ||
		!strings.Contains(rec.Body.String(), "no such thing") {
		t.Errorf("404: %d %v %q", rec.Code, rec.Header(), rec.Body.String())
	}
	if rec := do("GET", "/flush", map[string]string{"Accept-Encoding": "gzip"}); gunzip(t, rec) != "first"+big || rec.Header().Get("ETag") != "" {
		t.Errorf("flushed response: %v", rec.Header())
	}
	if rec := do("GET", "/nostore", map[string]string{"Accept-Encoding": "gzip"}); rec.Header().Get("ETag") != "" || gunzip(t, rec) != big {
		t.Errorf("no-store response: %v", rec.Header())
	}
	if rec := do("POST", "/post", map[string]string{"Accept-Encoding": "gzip"}); rec.Header().Get("ETag") != "" || rec.Body.String() != big {
		t.Errorf("a POST was touched: %v", rec.Header())
	}
	if rec := do("HEAD", "/big", map[string]string{"Accept-Encoding": "gzip"}); rec.Code != 200 || rec.Header().Get("ETag") != etag {
		t.Errorf("HEAD: %d %v", rec.Code, rec.Header())
	}
}
