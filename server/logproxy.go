package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/poolflow/poolflow/store"
)

// Reading a log from the daemon that holds it. The request goes to the address that daemon's
// owner row advertises, never to one a request names, on the path of the attempt built from
// stored ids; it carries the caller's credentials (the API's Authorization header, the UI's
// sign-in token) and nothing else of the caller's but the range it asks for. The answer is
// streamed as it comes. Redirects are not followed, and the time is bounded.

const (
	// forwardedHeader marks a request one daemon sends another: the receiver never forwards it.
	forwardedHeader = "X-Poolflow-Forwarded-By"
	// logDaemonHeader names the daemon whose state folder the log was read from.
	logDaemonHeader = "X-Poolflow-Log-Daemon"
	// logDial, logAnswer and logExchange bound connecting, waiting for the answer's header, and
	// the whole exchange (the server's own write timeout).
	logDial     = 3 * time.Second
	logAnswer   = 10 * time.Second
	logExchange = 60 * time.Second
	// logBackoff: after a daemon could not be reached, requests for its logs answer at once
	// for this long instead of each waiting for the dial timeout (a task page reads every
	// attempt's log, and re-reads them while it is open).
	logBackoff = 3 * time.Second
)

// logClient is the HTTP client of the log reads, with what it remembers of unreachable daemons.
type logClient struct {
	http *http.Client
	mu   sync.Mutex
	down map[string]downAt // by base URL
}

type downAt struct {
	at  time.Time
	err error
}

func newLogClient() *logClient {
	tr := &http.Transport{
		Proxy:                 nil, // daemons talk to each other directly, whatever HTTP_PROXY says
		DialContext:           (&net.Dialer{Timeout: logDial, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   logDial,
		ResponseHeaderTimeout: logAnswer,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true, // the bytes and their ranges are the file's
	}
	return &logClient{
		http: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
		down: map[string]downAt{},
	}
}

func (c *logClient) close() { c.http.CloseIdleConnections() }

// logURL is the URL of attempt a's log on the daemon whose API is base.
func logURL(base string, a attemptRef) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	seg := []string{"api", "v1", "dags", a.run.DAGID, "dagRuns", a.run.RunID, "taskInstances", a.taskID, "logs", strconv.Itoa(a.try)}
	esc := make([]string, len(seg))
	for i, s := range seg {
		esc[i] = url.PathEscape(s)
	}
	u.Path = "/" + strings.Join(seg, "/")
	u.RawPath = "/" + strings.Join(esc, "/")
	return u.String(), nil
}

// fetchLog asks daemon o for attempt a's log with the given headers and the caller's
// credentials (auth: an Authorization header's value, "" none). The caller closes the body of a
// response; an error is one of the API's, naming the daemon, its host and its address.
func (s *Server) fetchLog(ctx context.Context, o store.Owner, a attemptRef, auth string, hdr http.Header) (*http.Response, error) {
	c := s.logs
	c.mu.Lock()
	d, ok := c.down[o.API]
	c.mu.Unlock()
	if ok && time.Since(d.at) < logBackoff {
		return nil, s.unreachable(o, a, d.err, time.Since(d.at))
	}
	target, err := logURL(o.API, a)
	if err != nil {
		return nil, &apiError{status: http.StatusBadGateway, detail: fmt.Sprintf(
			"the log of %s is on daemon %s (host %s), whose advertised address %q is not a URL", a, o.ID, orUnknown(o.Host), o.API)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set(forwardedHeader, orNone(s.selfID()))
	req.Header.Set("User-Agent", "poolflow")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, ctx.Err() // the caller went away
		}
		c.mu.Lock()
		c.down[o.API] = downAt{at: time.Now(), err: err}
		c.mu.Unlock()
		return nil, s.unreachable(o, a, err, 0)
	}
	c.mu.Lock()
	delete(c.down, o.API)
	c.mu.Unlock()
	return resp, nil
}

// unreachable is the answer when daemon o could not be asked: 504 when it did not answer in
// time, else 502.
func (s *Server) unreachable(o store.Owner, a attemptRef, err error, ago time.Duration) error {
	status, what := http.StatusBadGateway, "cannot be reached"
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		status, what = http.StatusGatewayTimeout, "does not answer"
	}
	when := ""
	if ago > 0 {
		when = fmt.Sprintf(" (tried %s ago)", ago.Round(time.Millisecond))
	}
	return &apiError{status: status, detail: fmt.Sprintf("the log of %s is on host %s (daemon %s), whose API at %s %s%s: %v",
		a, orUnknown(o.Host), o.ID, o.API, what, when, err)}
}

// remoteRefusal turns another daemon's error answer into this daemon's: its 401, 403 and 404
// keep their status (the caller's credentials, the log not there), anything else is a 502. The
// detail names the daemon and carries its own.
func remoteRefusal(o store.Owner, a attemptRef, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	detail := strings.TrimSpace(string(body))
	var p problem
	if strings.Contains(resp.Header.Get("Content-Type"), "json") && json.Unmarshal(body, &p) == nil && p.Detail != "" {
		detail = p.Detail
	}
	status := resp.StatusCode
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
	default:
		status = http.StatusBadGateway
	}
	return &apiError{status: status, detail: fmt.Sprintf("daemon %s (host %s), which holds the log of %s, answered %d: %s",
		o.ID, orUnknown(o.Host), a, resp.StatusCode, detail)}
}
