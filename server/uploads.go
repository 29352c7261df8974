package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Request bodies are read whole by guard, before the route runs: no handler reads the network
// while it holds the store's writers' lock or waits on the scheduler loop, whatever a client
// sends. A body arrives within bodyTimeout (the http.Server's read timeout, when shorter, cuts
// it first) and is at most maxBody bytes (413 beyond, at once when Content-Length says so).
//
// A body that has not arrived within fastBody is a slow one: it needs one of its client's
// maxSlowPerClient slots (client = remote IP) and one of maxSlow in all, or it is refused at once
// with 429. Bodies that come with their headers, as every small JSON body does, take no slot, so
// a process trickling 32 uploads holds up only its own slow ones, not everyone's mutations (a
// single cap of 32 bodies at once, held for the whole request, did: every other mutation answered
// 503 for up to the 30-second read timeout). The bytes buffered at once are bounded by
// maxBodyBytes, counted as they arrive: a trickle holds almost nothing.
const (
	fastBody         = 100 * time.Millisecond
	bodyTimeout      = 10 * time.Second
	maxSlowPerClient = 8
	maxSlow          = 128
	maxBodyBytes     = 64 << 20
)

// uploads counts the slow bodies being read, per client and in all, and the bytes buffered.
type uploads struct {
	mu       sync.Mutex
	byClient map[string]int
	slow     int
	bytes    atomic.Int64
}

// take reserves a slow slot for client.
func (u *uploads) take(client string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.slow >= maxSlow || u.byClient[client] >= maxSlowPerClient {
		return false
	}
	if u.byClient == nil {
		u.byClient = map[string]int{}
	}
	u.byClient[client]++
	u.slow++
	return true
}

func (u *uploads) give(client string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.slow--
	if u.byClient[client]--; u.byClient[client] <= 0 {
		delete(u.byClient, client)
	}
}

// clientOf is the remote IP of a request (its whole RemoteAddr when that has no port).
func clientOf(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// errBudget is a body refused because the bodies being read hold maxBodyBytes already.
var errBudget = errors.New("too many request bodies are being read at once")

// counted charges the bytes read to the budget; over it, the read fails.
type counted struct {
	r     io.Reader
	u     *uploads
	taken int64
}

func (c *counted) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.taken += int64(n)
		if c.u.bytes.Add(int64(n)) > maxBodyBytes {
			return n, errBudget
		}
	}
	return n, err
}

// readBody reads r's body whole into memory and puts it back as r.Body; release gives back its
// share of the budget once the request is served. On failure it has answered the request.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	if r.ContentLength > maxBody {
		w.Header().Set("Connection", "close")
		writeProblem(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body: larger than %d bytes (1 MiB)", maxBody))
		return nil, false
	}
	client := clientOf(r)
	rc := http.NewResponseController(w)
	// The timers cut a read that must stop by giving the connection a deadline in the past; mu
	// orders them with the read's end, so a slot taken is always given back.
	var mu sync.Mutex
	var done, slot, refused, late bool
	cut := func(flag *bool) {
		*flag = true
		_ = rc.SetReadDeadline(time.Now())
	}
	fast := time.AfterFunc(fastBody, func() {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return
		}
		if slot = s.bodies.take(client); !slot {
			cut(&refused)
		}
	})
	deadline := time.AfterFunc(bodyTimeout, func() {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			cut(&late)
		}
	})
	body := &counted{r: http.MaxBytesReader(w, r.Body, maxBody), u: &s.bodies}
	data, err := io.ReadAll(body)
	fast.Stop()
	deadline.Stop()
	mu.Lock()
	done = true
	if slot {
		s.bodies.give(client)
	}
	mu.Unlock()
	release = func() { s.bodies.bytes.Add(-body.taken) }
	if err == nil {
		r.Body = io.NopCloser(bytes.NewReader(data))
		return release, true
	}
	release()
	w.Header().Set("Connection", "close")
	var tooBig *http.MaxBytesError
	switch {
	case refused:
		w.Header().Set("Retry-After", "1")
		writeProblem(w, http.StatusTooManyRequests, fmt.Sprintf(
			"too many slow uploads from %s at once: send the body with the request, or try again", client))
	case errors.Is(err, errBudget):
		w.Header().Set("Retry-After", "1")
		writeProblem(w, http.StatusServiceUnavailable, errBudget.Error()+"; try again")
	case errors.As(err, &tooBig):
		writeProblem(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body: larger than %d bytes (1 MiB)", maxBody))
	case late || errors.Is(err, os.ErrDeadlineExceeded):
		writeProblem(w, http.StatusRequestTimeout, "body: not received in time")
	default:
		writeProblem(w, http.StatusBadRequest, fmt.Sprintf("body: could not be read: %v", err))
	}
	return nil, false
}
