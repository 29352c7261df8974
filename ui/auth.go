package ui

import (
	"net/http"
	"net/url"

	"strings"
	"time"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/server"
	"github.com/poolflow/poolflow/vocab"
)

// cookieName holds the API token after sign-in. The cookie is HttpOnly (no script reads it) and
// SameSite=Strict (no other site's page sends it), and it is scoped to /ui/.
const cookieName = "poolflow_token"

// cookieAge is how long a sign-in lasts.
const cookieAge = 12 * time.Hour

// token is the API token the request carries in its cookie, "" without one.
func (u *UI) token(r *http.Request) string {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return ""
	}
	return c.Value
}

// principal is who the request acts as: the owner of the cookie's token, else the anonymous
// caller (everyone, while authentication is off).
func (u *UI) principal(r *http.Request) auth.Principal {
	if p, ok := server.PrincipalOf(r.Context()); ok {
		return p
	}
	return auth.Anonymous("")
}

// identify puts the request's principal in its context, for the pages and for the API calls
// the actions make in process.
func (u *UI) identify(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := u.api.Authenticator()
		p, err := a.Anon(r.Context())
		if tok := u.token(r); tok != "" {
			if tp, terr := a.Bearer(r.Context(), tok); terr == nil {
				p, err = tp, nil
			}
		}
		if err != nil {
			u.fail(w, r, err)
			return
		}
		r = r.WithContext(server.WithPrincipal(r.Context(), p))
		if !p.CanAny(vocab.PermRead) && !signInPath(r.URL.Path) {
			// Authentication is on and nobody signed in: every page but the sign-in form (and
			// its stylesheet) sends the browser there first.
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

// signInPath reports whether path is served to a browser that has not signed in.
func signInPath(path string) bool {
	return path == "/ui/login" || path == "/ui/logout" || strings.HasPrefix(path, "/ui/static/")
}

// signedIn says whether the request carries a valid token.
func (u *UI) signedIn(r *http.Request) bool { return u.principal(r).Named() }

// canAct says whether actions (and logs) are allowed: authentication is off, or the user
// signed in.
func (u *UI) canAct(r *http.Request) bool {
	p := u.principal(r)
	return p.Kind == auth.KindOpen || p.Named()
}

// authOn says whether the server needs sign-in for actions.
func (u *UI) authOn(r *http.Request) bool { return u.api.AuthEnabled(r.Context()) }

type loginData struct {
	Next    string
	Error   string
	NoToken bool
}

func (u *UI) loginPage(w http.ResponseWriter, r *http.Request) {
	u.render(w, r, http.StatusOK, "login", "Sign in", "",
		loginData{Next: safeNext(r.URL.Query().Get("next")), NoToken: !u.authOn(r)})
}

// login checks the token of the sign-in form and stores it in the cookie.
func (u *UI) login(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.PostFormValue("next"))
	if !u.authOn(r) {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	tok := strings.TrimSpace(r.PostFormValue("token"))
	if _, err := u.api.Authenticator().Bearer(r.Context(), tok); err != nil {
		u.render(w, r, http.StatusUnauthorized, "login", "Sign in", "",
			loginData{Next: next, Error: "That token is not the one this server is configured with."})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: tok, Path: "/ui/", MaxAge: int(cookieAge / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (u *UI) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/ui/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

// safeNext keeps a redirect target inside the UI, so the sign-in form cannot send a user to
// another site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/ui/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/ui/"
	}
	return next
}
