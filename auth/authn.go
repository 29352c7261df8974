package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// Authenticator tells who a credential belongs to, against the store's users and tokens and
// the configured token.
type Authenticator struct {
	Store store.Reader
	// Legacy is poolflow.yaml's api.token (or POOLFLOW_API_TOKEN): an admin token, "" = none.
	Legacy string
	// Anonymous is the role of a caller without credentials once authentication is on (auth:
	// {anonymous: viewer}); a func so a reload of poolflow.yaml applies at once. nil = none.
	Anonymous func() vocab.Role
	Now       func() time.Time
	Log       *slog.Logger

	on atomic.Bool // authentication was seen on; it stays on (the last admin cannot be deleted)
}

// ErrBadCredentials is a credential that proves nothing: an unknown, expired or revoked token,
// a wrong password or an unknown user. Its message says which where saying so leaks nothing.
var ErrBadCredentials = errors.New("bad credentials")

// Enabled reports whether authentication is on: a token is configured or a user exists.
func (a *Authenticator) Enabled(ctx context.Context) (bool, error) {
	if a.Legacy != "" || a.on.Load() {
		return true, nil
	}
	has, err := a.Store.HasUsers(ctx)
	if err != nil {
		return false, err
	}
	if has && !a.on.Swap(true) && a.Log != nil {
		a.Log.Info("authentication is on: a user exists, so every request needs a session or an API token " +
			"(poolflow users list)")
	}
	return has, nil
}

// Announce logs whether authentication is on, once at start.
func (a *Authenticator) Announce(ctx context.Context) {
	on, err := a.Enabled(ctx)
	if err != nil || a.Log == nil {
		return
	}
	switch {
	case a.Legacy != "":
		a.Log.Info("authentication is on: api.token is configured (an admin token)")
	case on:
		// Enabled logged it.
	default:
		a.Log.Info("authentication is off: no user and no api.token, so anybody who reaches this address may act " +
			"(poolflow users create NAME --role admin turns it on)")
	}
}

// Anon is the principal of a request without credentials.
func (a *Authenticator) Anon(ctx context.Context) (Principal, error) {
	on, err := a.Enabled(ctx)
	if err != nil {
		return Principal{}, err
	}
	if !on {
		return Open, nil
	}
	var r vocab.Role
	if a.Anonymous != nil {
		r = a.Anonymous()
	}
	return Anonymous(r), nil
}

// Bearer is the principal of an API token: the configured one (compared in constant time),
// or a user's, in force and of a user that still exists.
func (a *Authenticator) Bearer(ctx context.Context, secret string) (Principal, error) {
	secret = strings.TrimSpace(secret)
	if secret == "" {
		return Principal{}, fmt.Errorf("%w: empty bearer token", ErrBadCredentials)
	}
	if a.Legacy != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(a.Legacy)) == 1 {
		return Legacy, nil
	}
	hash := HashToken(secret)
	tk, err := a.Store.TokenByHash(ctx, hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Principal{}, fmt.Errorf("%w: unknown token", ErrBadCredentials)
	case err != nil:
		return Principal{}, err
	case subtle.ConstantTimeCompare([]byte(hash), []byte(tk.Hash)) != 1:
		return Principal{}, fmt.Errorf("%w: unknown token", ErrBadCredentials)
	case !tk.RevokedAt.IsZero():
		return Principal{}, fmt.Errorf("%w: token %d was revoked", ErrBadCredentials, tk.ID)
	case !tk.Active(a.now()):
		return Principal{}, fmt.Errorf("%w: token %d expired at %s", ErrBadCredentials, tk.ID,
			tk.ExpiresAt.UTC().Format(time.RFC3339))
	}
	u, err := a.Store.GetUser(ctx, tk.User)
	if errors.Is(err, store.ErrNotFound) {
		return Principal{}, fmt.Errorf("%w: unknown token", ErrBadCredentials)
	}
	if err != nil {
		return Principal{}, err
	}
	return UserPrincipal(u, tk.ID), nil
}

// Password is the principal of a user signing in with a password. An unknown user costs the
// same bcrypt work as a wrong password, and both answer the same.
func (a *Authenticator) Password(ctx context.Context, name, pw string) (Principal, error) {
	u, err := a.Store.GetUser(ctx, name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return Principal{}, err
	}
	if !PasswordMatches(u.PasswordHash, pw) {
		return Principal{}, fmt.Errorf("%w: unknown user or wrong password", ErrBadCredentials)
	}
	return UserPrincipal(u, 0), nil
}

// User is the principal of a signed-in user (a session names one): ErrBadCredentials when the
// user has been deleted since.
func (a *Authenticator) User(ctx context.Context, name string) (Principal, error) {
	u, err := a.Store.GetUser(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return Principal{}, fmt.Errorf("%w: user %s no longer exists", ErrBadCredentials, name)
	}
	if err != nil {
		return Principal{}, err
	}
	return UserPrincipal(u, 0), nil
}

func (a *Authenticator) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}
