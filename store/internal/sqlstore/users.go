package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/poolflow/poolflow/store"
)

// Users, API tokens and sign-in sessions (§15).

const userCols = `name, password_hash, roles, created_at, updated_at`

func scanUser(sc interface{ Scan(...any) error }) (store.User, error) {
	var u store.User
	var roles string
	var created, updated int64
	if err := sc.Scan(&u.Name, &u.PasswordHash, &roles, &created, &updated); err != nil {
		return u, err
	}
	u.CreatedAt, u.UpdatedAt = store.FromMicros(created), store.FromMicros(updated)
	// A role this binary does not know (a newer one wrote it) is left out: it grants nothing.
	for _, f := range strings.Split(roles, ",") {
		if gs, err := store.ParseGrants(f); err == nil {
			u.Roles = append(u.Roles, gs...)
		}
	}
	return u, nil
}

// HasUsers says whether any user exists.
func (s *DB) HasUsers(ctx context.Context) (bool, error) {
	var n int
	err := s.queryRow(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM users LIMIT 1) u`).Scan(&n)
	return n > 0, unavailable(err)
}

// ListUsers lists every user by name.
func (s *DB) ListUsers(ctx context.Context) ([]store.User, error) {
	rows, err := s.query(ctx, `SELECT `+userCols+` FROM users ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.User
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, unavailable(err)
		}
		out = append(out, u)
	}
	return out, unavailable(rows.Err())
}

// GetUser reads one user.
func (s *DB) GetUser(ctx context.Context, name string) (store.User, error) {
	u, err := scanUser(s.queryRow(ctx, `SELECT `+userCols+` FROM users WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return u, fmt.Errorf("%w: no user %s", store.ErrNotFound, name)
	}
	return u, unavailable(err)
}

const tokenCols = `id, user_name, name, hash, prefix, created_at, expires_at, revoked_at`

func scanToken(sc interface{ Scan(...any) error }) (store.Token, error) {
	var tk store.Token
	var created int64
	var expires, revoked sql.NullInt64
	if err := sc.Scan(&tk.ID, &tk.User, &tk.Name, &tk.Hash, &tk.Prefix, &created, &expires, &revoked); err != nil {
		return tk, err
	}
	tk.CreatedAt, tk.ExpiresAt, tk.RevokedAt = store.FromMicros(created), timeOf(expires), timeOf(revoked)
	return tk, nil
}

// TokenByHash reads the token whose secret hashes to hash.
func (s *DB) TokenByHash(ctx context.Context, hash string) (store.Token, error) {
	tk, err := scanToken(s.queryRow(ctx, `SELECT `+tokenCols+` FROM api_tokens WHERE hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return tk, fmt.Errorf("%w: no such token", store.ErrNotFound)
	}
	return tk, unavailable(err)
}

// ListTokens lists user's tokens (everyone's for ""), newest first.
func (s *DB) ListTokens(ctx context.Context, user string) ([]store.Token, error) {
	q, args := `SELECT `+tokenCols+` FROM api_tokens ORDER BY id DESC`, []any(nil)
	if user != "" {
		q, args = `SELECT `+tokenCols+` FROM api_tokens WHERE user_name = ? ORDER BY id DESC`, []any{user}
	}
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Token
	for rows.Next() {
		tk, err := scanToken(rows)
		if err != nil {
			return nil, unavailable(err)
		}
		out = append(out, tk)
	}
	return out, unavailable(rows.Err())
}

// FindSession reads a session's data unless it expired at now.
func (s *DB) FindSession(ctx context.Context, token string, now time.Time) ([]byte, error) {
	var data []byte
	err := s.queryRow(ctx, `SELECT data FROM sessions WHERE token = ? AND expiry > ?`, token, store.Micros(now)).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	return data, unavailable(err)
}

// InsertUser creates a user; a name taken is ErrConflict.
func (t *Tx) InsertUser(u *store.User, now time.Time) error {
	_, ok, err := t.insertID(`INSERT INTO users (name, password_hash, roles, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (name) DO NOTHING RETURNING 1`, u.Name, u.PasswordHash, store.FormatGrants(u.Roles), store.Micros(now),
		store.Micros(now))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: user %s exists", store.ErrConflict, u.Name)
	}
	u.CreatedAt, u.UpdatedAt = now.UTC(), now.UTC()
	return nil
}

// UpdateUser writes an existing user's password hash and roles.
func (t *Tx) UpdateUser(u *store.User, now time.Time) error {
	res, err := t.exec(`UPDATE users SET password_hash = ?, roles = ?, updated_at = ? WHERE name = ?`, u.PasswordHash,
		store.FormatGrants(u.Roles), store.Micros(now), u.Name)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: no user %s", store.ErrNotFound, u.Name)
	}
	u.UpdatedAt = now.UTC()
	return nil
}

// DeleteUser deletes a user and (ON DELETE CASCADE) its tokens.
func (t *Tx) DeleteUser(name string) error {
	res, err := t.exec(`DELETE FROM users WHERE name = ?`, name)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: no user %s", store.ErrNotFound, name)
	}
	return nil
}

// InsertToken stores a token (its hash) and sets its ID.
func (t *Tx) InsertToken(tk *store.Token) error {
	id, _, err := t.insertID(`INSERT INTO api_tokens (user_name, name, hash, prefix, created_at, expires_at, revoked_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`, tk.User, tk.Name, tk.Hash, tk.Prefix, store.Micros(tk.CreatedAt),
		nullMicros(tk.ExpiresAt), nullMicros(tk.RevokedAt))
	if err != nil {
		return err
	}
	tk.ID = id
	return nil
}

// DeleteExpiredTokens deletes the tokens named name that expired at or before now.
func (t *Tx) DeleteExpiredTokens(name string, now time.Time) (int, error) {
	res, err := t.exec(`DELETE FROM api_tokens WHERE name = ? AND expires_at IS NOT NULL AND expires_at <= ?`, name, store.Micros(now))
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// RevokeToken revokes token id (of user, unless user is ""); revoking a revoked token keeps its
// first revocation.
func (t *Tx) RevokeToken(id int64, user string, now time.Time) (store.Token, error) {
	tk, err := scanToken(t.queryRow(`SELECT `+tokenCols+` FROM api_tokens WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) || (err == nil && user != "" && tk.User != user) {
		return store.Token{}, fmt.Errorf("%w: no token %d", store.ErrNotFound, id)
	}
	if err != nil {
		return tk, unavailable(err)
	}
	if !tk.RevokedAt.IsZero() {
		return tk, nil
	}
	if _, err := t.exec(`UPDATE api_tokens SET revoked_at = ? WHERE id = ?`, store.Micros(now), id); err != nil {
		return tk, err
	}
	tk.RevokedAt = store.FromMicros(store.Micros(now))
	return tk, nil
}

// PutSession writes a session.
func (t *Tx) PutSession(token string, data []byte, expiry time.Time) error {
	_, err := t.exec(`INSERT INTO sessions (token, data, expiry) VALUES (?, ?, ?)
		ON CONFLICT (token) DO UPDATE SET data = excluded.data, expiry = excluded.expiry`, token, data, store.Micros(expiry))
	return err
}

// DeleteSession removes a session; an unknown one is no error.
func (t *Tx) DeleteSession(token string) error {
	_, err := t.exec(`DELETE FROM sessions WHERE token = ?`, token)
	return err
}

// PruneSessions removes the sessions expired at now.
func (t *Tx) PruneSessions(now time.Time) (int, error) {
	res, err := t.exec(`DELETE FROM sessions WHERE expiry <= ?`, store.Micros(now))
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
