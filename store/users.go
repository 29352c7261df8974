package store

import (
	"fmt"
	"strings"
	"time"

	"github.com/poolflow/poolflow/vocab"
)

// Users, API tokens and sign-in sessions (§15). The store keeps what proves a credential, never
// the credential: a password's bcrypt hash, a token's SHA-256.

// Grant is one role of a user, for every team (Team "") or for one team's DAGs and pools.
type Grant struct {
	Role vocab.Role
	Team string
}

func (g Grant) String() string {
	if g.Team == "" {
		return string(g.Role)
	}
	return string(g.Role) + ":" + g.Team
}

// ParseGrants reads "admin", "operator:finance,viewer" (the stored and the CLI's form).
func ParseGrants(s string) ([]Grant, error) {
	var out []Grant
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		role, team, _ := strings.Cut(f, ":")
		g := Grant{Role: vocab.Role(strings.TrimSpace(role)), Team: strings.TrimSpace(team)}
		if !g.Role.Valid() {
			return nil, fmt.Errorf("unknown role %q (want viewer, operator or admin, optionally :TEAM)", role)
		}
		if strings.Contains(f, ":") && g.Team == "" {
			return nil, fmt.Errorf("role %q: empty team after ':'", f)
		}
		out = append(out, g)
	}
	return out, nil
}

// FormatGrants is the stored form of grants.
func FormatGrants(gs []Grant) string {
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = g.String()
	}
	return strings.Join(parts, ",")
}

// User is a person who signs in and owns API tokens.
type User struct {
	Name         string
	PasswordHash string // bcrypt; "" = no password (API tokens only)
	Roles        []Grant
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Token is an API token without its secret.
type Token struct {
	ID        int64
	User      string
	Name      string
	Hash      string // hex SHA-256 of the secret
	Prefix    string // the secret's first characters, to tell tokens apart
	CreatedAt time.Time
	ExpiresAt time.Time // zero: never
	RevokedAt time.Time // zero: in force
}

// Active reports whether the token is in force at now.
func (t Token) Active(now time.Time) bool {
	return t.RevokedAt.IsZero() && (t.ExpiresAt.IsZero() || now.Before(t.ExpiresAt))
}
