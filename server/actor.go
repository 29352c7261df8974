package server

import (
	"context"
	"net"
	"net/http"
)

// Who asked (§10.4): the actor of an API request is its user's name (§15), or "api.token" for
// poolflow.yaml's token; without either (authentication off, or an anonymous reader) it is
// "api:<remote address>", the client's IP without its port (one client, many connections). The
// UI's actions reach the API's handlers through Call, in process, with the browser's request
// context: the router keeps the remote address of every request it serves (the UI's pages
// included) in the context, and Call gives it to the request it builds, so a click is recorded
// with the browser's address as a request would be.

type clientKey struct{}

// keepClient puts the request's remote address in its context, unless it carries one already.
func keepClient(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Context().Value(clientKey{}).(string); !ok && r.RemoteAddr != "" {
			r = r.WithContext(context.WithValue(r.Context(), clientKey{}, r.RemoteAddr))
		}
		next.ServeHTTP(w, r)
	})
}

// remoteOf is the remote address kept in ctx, "" when none.
func remoteOf(ctx context.Context) string {
	addr, _ := ctx.Value(clientKey{}).(string)
	return addr
}

// Actor is the actor an audit event records for a request with this context: the user (or
// auth.LegacyActor for the configured token) when one is known, else api:<address>.
func Actor(ctx context.Context) string {
	if p, ok := PrincipalOf(ctx); ok && p.Named() {
		return p.Name
	}
	addr := remoteOf(ctx)
	if host, _, err := net.SplitHostPort(addr); err == nil {
		addr = host
	}
	if addr == "" {
		addr = "in-process"
	}
	return "api:" + addr
}

func actorOf(r *http.Request) string { return Actor(r.Context()) }
