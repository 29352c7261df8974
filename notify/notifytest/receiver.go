// Package notifytest is a real HTTP receiver of webhooks and Slack messages for tests: it
// checks each webhook's signature with the secret, keeps what it got with when it got it, and
// signals each delivery on a channel (no polling). It can answer with an error status, hold
// requests, or go down (its port closed) and come back on the same address, to test retries.
package notifytest

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/poolflow/poolflow/notify"
)

// Delivery is one request the receiver took.
type Delivery struct {
	Event     notify.Event
	Key       string // Idempotency-Key
	Signature string
	SignedOK  bool // the signature matches the body under the receiver's secret
	Body      []byte
	Slack     string    // a Slack message's text
	At        time.Time // when it arrived
}

// Receiver is an HTTP server in the test process.
type Receiver struct {
	URL    string
	Secret []byte
	// Got receives every delivery taken (buffered).
	Got chan Delivery

	addr string
	srv  *http.Server

	mu     sync.Mutex
	status int           // 0: 204
	hold   chan struct{} // when set, requests wait until it is closed
	all    []Delivery
	seen   map[string]int
	up     bool
}

// New starts a receiver closed at the test's end; secret "" checks no signature.
func New(t testing.TB, secret string) *Receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{Secret: []byte(secret), Got: make(chan Delivery, 100000), seen: map[string]int{}, addr: ln.Addr().String()}
	r.URL = "http://" + r.addr
	r.serve(ln)
	t.Cleanup(r.Close)
	return r
}

func (r *Receiver) serve(ln net.Listener) {
	r.srv = &http.Server{Handler: http.HandlerFunc(r.handle), ReadHeaderTimeout: 10 * time.Second}
	r.up = true
	go r.srv.Serve(ln) //nolint:errcheck // ends with Close
}

// Close stops the receiver.
func (r *Receiver) Close() {
	r.Release()
	r.mu.Lock()
	srv := r.srv
	r.up = false
	r.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// Down closes the receiver's port: senders get connection refused.
func (r *Receiver) Down() {
	r.mu.Lock()
	srv := r.srv
	r.up = false
	r.mu.Unlock()
	srv.Close()
}

// Up listens again on the same address.
func (r *Receiver) Up(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.serve(ln)
}

// Fail makes the receiver answer status (0: take deliveries again).
func (r *Receiver) Fail(status int) {
	r.mu.Lock()
	r.status = status
	r.mu.Unlock()
}

// Hold makes requests wait (after they are recorded) until Release.
func (r *Receiver) Hold() {
	r.mu.Lock()
	if r.hold == nil {
		r.hold = make(chan struct{})
	}
	r.mu.Unlock()
}

// Release lets held requests answer.
func (r *Receiver) Release() {
	r.mu.Lock()
	if r.hold != nil {
		close(r.hold)
		r.hold = nil
	}
	r.mu.Unlock()
}

func (r *Receiver) handle(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	d := Delivery{Key: req.Header.Get(notify.HeaderIdempotency), Signature: req.Header.Get(notify.HeaderSignature), Body: body,
		At: time.Now()}
	r.mu.Lock()
	status, hold := r.status, r.hold
	r.mu.Unlock()
	if status != 0 {
		http.Error(w, "receiver says no", status)
		return
	}
	if len(r.Secret) > 0 {
		d.SignedOK = notify.Verify(r.Secret, body, d.Signature)
	}
	var probe struct {
		Text *string `json:"text"`
	}
	_ = json.Unmarshal(body, &probe)
	if probe.Text != nil {
		d.Slack = *probe.Text
	} else if err := json.Unmarshal(body, &d.Event); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.all = append(r.all, d)
	r.seen[d.Key]++
	r.mu.Unlock()
	r.Got <- d
	if hold != nil {
		select {
		case <-hold:
		case <-req.Context().Done():
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// All is every delivery taken so far.
func (r *Receiver) All() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.all...)
}

// Seen is how many times each idempotency key arrived.
func (r *Receiver) Seen() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.seen))
	for k, v := range r.seen {
		out[k] = v
	}
	return out
}
