package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// listen serves b's server on a loopback port, as serve does, and returns its address.
func listen(t *testing.T, b *bundle, timeouts Timeouts) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := HTTPServer(b.srv, timeouts)
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	})
	return ln.Addr().String()
}

func send(t *testing.T, method, url, host string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestHostIsChecked: on a loopback listener, a DNS-rebinding name can neither read nor act.
func TestHostIsChecked(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.srv.cfg.AllowedHosts = []string{"poolflow.internal", "box.lan:9000"}
	addr := listen(t, b, Timeouts{})
	_, port, _ := net.SplitHostPort(addr)
	base := "http://" + addr
	for host, want := range map[string]int{
		"":                       http.StatusOK, // 127.0.0.1:port
		"localhost:" + port:      http.StatusOK,
		"LOCALHOST":              http.StatusOK,
		"app.localhost:" + port:  http.StatusOK,
		"[::1]:" + port:          http.StatusOK,
		"poolflow.internal":      http.StatusOK,
		"poolflow.internal:1234": http.StatusOK,
		"box.lan:9000":           http.StatusOK,
		"box.lan:9001":           http.StatusForbidden,
		"evil.example":           http.StatusForbidden,
		"evil.example:" + port:   http.StatusForbidden,
		"127.0.0.1.evil.example": http.StatusForbidden,
		"10.0.0.1:" + port:       http.StatusForbidden,
	} {
		status, body := send(t, http.MethodGet, base+"/api/v1/dags", host, nil, "")
		if status != want {
			t.Errorf("Host %q: %d, want %d: %s", host, status, want, body)
		}
		if want == http.StatusForbidden && !strings.Contains(body, "server.allowed_hosts") {
			t.Errorf("Host %q: the refusal does not say how to allow it: %s", host, body)
		}
	}
	if status, _ := send(t, http.MethodPost, base+"/api/v1/dags/quick/dagRuns", "evil.example",
		map[string]string{"Content-Type": "application/json"}, `{}`); status != http.StatusForbidden {
		t.Errorf("a trigger through a rebinding name: %d", status)
	}
}

// TestMutationsNeedJSONFromTheSameOrigin: without a token, a page of another site cannot act,
// whatever it sends.
func TestMutationsNeedJSONFromTheSameOrigin(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	addr := listen(t, b, Timeouts{})
	url := "http://" + addr + "/api/v1/dags/quick/dagRuns"
	tests := []struct {
		name string
		hdr  map[string]string
		body string
		want int
	}{
		{"text/plain", map[string]string{"Content-Type": "text/plain"}, `{}`, http.StatusUnsupportedMediaType},
		{"form", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, `a=1`, http.StatusUnsupportedMediaType},
		{"multipart", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, "--x--", http.StatusUnsupportedMediaType},
		{"no type", nil, `{}`, http.StatusUnsupportedMediaType},
		{"cross-site", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, `{}`, http.StatusForbidden},
		{"other origin", map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, `{}`, http.StatusForbidden},
		{"other origin, no body", map[string]string{"Origin": "http://evil.example"}, ``, http.StatusForbidden},
		{"same origin", map[string]string{"Content-Type": "application/json", "Origin": "http://" + addr}, `{"dag_run_id": "o1"}`, http.StatusOK},
		{"curl", map[string]string{"Content-Type": "application/json; charset=utf-8"}, `{"dag_run_id": "c1"}`, http.StatusOK},
	}
	for _, tt := range tests {
		status, body := send(t, http.MethodPost, url, "", tt.hdr, tt.body)
		if status != tt.want {
			t.Errorf("%s: %d, want %d: %s", tt.name, status, tt.want, body)
		}
	}
	// Every other mutation is guarded the same way.
	for _, rt := range b.srv.table() {
		if rt.method == http.MethodGet {
			continue
		}
		path := fillPath(rt.path)
		status, _ := send(t, rt.method, "http://"+addr+path, "", map[string]string{"Sec-Fetch-Site": "cross-site"}, "")
		if status != http.StatusForbidden {
			t.Errorf("cross-site %s %s: %d", rt.method, path, status)
		}
	}
}

// TestStalledUploadsAreCut: requests that stop sending their body hold at most
// maxSlowPerClient slots of their client, the others are refused at once (429), and every
// stalled connection is answered 408 and closed at the read timeout.
func TestStalledUploadsAreCut(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	addr := listen(t, b, Timeouts{Read: 500 * time.Millisecond})
	stalled := make([]net.Conn, 0, maxSlowPerClient+8)
	for range maxSlowPerClient + 8 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "POST /api/v1/dags/quick/dagRuns HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", addr)
		stalled = append(stalled, c)
	}
	refused := 0
	for _, c := range stalled {
		// Each connection ends: with a 429 at once, or with the read timeout's answer.
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("a stalled upload was not answered: %v", err)
		}
		if resp.StatusCode == http.StatusTooManyRequests {
			refused++
		} else if resp.StatusCode != http.StatusRequestTimeout {
			t.Errorf("stalled upload: %d", resp.StatusCode)
		}
		resp.Body.Close()
	}
	if refused < 8 {
		t.Errorf("%d stalled uploads answered 429, want at least 8", refused)
	}
	if status, _ := send(t, http.MethodGet, "http://"+addr+"/api/v1/health", "", nil, ""); status != http.StatusOK {
		t.Errorf("after the stalled uploads: %d", status)
	}
}

// TestBodiesAreCappedOnEveryRoute: a body over 1 MiB is 413 (it was 400): read in process, sent
// chunked, or declared by Content-Length, which is answered at once, before any of the body.
func TestBodiesAreCappedOnEveryRoute(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	big := strings.Repeat("x", maxBody+10)
	addr := listen(t, b, Timeouts{})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "PATCH /api/v1/dags/quick HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", addr, 2<<20)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a declared 2 MiB body: %v %v", resp, err)
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v1/rules/test", io.MultiReader(strings.NewReader(`{"attrs": {"dag_id": "`+big), strings.NewReader(`"}}`)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = -1 // chunked
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Errorf("a chunked 1 MiB body: %v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("a chunked body over 1 MiB: %d", resp.StatusCode)
		}
	}
	rec := b.do(t, http.MethodPost, "/api/v1/rules/test", `{"attrs": {"dag_id": "`+big+`"}}`, "")
	if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "larger than") {
		t.Errorf("big body: %d %s", rec.Code, rec.Body.String()[:min(200, rec.Body.Len())])
	}
	hs := HTTPServer(b.srv, Timeouts{})
	if hs.ReadTimeout <= 0 || hs.WriteTimeout <= 0 || hs.IdleTimeout <= 0 || hs.ReadHeaderTimeout <= 0 || hs.MaxHeaderBytes <= 0 {
		t.Errorf("HTTPServer without timeouts: %+v", hs)
	}
}
