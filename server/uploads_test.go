package server

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// slowUpload sends a POST whose 1,000-byte body trickles in a byte every 100 ms, on its own
// connection, and returns the status it is answered with (0 when none came).
func slowUpload(t *testing.T, addr string) int {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		return 0
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /api/v1/dags/quick/dagRuns HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", addr)
	answered := make(chan int, 1)
	go func() {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case code := <-answered:
			return code
		case <-tick.C:
			if _, err := c.Write([]byte(" ")); err != nil {
				return <-answered
			}
		}
	}
}

// TestSlowUploadsDoNotHoldWritesOff: 32 clients trickling their bodies in (any local process can
// open them) do not make the other clients' mutations answer 503: a body is read whole before the
// route runs, only bodies still arriving after a moment count against their client's bound, and
// a client over it is refused at once (429); the rest are cut at the read deadline.
func TestSlowUploadsDoNotHoldWritesOff(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = HTTPServer(b.srv, Timeouts{Read: 3 * time.Second})
	ts.Start()
	defer ts.Close()
	addr := ts.Listener.Addr().String()
	codes := make(chan int, 32)
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes <- slowUpload(t, addr)
		}()
	}
	// Once the server has taken every upload for a slow one, it has refused at once those past
	// the client's bound; the others hold their slots and trickle on.
	refused, cut := 0, 0
	timeout := time.After(20 * time.Second)
	for refused < 32-maxSlowPerClient {
		select {
		case code := <-codes:
			if code != http.StatusTooManyRequests {
				t.Fatalf("a slow upload was answered %d before the others were refused", code)
			}
			refused++
		case <-timeout:
			t.Fatalf("%d slow uploads refused, want %d", refused, 32-maxSlowPerClient)
		}
	}
	start := time.Now()
	status, body := send(t, http.MethodPatch, ts.URL+"/api/v1/dags/quick", "", map[string]string{"Content-Type": "application/json"},
		`{"is_paused": true}`)
	if status != http.StatusOK {
		t.Errorf("a mutation while 32 uploads trickle: %d %s", status, body)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the mutation took %v", took)
	}
	wg.Wait()
	close(codes)
	for code := range codes {
		switch code {
		case http.StatusTooManyRequests:
			refused++
		case http.StatusRequestTimeout:
			cut++
		default:
			t.Errorf("a slow upload was answered %d", code)
		}
	}
	if cut > maxSlowPerClient || refused+cut != 32 {
		t.Errorf("%d slow uploads refused, %d cut at the deadline; want at most %d cut", refused, cut, maxSlowPerClient)
	}
	if !strings.Contains(body, `"is_paused": true`) && !strings.Contains(body, `"is_paused":true`) {
		t.Errorf("the mutation's answer: %s", body)
	}
}
