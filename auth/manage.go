package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/poolflow/poolflow/store"
	"github.com/poolflow/poolflow/vocab"
)

// The changes to users and tokens, shared by the CLI and the UI's account page: each writes the
// change and its audit event (§10.4) in one transaction. actor is who asked.

// ErrLastAdmin refuses a change that would leave the installation without an admin for every
// team: nobody could manage users or pools any more, and deleting the last user would turn
// authentication off.
var ErrLastAdmin = errors.New("refused: it would leave no admin (create another admin first)")

func event(actor string, action vocab.Action, params any, now time.Time) *store.Event {
	p := ""
	if params != nil {
		if b, err := json.Marshal(params); err == nil && string(b) != "{}" {
			p = string(b)
		}
	}
	return &store.Event{At: now.UTC(), Actor: actor, Action: action, Params: p, Outcome: "ok"}
}

// CreateUser creates user name with a password ("" = none: tokens only) and grants.
func CreateUser(ctx context.Context, st store.Store, actor, name, password string, grants []store.Grant, now time.Time) error {
	if err := CheckName("user", name); err != nil {
		return err
	}
	u := store.User{Name: name, Roles: grants}
	if password != "" {
		h, err := HashPassword(password)
		if err != nil {
			return err
		}
		u.PasswordHash = h
	}
	return st.WithTx(ctx, func(tx store.Tx) error {
		if err := tx.InsertUser(&u, now); err != nil {
			return err
		}
		return tx.InsertEvent(event(actor, vocab.ActionUserCreate, map[string]any{"user": name,
			"roles": store.FormatGrants(grants)}, now))
	})
}

// isAdmin reports whether grants hold admin for every team.
func isAdmin(grants []store.Grant) bool {
	for _, g := range grants {
		if g.Role == vocab.RoleAdmin && g.Team == "" {
			return true
		}
	}
	return false
}

// otherAdmins counts the admins (for every team) besides name.
func otherAdmins(ctx context.Context, st store.Store, name string) (int, error) {
	users, err := st.ListUsers(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, u := range users {
		if u.Name != name && isAdmin(u.Roles) {
			n++
		}
	}
	return n, nil
}

// DeleteUser deletes a user with its tokens; the last admin is refused.
func DeleteUser(ctx context.Context, st store.Store, actor, name string, now time.Time) error {
	u, err := st.GetUser(ctx, name)
	if err != nil {
		return err
	}
	if isAdmin(u.Roles) {
		if n, err := otherAdmins(ctx, st, name); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("delete user %s: %w", name, ErrLastAdmin)
		}
	}
	return st.WithTx(ctx, func(tx store.Tx) error {
		if err := tx.DeleteUser(name); err != nil {
			return err
		}
		return tx.InsertEvent(event(actor, vocab.ActionUserDelete, map[string]string{"user": name}, now))
	})
}

// SetPassword sets a user's password.
func SetPassword(ctx context.Context, st store.Store, actor, name, password string, now time.Time) error {
	h, err := HashPassword(password)
	if err != nil {
		return err
	}
	u, err := st.GetUser(ctx, name)
	if err != nil {
		return err
	}
	return st.WithTx(ctx, func(tx store.Tx) error {
		u.PasswordHash = h
		if err := tx.UpdateUser(&u, now); err != nil {
			return err
		}
		return tx.InsertEvent(event(actor, vocab.ActionUserPass, map[string]string{"user": name}, now))
	})
}

// SetRoles replaces a user's grants; taking admin from the last admin is refused.
func SetRoles(ctx context.Context, st store.Store, actor, name string, grants []store.Grant, now time.Time) error {
	u, err := st.GetUser(ctx, name)
	if err != nil {
		return err
	}
	if isAdmin(u.Roles) && !isAdmin(grants) {
		if n, err := otherAdmins(ctx, st, name); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("set roles of %s: %w", name, ErrLastAdmin)
		}
	}
	return st.WithTx(ctx, func(tx store.Tx) error {
		u.Roles = grants
		if err := tx.UpdateUser(&u, now); err != nil {
			return err
		}
		return tx.InsertEvent(event(actor, vocab.ActionUserRoles, map[string]string{"user": name,
			"roles": store.FormatGrants(grants)}, now))
	})
}

// CreateToken makes an API token for user, named label, expiring after ttl (0 = never), and
// returns it with its secret: the only time the secret exists outside the caller's hands.
func CreateToken(ctx context.Context, st store.Store, actor, user, label string, ttl time.Duration, now time.Time) (store.Token, string, error) {
	if label != "" {
		if err := CheckName("token", label); err != nil {
			return store.Token{}, "", err
		}
	}
	if _, err := st.GetUser(ctx, user); err != nil {
		return store.Token{}, "", err
	}
	secret, hash, prefix := NewToken()
	tk := store.Token{User: user, Name: label, Hash: hash, Prefix: prefix, CreatedAt: store.FromMicros(store.Micros(now))}
	if ttl > 0 {
		tk.ExpiresAt = store.FromMicros(store.Micros(now.Add(ttl)))
	}
	err := st.WithTx(ctx, func(tx store.Tx) error {
		if err := tx.InsertToken(&tk); err != nil {
			return err
		}
		params := map[string]any{"user": user, "token": tk.ID, "name": label}
		if !tk.ExpiresAt.IsZero() {
			params["expires"] = tk.ExpiresAt.Format(time.RFC3339)
		}
		return tx.InsertEvent(event(actor, vocab.ActionTokenCreate, params, now))
	})
	if err != nil {
		return store.Token{}, "", err
	}
	return tk, secret, nil
}

// RevokeToken revokes token id; of user only, unless user is "" (an admin's revocation).
func RevokeToken(ctx context.Context, st store.Store, actor string, id int64, user string, now time.Time) (store.Token, error) {
	var tk store.Token
	err := st.WithTx(ctx, func(tx store.Tx) error {
		var err error
		if tk, err = tx.RevokeToken(id, user, now); err != nil {
			return err
		}
		return tx.InsertEvent(event(actor, vocab.ActionTokenRevoke, map[string]any{"user": tk.User, "token": id}, now))
	})
	return tk, err
}
