package config

import (
	"fmt"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Notifier types (§13).
const (
	NotifierWebhook = "webhook" // HTTP POST of the event as JSON, signed when a secret is set
	NotifierSlack   = "slack"   // a Slack incoming webhook: a readable message
	NotifierEmail   = "email"   // SMTP with STARTTLS and auth
	NotifierCommand = "command" // argv, the event as JSON on stdin; no shell
)

// DefaultNotifierTimeout bounds one try of a notifier that sets no timeout.
const DefaultNotifierTimeout = 10 * time.Second

// Notifier is one entry of notifiers: in poolflow.yaml (§13), its secrets read from the
// environment or a file when the file is read.
type Notifier struct {
	Name string
	Type string
	// URL is a webhook's or a Slack incoming webhook's address. A Slack URL is a secret (its
	// path is the credential), so it is kept as one; a webhook's is not.
	URL Secret
	// Secret signs a webhook's body (HMAC-SHA256, X-Poolflow-Signature); "" signs nothing.
	Secret Secret
	// Headers are added to a webhook's request.
	Headers map[string]string
	// Command is a command notifier's argv.
	Command []string
	// SMTP, From and To are an email notifier's.
	SMTP     SMTP
	From     string
	To       []string
	Timeout  time.Duration // one try; DefaultNotifierTimeout when not set
	Line     int           // where it is defined in poolflow.yaml
	Column   int
	SourceOf map[string]string // where each secret came from, for display: "env HOOK_SECRET", "file /run/x"
}

// SMTP is how an email notifier reaches its server.
type SMTP struct {
	Host     string
	Port     int // default 587
	Username string
	Password Secret
	// StartTLS: "" or "required" (the default: refuse to send in clear), "opportunistic", or
	// "none" (a local relay); TLS: the connection is TLS from the start (port 465).
	StartTLS string
	TLS      bool
}

// StartTLS values.
const (
	StartTLSRequired      = "required"
	StartTLSOpportunistic = "opportunistic"
	StartTLSNone          = "none"
)

// Delivery tunes how notifications are sent (notifications: in poolflow.yaml).
type Delivery struct {
	// Concurrency is how many notifications a daemon sends at once (default 4).
	Concurrency int
	// MaxTries bounds the tries of one notification (default 8); RetryDelay is the wait after
	// the first failed try (default 5s), doubled after each, up to MaxRetryDelay (default 5m).
	MaxTries                  int
	RetryDelay, MaxRetryDelay time.Duration
}

// Delivery defaults.
const (
	DefaultDeliveryConcurrency = 4
	DefaultDeliveryMaxTries    = 8
	DefaultDeliveryRetryDelay  = 5 * time.Second
	DefaultDeliveryMaxDelay    = 5 * time.Minute
)

// WithDefaults fills what is not set.
func (d Delivery) WithDefaults() Delivery {
	if d.Concurrency <= 0 {
		d.Concurrency = DefaultDeliveryConcurrency
	}
	if d.MaxTries <= 0 {
		d.MaxTries = DefaultDeliveryMaxTries
	}
	if d.RetryDelay <= 0 {
		d.RetryDelay = DefaultDeliveryRetryDelay
	}
	if d.MaxRetryDelay <= 0 {
		d.MaxRetryDelay = DefaultDeliveryMaxDelay
	}
	return d
}

// Notifier returns the notifier named name.
func (c *Config) Notifier(name string) (*Notifier, bool) {
	for i := range c.Notifiers {
		if c.Notifiers[i].Name == name {
			return &c.Notifiers[i], true
		}
	}
	return nil, false
}

// NotifierNames lists the notifiers, by name.
func (c *Config) NotifierNames() []string {
	out := make([]string, 0, len(c.Notifiers))
	for _, n := range c.Notifiers {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out
}

// Secret is a value that must never be shown: it prints, formats and marshals as "[secret]".
// Reveal gives the value to the code that sends it.
type Secret string

const redacted = "[secret]"

// Reveal is the secret's value.
func (s Secret) Reveal() string { return string(s) }

func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString keeps %#v from printing it.
func (s Secret) GoString() string { return `config.Secret("` + s.String() + `")` }

// Format keeps every verb from printing it.
func (s Secret) Format(f fmt.State, verb rune) { fmt.Fprint(f, s.String()) }

// MarshalJSON keeps it out of JSON.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + s.String() + `"`), nil }

// MarshalText keeps it out of every text encoding.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// notifiers reads the notifiers block: a mapping of names to notifiers.
func (r *reader) notifiers(f field, c *Config) {
	for _, g := range r.fields(f.value, f.path, f.at) {
		if err := checkNotifierName(g.key); err != "" {
			r.fail(g.at, g.path, "%s", err)
			continue
		}
		if n, ok := r.notifier(g); ok {
			c.Notifiers = append(c.Notifiers, n)
		}
	}
}

func checkNotifierName(name string) string {
	if name == "" {
		return "empty notifier name"
	}
	for _, ch := range name {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '-' || ch == '.') {
			return fmt.Sprintf("invalid notifier name %q (letters, digits, '_', '-' and '.')", name)
		}
	}
	return ""
}

// notifier reads one notifier; ok is false when it has a problem (each is reported).
func (r *reader) notifier(f field) (Notifier, bool) {
	n := Notifier{Name: f.key, Line: f.at.line, Column: f.at.col, Timeout: DefaultNotifierTimeout, SourceOf: map[string]string{}}
	before := len(r.errs)
	fs := r.fields(f.value, f.path, f.at, "type", "url", "url_env", "url_file", "secret", "secret_env", "secret_file",
		"headers", "command", "smtp", "from", "to", "timeout")
	byKey := map[string]field{}
	for _, g := range fs {
		byKey[g.key] = g
	}
	t, ok := byKey["type"]
	if !ok {
		r.fail(f.at, f.path, "missing type (want webhook, slack, email or command)")
		return n, false
	}
	n.Type, _ = r.str(t)
	allowed := map[string][]string{
		NotifierWebhook: {"url", "url_env", "url_file", "secret", "secret_env", "secret_file", "headers", "timeout"},
		NotifierSlack:   {"url", "url_env", "url_file", "timeout"},
		NotifierEmail:   {"smtp", "from", "to", "timeout"},
		NotifierCommand: {"command", "timeout"},
	}
	keys, known := allowed[n.Type]
	if !known {
		r.fail(t.valuePos(), t.path, "invalid value %q (want webhook, slack, email or command)", n.Type)
		return n, false
	}
	for _, g := range fs {
		if g.key != "type" && !slices.Contains(keys, g.key) {
			r.fail(g.at, g.path, "not a field of a %s notifier (want one of type, %s)", n.Type, strings.Join(keys, ", "))
		}
	}
	if g, ok := byKey["timeout"]; ok {
		if d, ok := r.duration(g); ok {
			if d <= 0 {
				r.fail(g.valuePos(), g.path, "invalid value %s (want more than 0)", d)
			}
			n.Timeout = d
		}
	}
	switch n.Type {
	case NotifierWebhook, NotifierSlack:
		u, ok := r.secret(f, byKey, "url", "url", &n, n.Type == NotifierSlack)
		if ok && u == "" {
			r.fail(f.at, f.path, "missing url (url, url_env or url_file)")
		} else if ok {
			if msg := checkHTTPURL(u); msg != "" {
				at := f.at
				for _, k := range []string{"url", "url_env", "url_file"} {
					if g, ok := byKey[k]; ok {
						at = g.valuePos()
					}
				}
				// The URL of a Slack notifier is its credential: named, never shown.
				shown := fmt.Sprintf(" %q", u)
				if n.Type == NotifierSlack || n.SourceOf["url"] != "" {
					shown = ""
				}
				r.fail(at, f.path+".url", "invalid URL%s: %s", shown, msg)
			}
			n.URL = Secret(u)
		}
		if n.Type == NotifierWebhook {
			s, _ := r.secret(f, byKey, "secret", "secret", &n, true)
			n.Secret = Secret(s)
			if g, ok := byKey["headers"]; ok {
				n.Headers = r.headers(g)
			}
		}
	case NotifierCommand:
		g, ok := byKey["command"]
		if !ok {
			r.fail(f.at, f.path, "missing command (an argv list such as [/usr/local/bin/page, --team, ops])")
			break
		}
		n.Command = r.argv(g)
	case NotifierEmail:
		r.email(f, byKey, &n)
	}
	return n, len(r.errs) == before
}

// secret reads key (a literal, refused when mustHide), key_env or key_file: at most one.
func (r *reader) secret(f field, byKey map[string]field, key, what string, n *Notifier, mustHide bool) (string, bool) {
	var set []field
	for _, k := range []string{key, key + "_env", key + "_file"} {
		if g, ok := byKey[k]; ok {
			set = append(set, g)
		}
	}
	switch len(set) {
	case 0:
		return "", true
	case 1:
	default:
		r.fail(set[1].at, set[1].path, "%s and %s both set; use one", set[0].key, set[1].key)
		return "", false
	}
	g := set[0]
	v, ok := r.str(g)
	if !ok {
		return "", false
	}
	switch g.key {
	case key:
		if mustHide {
			r.fail(g.at, g.path, "a %s is not written in poolflow.yaml; put it in the environment (%s_env) or a file (%s_file)",
				what, key, key)
			return "", false
		}
		return v, true
	case key + "_env":
		if v == "" {
			r.fail(g.valuePos(), g.path, "missing the name of an environment variable")
			return "", false
		}
		val := os.Getenv(v)
		if val == "" {
			r.fail(g.valuePos(), g.path, "notifier %s: environment variable %s is not set", n.Name, v)
			return "", false
		}
		n.SourceOf[key] = "env " + v
		return val, true
	default:
		if v == "" {
			r.fail(g.valuePos(), g.path, "missing a file name")
			return "", false
		}
		path := v
		if !filepath.IsAbs(path) && r.file != "" {
			path = filepath.Join(filepath.Dir(r.file), path)
		}
		b, err := readSecretFile(path)
		if err != nil {
			r.fail(g.valuePos(), g.path, "notifier %s: %v", n.Name, err)
			return "", false
		}
		n.SourceOf[key] = "file " + path
		return b, true
	}
}

// readSecretFile reads a secret from a file (a mounted Kubernetes or Docker secret): at most
// 64 KiB, the trailing newline dropped.
func readSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read secret file: %w", err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10+1)
	k, _ := f.Read(buf)
	if k > 64<<10 {
		return "", fmt.Errorf("secret file %s is over 64 KiB", path)
	}
	s := strings.TrimRight(string(buf[:k]), "\r\n")
	if s == "" {
		return "", fmt.Errorf("secret file %s is empty", path)
	}
	return s, nil
}

func checkHTTPURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "does not parse"
	case u.Scheme != "http" && u.Scheme != "https":
		return "want an http:// or https:// address"
	case u.Host == "":
		return "no host"
	}
	return ""
}

func (r *reader) headers(f field) map[string]string {
	out := map[string]string{}
	for _, g := range r.fields(f.value, f.path, f.at) {
		v, ok := r.str(g)
		if !ok {
			continue
		}
		if strings.ContainsAny(g.key, " :\r\n") || strings.ContainsAny(v, "\r\n") {
			r.fail(g.at, g.path, "invalid header")
			continue
		}
		out[g.key] = v
	}
	return out
}

// argv reads a non-empty list of strings.
func (r *reader) argv(f field) []string {
	if f.value == nil || f.value.Kind != yaml.SequenceNode || len(f.value.Content) == 0 {
		r.bad(f, "an argv list such as [/usr/local/bin/page, --team, ops] (no shell)")
		return nil
	}
	var out []string
	for i, item := range f.value.Content {
		v, ok := r.str(field{path: fmt.Sprintf("%s[%d]", f.path, i), at: position(item, f.at), value: r.unwrap(item)})
		if ok {
			out = append(out, v)
		}
	}
	if len(out) > 0 && out[0] == "" {
		r.fail(f.valuePos(), f.path, "empty program name")
	}
	return out
}

