package ui

import (
	"net/http"
	"strings"
	"time"
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

// signedIn says whether the request carries a valid token.
func (u *UI) signedIn(r *http.Request) bool { return u.api.CheckToken(u.token(r)) }

// canAct says whether actions (and logs) are allowed: no token is configured, or the cookie
// holds it.
func (u *UI) canAct(r *http.Request) bool { return !u.api.TokenRequired() || u.signedIn(r) }

type loginData struct {
	Next    string
	Error   string
	NoToken bool
}

func (u *UI) loginPage(w http.ResponseWriter, r *http.Request) {
	u.render(w, r, http.StatusOK, "login", "Sign in", "",
		loginData{Next: safeNext(r.URL.Query().Get("next")), NoToken: !u.api.TokenRequired()})
}

// login checks the token of the sign-in form and stores it in the cookie.
func (u *UI) login(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.PostFormValue("next"))
	if !u.api.TokenRequired() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	tok := strings.TrimSpace(r.PostFormValue("token"))
	if !u.api.CheckToken(tok) {
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
