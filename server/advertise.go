package server

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// ParseAdvertise checks the address a daemon advertises for its API (serve --advertise) and
// returns it as a base URL: host:port means http://host:port; an http or https URL must have a
// host and a port and nothing after them (no path, query or credentials). An unspecified host
// (0.0.0.0, ::) is refused: no other daemon can dial it.
func ParseAdvertise(s string) (string, error) {
	raw := strings.TrimSpace(s)
	if raw == "" {
		return "", fmt.Errorf("advertise: want host:port or http(s)://host:port, got nothing")
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("advertise: want host:port or http(s)://host:port, got %q", s)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("advertise: scheme %q: want http or https", u.Scheme)
	case u.User != nil:
		return "", fmt.Errorf("advertise: %q carries credentials; the caller's are forwarded instead", s)
	case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return "", fmt.Errorf("advertise: want host:port or http(s)://host:port with nothing after it, got %q", s)
	case u.Hostname() == "":
		return "", fmt.Errorf("advertise: %q has no host", s)
	case u.Port() == "":
		return "", fmt.Errorf("advertise: %q has no port", s)
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsUnspecified() {
		return "", fmt.Errorf("advertise: %s is not an address another daemon can dial; give this host's name or address", u.Hostname())
	}
	return u.Scheme + "://" + u.Host, nil
}

// DefaultAdvertise is the address a daemon advertises when serve is given no --advertise:
// where it listens (listen is the --listen value, bound the address it got, whose port is the
// real one when listen asked for port 0). A host name given to --listen is kept; an unspecified
// address (0.0.0.0, ::, no host) becomes hostname, which the other hosts are expected to resolve
// (Airflow's workers serve their logs under their host name the same way). A loopback address
// stays as it is: on one machine (make run-cluster) every daemon reaches it, and a daemon on
// another host will not try it (loopbackElsewhere) and says why instead.
func DefaultAdvertise(listen string, bound net.Addr, hostname string) string {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		host = ""
	}
	_, port, err := net.SplitHostPort(bound.String())
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = hostname
	} else if ip != nil {
		host = ip.String()
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// LoopbackURL reports whether a base URL's host is a loopback address or name: only a
// process on the same host can reach it.
func LoopbackURL(base string) bool {
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	h := strings.ToLower(u.Hostname())
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
