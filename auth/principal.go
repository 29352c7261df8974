package auth

import (
	"fmt"
	"slices"
	"strings"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Kind is how a principal was established.
type Kind string

const (
	KindOpen      Kind = "open"      // authentication is off: anybody may do anything
	KindAnonymous Kind = "anonymous" // no credentials, with auth: {anonymous: viewer}
	KindUser      Kind = "user"      // a user, by password (UI session) or API token
	KindLegacy    Kind = "legacy"    // poolflow.yaml's api.token (POOLFLOW_API_TOKEN): an admin
)

// LegacyActor is the name the audit log gives the configured api.token.
const LegacyActor = "api.token"

// Principal is who a request or a command acts as.
type Principal struct {
	Kind   Kind
	Name   string // the user's name; LegacyActor; "" for open and anonymous
	Grants []store.Grant
	// Token is the ID of the API token that authenticated the request, 0 for none.
	Token int64
}

// Open is the principal of every request while authentication is off.
var Open = Principal{Kind: KindOpen}

// Legacy is the principal of the configured token.
var Legacy = Principal{Kind: KindLegacy, Name: LegacyActor, Grants: []store.Grant{{Role: vocab.RoleAdmin}}}

// Anonymous is a caller without credentials whom auth.anonymous gives role r ("" = none).
func Anonymous(r vocab.Role) Principal {
	p := Principal{Kind: KindAnonymous}
	if r.Valid() {
		p.Grants = []store.Grant{{Role: r}}
	}
	return p
}

// UserPrincipal is the principal of user u.
func UserPrincipal(u store.User, token int64) Principal {
	return Principal{Kind: KindUser, Name: u.Name, Grants: u.Roles, Token: token}
}

// Named reports whether the principal is a person or the configured token (the audit log
// names it), not an open or anonymous caller (whom it names by address).
func (p Principal) Named() bool { return p.Name != "" }

// CanAny reports whether p holds perm for some team: the check a route makes before it knows
// its target.
func (p Principal) CanAny(perm vocab.Permission) bool {
	if perm == vocab.PermPublic || p.Kind == KindOpen {
		return true
	}
	if p.Kind == KindAnonymous && perm != vocab.PermRead {
		// auth.anonymous opens the reads, never the logs (they may print secrets) nor an account.
		return false
	}
	for _, g := range p.Grants {
		if g.Role.Allows(perm) {
			return true
		}
	}
	return false
}

// Can reports whether p holds perm on a target of team ("" = a DAG or pool of no team).
// Reading needs no team: an operator of finance sees every DAG (§15). Acting does: a grant
// for every team allows it anywhere; a grant scoped to a team only on that team's target.
func (p Principal) Can(perm vocab.Permission, team string) bool {
	if perm.Role() == vocab.RoleViewer || perm == vocab.PermPublic {
		return p.CanAny(perm)
	}
	if p.Kind == KindOpen {
		return true
	}
	for _, g := range p.Grants {
		if g.Role.Allows(perm) && (g.Team == "" || g.Team == team) {
			return true
		}
	}
	return false
}

// CanPool reports whether p holds perm on a pool that teams may use (none = every team): a
// grant for every team, or one scoped to a team the pool names.
func (p Principal) CanPool(perm vocab.Permission, teams []string) bool {
	if perm.Role() == vocab.RoleViewer || perm == vocab.PermPublic || p.Kind == KindOpen {
		return p.CanAny(perm)
	}
	for _, g := range p.Grants {
		if g.Role.Allows(perm) && (g.Team == "" || slices.Contains(teams, g.Team)) {
			return true
		}
	}
	return false
}

// Roles is the principal's grants as the CLI and the UI show them.
func (p Principal) Roles() string {
	if p.Kind == KindOpen {
		return "everything (authentication is off)"
	}
	if len(p.Grants) == 0 {
		return vocab.NoRole
	}
	return store.FormatGrants(p.Grants)
}

// Denied is the error of a principal refused a permission: a 403 that names the permission
// (401 for a caller without credentials).
type Denied struct {
	Perm      vocab.Permission
	Team      string // the target's team, when the refusal is about it
	Anonymous bool   // no credentials: 401
	Who       string
}

func (d *Denied) Error() string {
	if d.Anonymous {
		return fmt.Sprintf("authentication required: permission %s needs a user (Authorization: Bearer <token>; "+
			"poolflow tokens create)", d.Perm)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "permission %s refused to %s: it needs role %s", d.Perm, d.Who, d.Perm.Role())
	if d.Team != "" {
		fmt.Fprintf(&b, " for team %s", d.Team)
	}
	return b.String()
}

// Check returns nil when p holds perm on a target of team, else a *Denied.
func (p Principal) Check(perm vocab.Permission, team string) error {
	if p.Can(perm, team) {
		return nil
	}
	return p.denied(perm, team)
}

func (p Principal) denied(perm vocab.Permission, team string) *Denied {
	who := p.Name
	if who == "" {
		who = "an anonymous caller"
	}
	d := &Denied{Perm: perm, Who: who, Anonymous: p.Kind == KindAnonymous && !p.CanAny(perm)}
	if p.CanAny(perm) {
		d.Team = team
		if team == "" {
			d.Team = "(none)"
		}
	}
	return d
}

// CheckAny is Check before the target is known.
func (p Principal) CheckAny(perm vocab.Permission) error {
	if p.CanAny(perm) {
		return nil
	}
	return p.denied(perm, "")
}
