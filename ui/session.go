package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"regexp"
	"time"

	"github.com/alexedwards/scs/v2"

	"github.com/poolflow/poolflow/store"
)

// Sign-in sessions (§15) are alexedwards/scs sessions kept in poolflow's store (the sessions
// table, under the SHA-256 of the cookie's token), so every daemon of an installation knows
// them and a restart signs nobody out. The cookie is HttpOnly and SameSite=Strict; sign-in
// renews its token (no session fixation); a session ends sessionLifetime after sign-in
// (absolute) or sessionIdle after its last request.
//
// Idle expiry is kept here rather than with scs's IdleTimeout: that option commits the session
// on every request to move its deadline, and poolflow's pages re-read themselves every 2 s, so it
// would cost one write transaction of the store per open page every 2 s (each an outside change
// every daemon reloads for). Here the last-seen time is written at most once a minute.

const (
	sessionCookie   = "poolflow_session"
	sessionLifetime = 12 * time.Hour
	sessionIdle     = 2 * time.Hour
	seenEvery       = time.Minute // how stale the last-seen time may get before it is written
)

// Keys of a session's data.
const (
	keyUser   = "user"   // the signed-in user's name
	keyLegacy = "legacy" // signed in with api.token
	keySeen   = "seen"   // unix seconds of the last request
	keyCSRF   = "csrf"   // the token every form carries
)

// sessionStore is scs.CtxStore over poolflow's store.
type sessionStore struct{ st store.Store }

func (s sessionStore) Find(token string) ([]byte, bool, error) {
	return s.FindCtx(context.Background(), token)
}
func (s sessionStore) Commit(token string, b []byte, expiry time.Time) error {
	return s.CommitCtx(context.Background(), token, b, expiry)
}
func (s sessionStore) Delete(token string) error { return s.DeleteCtx(context.Background(), token) }

func (s sessionStore) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	b, err := s.st.FindSession(ctx, token, time.Now())
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	return b, err == nil, err
}

func (s sessionStore) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	return s.st.WithTx(ctx, func(tx store.Tx) error { return tx.PutSession(token, b, expiry) })
}

func (s sessionStore) DeleteCtx(ctx context.Context, token string) error {
	return s.st.WithTx(ctx, func(tx store.Tx) error { return tx.DeleteSession(token) })
}

// newSessions is the UI's session manager.
func newSessions(st store.Store, fail func(http.ResponseWriter, *http.Request, error)) *scs.SessionManager {
	sm := scs.New()
	sm.Store = sessionStore{st: st}
	sm.Lifetime = sessionLifetime
	sm.HashTokenInStore = true
	sm.Cookie.Name = sessionCookie
	sm.Cookie.HttpOnly = true
	sm.Cookie.SameSite = http.SameSiteStrictMode
	sm.Cookie.Path = "/"
	sm.Cookie.Persist = true
	sm.ErrorFunc = fail
	return sm
}

// csrfToken is the session's CSRF token, made on first use.
func (u *UI) csrfToken(ctx context.Context) string {
	if tok := u.sessions.GetString(ctx, keyCSRF); tok != "" {
		return tok
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	tok := base64.RawURLEncoding.EncodeToString(b)
	u.sessions.Put(ctx, keyCSRF, tok)
	return tok
}

// csrfValid reports whether a form post carries its session's CSRF token.
func (u *UI) csrfValid(r *http.Request) bool {
	want := u.sessions.GetString(r.Context(), keyCSRF)
	got := r.PostFormValue("csrf")
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// postForm matches the opening tag of every form that posts.
var postForm = regexp.MustCompile(`<form method="post"[^>]*>`)

// withCSRF gives every posting form of a rendered page its hidden CSRF field. It is done on the
// page's HTML, not in each template, so a form added later cannot be forgotten.
func withCSRF(page []byte, token string) []byte {
	field := []byte(`<input type="hidden" name="csrf" value="` + token + `">`)
	return postForm.ReplaceAllFunc(page, func(tag []byte) []byte {
		return append(append([]byte{}, tag...), field...)
	})
}
