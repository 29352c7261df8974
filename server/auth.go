package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/vocab"
)

// Who may call what (§15). Every route of the route table (server.go) names the permission it
// needs; authenticate finds the request's principal (a bearer token, or the one the UI put in
// the context of its in-process call, or the anonymous one) and authorize checks the route's
// permission against it: 401 for a caller without credentials, 403 naming the permission for
// one whose roles lack it. A handler whose target belongs to a team checks the team itself
// (allowed). While the installation has no user and no configured token the principal is
// auth.Open and everything is allowed, as before users existed.

type principalKey struct{}

// WithPrincipal is ctx carrying p: the UI gives its in-process calls (Call, Command) the signed-in
// user this way. Nothing outside the process can set it.
func WithPrincipal(ctx context.Context, p auth.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalOf is the principal ctx carries, and whether it carries one.
func PrincipalOf(ctx context.Context) (auth.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(auth.Principal)
	return p, ok
}

// queryTokens are query parameters that look like credentials: refused, since URLs end up in
// access logs, proxies and browser history.
var queryTokens = []string{"token", "access_token", "api_token", "api_key", "apikey", "bearer"}

// credentialInQuery names the credential-like query parameter of r, "" when it has none.
func credentialInQuery(r *http.Request) string {
	q := r.URL.Query()
	for _, k := range queryTokens {
		if q.Has(k) {
			return k
		}
	}
	return ""
}

// Authenticate is the principal of a request from outside: auth.Open while authentication is
// off, else its bearer token's, else the anonymous one. A token in the query string, and a
// token that proves nothing, are errors (400, 401).
func (s *Server) Authenticate(r *http.Request) (auth.Principal, error) {
	if k := credentialInQuery(r); k != "" {
		return auth.Principal{}, badRequest(k, "credentials are refused in the query string (URLs are logged); "+
			"send the header Authorization: Bearer <token>")
	}
	on, err := s.authn.Enabled(r.Context())
	if err != nil {
		return auth.Principal{}, err
	}
	if !on {
		// As before users existed: everything is open, whatever the request carries.
		return auth.Open, nil
	}
	if h := r.Header.Get("Authorization"); h != "" {
		secret, ok := strings.CutPrefix(h, "Bearer ")
		if !ok {
			return auth.Principal{}, &apiError{status: http.StatusUnauthorized,
				detail: "Authorization: want Bearer <token>"}
		}
		p, err := s.authn.Bearer(r.Context(), secret)
		if errors.Is(err, auth.ErrBadCredentials) {
			return auth.Principal{}, &apiError{status: http.StatusUnauthorized, detail: err.Error()}
		}
		return p, err
	}
	return s.authn.Anon(r.Context())
}

// authenticate puts the request's principal in its context, unless an in-process caller put
// one there already.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := PrincipalOf(r.Context()); ok {
			next.ServeHTTP(w, r)
			return
		}
		p, err := s.Authenticate(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}

// authorize guards a route with its permission.
func (s *Server) authorize(perm vocab.Permission, next http.Handler) http.Handler {
	if perm == vocab.PermPublic {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := principal(r.Context()).CheckAny(perm); err != nil {
			s.fail(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorizeDAG guards a route whose path names a DAG ({dag_id}): the permission must hold on
// that DAG's team (§15: an operator of finance acts only on finance's DAGs; reads need no team).
func (s *Server) authorizeDAG(perm vocab.Permission, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.allowed(r.Context(), perm, s.dagTeam(pathVar(r, "dag_id"))); err != nil {
			s.fail(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// dagTeam is a loaded DAG's team; "" for a DAG of no team or one not loaded now.
func (s *Server) dagTeam(id string) string {
	if d := s.findDAG(id); d != nil {
		return d.Team
	}
	return ""
}

// DAGTeam is dagTeam for the UI (which hides the buttons of other teams' DAGs).
func (s *Server) DAGTeam(id string) string { return s.dagTeam(id) }

// allowed checks perm on a target of team, once the handler knows the target (§15: an
// operator of finance acts only on finance's DAGs).
func (s *Server) allowed(ctx context.Context, perm vocab.Permission, team string) error {
	return principal(ctx).Check(perm, team)
}

// principal is ctx's principal; a context without one (a call that bypassed the router) is
// anonymous without a role, which may do nothing.
func principal(ctx context.Context) auth.Principal {
	if p, ok := PrincipalOf(ctx); ok {
		return p
	}
	return auth.Anonymous("")
}

// Authenticator is the server's: the UI signs users in with it.
func (s *Server) Authenticator() *auth.Authenticator { return s.authn }

// AuthEnabled reports whether authentication is on (a user exists or a token is configured).
func (s *Server) AuthEnabled(ctx context.Context) bool {
	on, err := s.authn.Enabled(ctx)
	return on || err != nil // the store unreadable: assume on, never open by accident
}
