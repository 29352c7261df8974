package ui

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The account page (§15): who is signed in, with which roles, and their API tokens, which they
// create (the secret is shown once, on the page that answers the creation) and revoke.

type tokenRow struct {
	ID        int64
	Name      string
	Prefix    string
	State     vocab.TokenState
	CreatedAt time.Time
	ExpiresAt *time.Time
}

type accountData struct {
	User, Roles string
	Tokens      []tokenRow
	NewSecret   string
	NewID       int64
	Error       string
}

// accountUser is the signed-in user whose account the request may manage; false (and an answer
// written) otherwise.
func (u *UI) accountUser(w http.ResponseWriter, r *http.Request) (auth.Principal, bool) {
	p := u.principal(r)
	if p.Kind != auth.KindUser {
		msg := "Sign in as a user to manage API tokens."
		if p.Kind == auth.KindLegacy {
			msg = "You signed in with api.token, which has no account: sign in as a user to manage API tokens."
		}
		if p.Kind == auth.KindOpen {
			msg = "This server has no users yet: create one with poolflow users create NAME --role admin."
		}
		u.errorPage(w, r, http.StatusForbidden, msg)
		return p, false
	}
	return p, true
}

func (u *UI) accountPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := u.accountUser(w, r); !ok {
		return
	}
	u.renderAccount(w, r, http.StatusOK, accountData{})
}

func (u *UI) renderAccount(w http.ResponseWriter, r *http.Request, status int, d accountData) {
	p := u.principal(r)
	tokens, err := u.api.Store().ListTokens(r.Context(), p.Name)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	now := time.Now()
	d.User, d.Roles = p.Name, p.Roles()
	for _, tk := range tokens {
		row := tokenRow{ID: tk.ID, Name: tk.Name, Prefix: tk.Prefix, State: vocab.TokenActive, CreatedAt: tk.CreatedAt}
		if !tk.ExpiresAt.IsZero() {
			t := tk.ExpiresAt
			row.ExpiresAt = &t
			if !now.Before(t) {
				row.State = vocab.TokenExpired
			}
		}
		if !tk.RevokedAt.IsZero() {
			row.State = vocab.TokenRevoked
		}
		d.Tokens = append(d.Tokens, row)
	}
	u.render(w, r, status, "account", "Account", "", d)
}

// createToken makes a token for the signed-in user and shows its secret once.
func (u *UI) createToken(w http.ResponseWriter, r *http.Request) {
	p, ok := u.accountUser(w, r)
	if !ok {
		return
	}
	ttl, err := auth.ParseExpiry(r.PostFormValue("expires"))
	if err != nil {
		u.renderAccount(w, r, http.StatusBadRequest, accountData{Error: upperFirst(err.Error()) + "."})
		return
	}
	tk, secret, err := auth.CreateToken(r.Context(), u.api.SessionStore(), p.Name, p.Name, strings.TrimSpace(r.PostFormValue("name")),
		ttl, time.Now())
	if err != nil {
		if status, _ := u.api.StatusOf(err); status >= 500 {
			u.fail(w, r, err)
			return
		}
		u.renderAccount(w, r, http.StatusBadRequest, accountData{Error: upperFirst(err.Error()) + "."})
		return
	}
	// The page that shows a secret must not be cached or kept in history as a link.
	u.renderAccount(w, r, http.StatusOK, accountData{NewSecret: secret, NewID: tk.ID})
}

// revokeToken revokes one of the signed-in user's tokens.
func (u *UI) revokeToken(w http.ResponseWriter, r *http.Request) {
	p, ok := u.accountUser(w, r)
	if !ok {
		return
	}
	id, err := strconv.ParseInt(mux.Vars(r)["id"], 10, 64)
	if err != nil {
		u.errorPage(w, r, http.StatusNotFound, "There is no such token.")
		return
	}
	if _, err := auth.RevokeToken(r.Context(), u.api.SessionStore(), p.Name, id, p.Name, time.Now()); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			u.errorPage(w, r, http.StatusNotFound, "You have no token "+strconv.FormatInt(id, 10)+".")
			return
		}
		u.fail(w, r, err)
		return
	}
	u.done(w, r, http.StatusOK, "Token "+strconv.FormatInt(id, 10)+" revoked.", "/ui/account")
}
