package server

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"
)

// The HTTP surface is hardened against an attacker on the same host (a web page the user opens,
// a DNS-rebinding name pointing at 127.0.0.1), for the API and the UI together:
//   - Host: when the server is bound to loopback (or server.allowed_hosts is set), a request
//     whose Host is not a loopback name or an allowed host is refused, so a rebinding name
//     cannot read answers (conf, logs) or act.
//   - Mutations take only application/json bodies, which a cross-origin page cannot send without
//     a CORS preflight that is never answered, and they are refused when the browser says they
//     come from another origin (Sec-Fetch-Site, Origin: net/http's CrossOriginProtection). So
//     without a token, mutations come only from the same origin or from non-browser clients.
//   - Every request body is read whole before the route runs, capped at maxBody, with a deadline
//     and a bound on the slow ones per client (uploads.go), and the http.Server built by
//     HTTPServer has read, write and idle timeouts.

// Timeouts of the http.Server; zero fields take the defaults of HTTPServer.
type Timeouts struct {
	ReadHeader time.Duration // default 10s
	Read       time.Duration // the whole request, body included; default 30s
	Write      time.Duration // default 60s (a manual start waits for its first pass)
	Idle       time.Duration // keep-alive; default 120s
}

// HTTPServer is the http.Server poolflow serves h with: header, body, write and idle timeouts
// and a 64 KiB cap on headers.
func HTTPServer(h http.Handler, t Timeouts) *http.Server {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.ReadHeader, 10*time.Second)
	def(&t.Read, 30*time.Second)
	def(&t.Write, 60*time.Second)
	def(&t.Idle, 120*time.Second)
	return &http.Server{Handler: h, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read, WriteTimeout: t.Write,
		IdleTimeout: t.Idle, MaxHeaderBytes: 64 << 10}
}

// guard wraps every route (the UI's too): the Host check, then the body, read whole (uploads.go).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r) {
			writeProblem(w, http.StatusForbidden, fmt.Sprintf(
				"host %q is not allowed: use 127.0.0.1 or localhost, or add it to server.allowed_hosts in poolflow.yaml", r.Host))
			return
		}
		if hasBody(r) {
			release, ok := s.readBody(w, r)
			if !ok {
				return
			}
			defer release()
		}
		next.ServeHTTP(w, r)
	})
}

func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// hostAllowed checks the Host header against the address the connection came in on: on a
// loopback listener only loopback names (localhost, *.localhost, loopback IPs) and the
// configured server.allowed_hosts are served. Other listeners check only when allowed_hosts is
// set, and then also accept the listener's own IP.
func (s *Server) hostAllowed(r *http.Request) bool {
	var local net.IP
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok {
		local = a.IP
	}
	loopback := local != nil && local.IsLoopback()
	if !loopback && len(s.cfg.AllowedHosts) == 0 {
		return true
	}
	name, port := splitHost(r.Host)
	for _, a := range s.cfg.AllowedHosts {
		an, ap := splitHost(a)
		if strings.EqualFold(an, name) && (ap == "" || ap == port) {
			return true
		}
	}
	if loopback {
		if name == "localhost" || strings.HasSuffix(name, ".localhost") {
			return true
		}
		ip := net.ParseIP(name)
		return ip != nil && ip.IsLoopback()
	}
	ip := net.ParseIP(name)
	return ip != nil && local != nil && ip.Equal(local)
}

// splitHost splits "name:port", "[v6]:port", "name" and "v6" into a lower-case name and a port.
func splitHost(h string) (string, string) {
	if name, port, err := net.SplitHostPort(h); err == nil {
		return strings.ToLower(name), port
	}
	return strings.ToLower(strings.Trim(h, "[]")), ""
}

// mutation guards a route that changes state: a browser's cross-origin request is refused
// (403), and a body must be JSON (415).
func (s *Server) mutation(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.origins.Check(r); err != nil {
			writeProblem(w, http.StatusForbidden, "cross-origin request refused: "+
				"mutations are accepted only from this server's own pages or from clients that are not browsers")
			return
		}
		if hasBody(r) && !isJSON(r.Header.Get("Content-Type")) {
			writeProblem(w, http.StatusUnsupportedMediaType, "Content-Type: the body must be application/json")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}
