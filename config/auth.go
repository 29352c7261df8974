package config

import (
	"github.com/poolflow/poolflow/vocab"
)

// Auth is poolflow.yaml's auth section (§15).
type Auth struct {
	// Required (auth.required): serve refuses to start while the installation has no user and
	// no api.token, rather than serve everything open.
	Required bool
	// Anonymous (auth.anonymous: viewer) is the role of a caller without credentials once
	// authentication is on; "" = none (every request then needs a session or a token). Only
	// viewer is accepted: anonymous writes would make authentication pointless.
	Anonymous vocab.Role
}

func (r *reader) auth(f field, c *Config) {
	for _, g := range r.fields(f.value, f.path, f.at, "required", "anonymous") {
		switch g.key {
		case "required":
			c.Auth.Required, _ = r.bool(g)
		case "anonymous":
			v, ok := r.str(g)
			switch {
			case !ok:
			case v == "" || v == vocab.NoRole:
				c.Auth.Anonymous = ""
			case vocab.Role(v) == vocab.RoleViewer:
				c.Auth.Anonymous = vocab.RoleViewer
			default:
				r.fail(g.valuePos(), g.path, "invalid value %q (want viewer or none: anonymous callers may only read)", v)
			}
		}
	}
}
