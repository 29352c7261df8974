package server

import (
	"net"
	"strings"
	"testing"
)

func TestParseAdvertise(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"h1:8080":                  "http://h1:8080",
		" 10.0.0.7:80 ":            "http://10.0.0.7:80",
		"http://h1:8080/":          "http://h1:8080",
		"https://logs.example:443": "https://logs.example:443",
		"[fe80::1]:8080":           "http://[fe80::1]:8080",
		"127.0.0.1:8081":           "http://127.0.0.1:8081",
	} {
		if got, err := ParseAdvertise(in); err != nil || got != want {
			t.Errorf("ParseAdvertise(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, why := range map[string]string{
		"":                   "got nothing",
		"h1":                 "no port",
		"ftp://h1:21":        `scheme "ftp"`,
		"http://u:p@h1:8080": "credentials",
		"http://h1:8080/api": "nothing after it",
		"http://h1:8080?x=1": "nothing after it",
		"0.0.0.0:8080":       "not an address another daemon can dial",
		"[::]:8080":          "not an address another daemon can dial",
		"http://:8080":       "no host",
	} {
		if got, err := ParseAdvertise(in); err == nil || !strings.Contains(err.Error(), why) || !strings.HasPrefix(err.Error(), "advertise: ") {
			t.Errorf("ParseAdvertise(%q) = %q, %v; want an error saying %q", in, got, err, why)
		}
	}
}

func TestDefaultAdvertise(t *testing.T) {
	t.Parallel()
	bound := func(s string) net.Addr {
		a, err := net.ResolveTCPAddr("tcp", s)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, c := range []struct{ listen, bound, want string }{
		{"127.0.0.1:8081", "127.0.0.1:8081", "http://127.0.0.1:8081"}, // make run-cluster: every daemon on this host
		{"127.0.0.1:0", "127.0.0.1:41234", "http://127.0.0.1:41234"},  // the port the listener got
		{"localhost:8080", "127.0.0.1:8080", "http://localhost:8080"},
		{"0.0.0.0:8080", "0.0.0.0:8080", "http://web-3:8080"}, // the host's name, as Airflow's log server
		{":8080", "[::]:8080", "http://web-3:8080"},
		{"[::]:8080", "[::]:8080", "http://web-3:8080"},
		{"10.0.0.7:8080", "10.0.0.7:8080", "http://10.0.0.7:8080"},
	} {
		if got := DefaultAdvertise(c.listen, bound(c.bound), "web-3"); got != c.want {
			t.Errorf("DefaultAdvertise(%q, %s) = %q, want %q", c.listen, c.bound, got, c.want)
		}
		if _, err := ParseAdvertise(DefaultAdvertise(c.listen, bound(c.bound), "web-3")); err != nil {
			t.Errorf("the default for %q does not parse: %v", c.listen, err)
		}
	}
	for base, want := range map[string]bool{"http://127.0.0.1:1": true, "http://localhost:1": true, "http://[::1]:1": true,
		"http://web-3:1": false, "http://10.0.0.7:1": false} {
		if LoopbackURL(base) != want {
			t.Errorf("LoopbackURL(%q) = %v", base, !want)
		}
	}
}