func (r *reader) email(f field, byKey map[string]field, n *Notifier) {
	n.SMTP = SMTP{Port: 587, StartTLS: StartTLSRequired}
	g, ok := byKey["smtp"]
	if !ok {
		r.fail(f.at, f.path, "missing smtp (host, port, username, password_env, starttls)")
	} else {
		sub := map[string]field{}
		for _, h := range r.fields(g.value, g.path, g.at, "host", "port", "username", "password", "password_env",
			"password_file", "starttls", "tls") {
			sub[h.key] = h
			switch h.key {
			case "host":
				n.SMTP.Host, _ = r.str(h)
			case "port":
				if p, ok := r.int(h, "a port number"); ok {
					if p < 1 || p > 65535 {
						r.fail(h.valuePos(), h.path, "invalid port %d", p)
					}
					n.SMTP.Port = p
				}
			case "username":
				n.SMTP.Username, _ = r.str(h)
			case "starttls":
				if tag(h.value) == "!!bool" {
					b, _ := r.bool(h)
					n.SMTP.StartTLS = map[bool]string{true: StartTLSRequired, false: StartTLSNone}[b]
					break
				}
				v, _ := r.str(h)
				switch v {
				case StartTLSRequired, StartTLSOpportunistic, StartTLSNone:
					n.SMTP.StartTLS = v
				default:
					r.fail(h.valuePos(), h.path, "invalid value %q (want true, false, required, opportunistic or none)", v)
				}
			case "tls":
				n.SMTP.TLS, _ = r.bool(h)
			}
		}
		if n.SMTP.Host == "" {
			r.fail(g.at, g.path+".host", "missing (the SMTP server's host name)")
		}
		pw, ok := r.secret(g, sub, "password", "password", n, true)
		if ok {
			n.SMTP.Password = Secret(pw)
		}
		if n.SMTP.Username != "" && pw == "" && ok {
			r.fail(g.at, g.path, "username %s without password_env or password_file", n.SMTP.Username)
		}
	}
	if g, ok := byKey["from"]; ok {
		n.From, _ = r.str(g)
		if _, err := mail.ParseAddress(n.From); err != nil {
			r.fail(g.valuePos(), g.path, "invalid address %q", n.From)
		}
	} else {
		r.fail(f.at, f.path, "missing from (the sender's address)")
	}
	g, ok = byKey["to"]
	if !ok {
		r.fail(f.at, f.path, "missing to (a list of addresses)")
		return
	}
	if g.value != nil && g.value.Kind == yaml.ScalarNode {
		v, _ := r.str(g)
		n.To = []string{v}
	} else {
		n.To = r.argv(g)
	}
	for _, a := range n.To {
		if _, err := mail.ParseAddress(a); err != nil {
			r.fail(g.valuePos(), g.path, "invalid address %q", a)
		}
	}
}

// delivery reads notifications: how they are sent.
func (r *reader) delivery(f field, c *Config) {
	for _, g := range r.fields(f.value, f.path, f.at, "concurrency", "max_tries", "retry_delay", "max_retry_delay") {
		switch g.key {
		case "concurrency", "max_tries":
			v, ok := r.int(g, "1 or more")
			if ok && v < 1 {
				r.fail(g.valuePos(), g.path, "invalid value %d (want 1 or more)", v)
			}
			if g.key == "concurrency" {
				c.Delivery.Concurrency = v
			} else {
				c.Delivery.MaxTries = v
			}
		case "retry_delay":
			c.Delivery.RetryDelay, _ = r.duration(g)
		case "max_retry_delay":
			c.Delivery.MaxRetryDelay, _ = r.duration(g)
		}
	}
}
