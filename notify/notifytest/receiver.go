// Package notifytest is a real HTTP receiver of webhooks and Slack messages for tests: it
// checks each webhook's signature with the secret, keeps what it got, and signals each
// delivery on a channel (no polling). It can answer with an error status or hang up, to test
// retries.
package notifytest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/poolflow/poolflow/notify"
)

// Delivery is one request the receiver took.
type Delivery struct {
	Event     notify.Event
	Key       string // Idempotency-Key
	Signature string
	SignedOK  bool // the signature matches the body under the receiver's secret
	Body      []byte
	Slack     string // a Slack message's text
}

// Receiver is an HTTP server in the test process.
type Receiver struct {
	*httptest.Server
	Secret []byte
	// Got receives every delivery taken (buffered).
	Got chan Delivery

	mu     sync.Mutex
	status int // 0: 204
	all    []Delivery
	seen   map[string]int
}

// New starts a receiver closed at the test's end; secret "" checks no signature.
func New(t testing.TB, secret string) *Receiver {
	r := &Receiver{Secret: []byte(secret), Got: make(chan Delivery, 10000), seen: map[string]int{}}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

// Fail makes the receiver answer status (0: take deliveries again).
func (r *Receiver) Fail(status int) {
	r.mu.Lock()
	r.status = status
	r.mu.Unlock()
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	status := r.status
	r.mu.Unlock()
	if status != 0 {
		http.Error(w, "receiver says no", status)
		return
	}
	d := Delivery{Key: req.Header.Get(notify.HeaderIdempotency), Signature: req.Header.Get(notify.HeaderSignature), Body: body}
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
	w.WriteHeader(http.StatusNoContent)
	r.Got <- d
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
