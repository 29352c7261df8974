package ui

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Who the browser is (§15). A user signs in with a name and password (or an API token: a
// user's, or api.token) on /ui/login; the session (session.go) then names them, and every
// action the UI sends to the API in process carries them (server.WithPrincipal), so the API's
// permission checks and audit log apply to clicks as to requests. While authentication is off
// everyone is auth.Open, as before users existed.

// principal is who the request acts as (identify put it in the context).
func (u *UI) principal(r *http.Request) auth.Principal {
	if p, ok := server.PrincipalOf(r.Context()); ok {
		return p
	}
	return auth.Anonymous("")
}

// identify finds the request's principal and puts it in its context, for the pages and for the
// API calls the actions make in process. A browser that has not signed in is sent to the
// sign-in page while authentication is on (unless auth.anonymous lets it read).
func (u *UI) identify(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := u.who(r)
		if err != nil {
			var ae interface{ Error() string }
			if errors.As(err, &ae) && errors.Is(err, auth.ErrBadCredentials) {
				u.errorPage(w, r, http.StatusUnauthorized, upperFirst(err.Error())+".")
				return
			}
			u.fail(w, r, err)
			return
		}
		r = r.WithContext(server.WithPrincipal(r.Context(), p))
		if !p.CanAny(vocab.PermRead) && !signInPath(r.URL.Path) {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			if err := u.origins.Check(r); err != nil {
				u.actionError(w, r, http.StatusForbidden, "Refused: the form was sent from another site.")
				return
			}
			u.actionError(w, r, http.StatusUnauthorized, "Sign in first: this server needs it for actions.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// who is the request's principal: a bearer token (scripts reading pages), else the session's
// user (or api.token), else the anonymous caller.
func (u *UI) who(r *http.Request) (auth.Principal, error) {
	a := u.api.Authenticator()
	anon, err := a.Anon(r.Context())
	if err != nil || anon.Kind == auth.KindOpen {
		return anon, err
	}
	if h := r.Header.Get("Authorization"); h != "" {
		secret, _ := strings.CutPrefix(h, "Bearer ")
		return a.Bearer(r.Context(), secret)
	}
	ctx := r.Context()
	name, legacy := u.sessions.GetString(ctx, keyUser), u.sessions.GetBool(ctx, keyLegacy)
	if name == "" && !legacy {
		return anon, nil
	}
	now := u.now()
	seen := time.Unix(u.sessions.GetInt64(ctx, keySeen), 0)
	if now.Sub(seen) > sessionIdle {
		// Idle too long: the session ends; the browser signs in again.
		_ = u.sessions.Destroy(ctx)
		return anon, nil
	}
	if now.Sub(seen) > seenEvery {
		u.sessions.Put(ctx, keySeen, now.Unix())
	}
	if legacy {
		if a.Legacy == "" { // api.token was removed since
			_ = u.sessions.Destroy(ctx)
			return anon, nil
		}
		return auth.Legacy, nil
	}
	p, err := a.User(ctx, name)
	if errors.Is(err, auth.ErrBadCredentials) { // deleted since
		_ = u.sessions.Destroy(ctx)
		return anon, nil
	}
	return p, err
}

// signInPath reports whether path is served to a browser that has not signed in.
func signInPath(path string) bool {
	return path == "/ui/login" || path == "/ui/logout" || strings.HasPrefix(path, "/ui/static/")
}

// signedIn says whether a user (or api.token) signed in.
func (u *UI) signedIn(r *http.Request) bool { return u.principal(r).Named() }

// canAct says whether the principal may act at all (some operator permission): the pages'
// forms are then shown, each kept only when its own permission holds (forms.go).
func (u *UI) canAct(r *http.Request) bool {
	p := u.principal(r)
	return p.Kind == auth.KindOpen || p.Named()
}

// canReadLogs says whether the principal may read attempt logs.
func (u *UI) canReadLogs(r *http.Request) bool { return u.principal(r).CanAny(vocab.PermLogs) }

// authOn says whether the server needs sign-in.
func (u *UI) authOn(r *http.Request) bool { return u.api.AuthEnabled(r.Context()) }

type loginData struct {
	Next    string
	Error   string
	NoAuth  bool // authentication is off: nothing to sign in to
	Name    string
	ByToken bool // the error is the token form's
}

func (u *UI) loginPage(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	if u.signedIn(r) {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	u.render(w, r, http.StatusOK, "login", "Sign in", "", loginData{Next: next, NoAuth: !u.authOn(r)})
}

// clientIP is the request's remote address without its port: the throttle's key.
func clientIP(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// login checks the sign-in form (a name and password, or an API token), throttles failures per
// name and address, renews the session's token and records who signed in.
func (u *UI) login(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.PostFormValue("next"))
	if !u.authOn(r) {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	ctx := r.Context()
	a := u.api.Authenticator()
	name := strings.TrimSpace(r.PostFormValue("name"))
	token := strings.TrimSpace(r.PostFormValue("token"))
	byToken := token != "" && name == ""
	key := name
	if byToken {
		key = "(api token)"
	}
	data := loginData{Next: next, Name: name, ByToken: byToken}
	ip, now := clientIP(r), u.now()
	ev := store.Event{At: now.UTC(), Actor: server.Actor(ctx), Action: vocab.ActionSignIn,
		Params: fmt.Sprintf(`{"user":%q}`, key)}
	if wait := u.throttle.Wait(key, ip, now); wait > 0 {
		ev.Outcome = "throttled"
		u.record(ctx, ev)
		data.Error = fmt.Sprintf("Too many failed sign-ins for this name or from this address: try again in %s.",
			wait.Round(time.Second))
		u.render(w, r, http.StatusTooManyRequests, "login", "Sign in", "", data)
		return
	}
	var p auth.Principal
	var err error
	if byToken {
		p, err = a.Bearer(ctx, token)
	} else {
		p, err = a.Password(ctx, name, r.PostFormValue("password"))
	}
	if err != nil {
		if !errors.Is(err, auth.ErrBadCredentials) {
			u.fail(w, r, err)
			return
		}
		u.throttle.Failed(key, ip, now)
		ev.Outcome = "refused: " + strings.TrimPrefix(err.Error(), auth.ErrBadCredentials.Error()+": ")
		u.record(ctx, ev)
		data.Error = "That name and password do not match."
		if byToken {
			data.Error = "That token is not valid: " + ev.Outcome[len("refused: "):] + "."
		}
		u.render(w, r, http.StatusUnauthorized, "login", "Sign in", "", data)
		return
	}
	// A new token for the signed-in session: a token planted before sign-in is worth nothing.
	if err := u.sessions.RenewToken(ctx); err != nil {
		u.fail(w, r, err)
		return
	}
	if p.Kind == auth.KindLegacy {
		u.sessions.Put(ctx, keyLegacy, true)
	} else {
		u.sessions.Put(ctx, keyUser, p.Name)
	}
	u.sessions.Put(ctx, keySeen, now.Unix())
	ev.Actor, ev.Outcome = p.Name, "ok"
	u.record(ctx, ev)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (u *UI) logout(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if p := u.principal(r); p.Named() {
		u.record(ctx, store.Event{At: time.Now().UTC(), Actor: p.Name, Action: vocab.ActionSignOut, Outcome: "ok"})
	}
	if err := u.sessions.Destroy(ctx); err != nil {
		u.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

// record writes an audit event of the UI's own (sign-in, sign-out); a failure is logged only.
func (u *UI) record(ctx context.Context, e store.Event) {
	if err := u.api.Record(ctx, e); err != nil {
		u.log.Warn("ui: an audit event could not be written", "action", e.Action, "err", err)
	}
}

// safeNext keeps a redirect target inside the UI, so the sign-in form cannot send a user to
// another site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/ui/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") ||
		strings.HasPrefix(next, "/ui/login") || strings.HasPrefix(next, "/ui/logout") {
		return "/ui/"
	}
	return next
}
