package auth

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"
)

// Cost is bcrypt's cost for new hashes (2^12 rounds, about a quarter of a second on a small
// machine: slow for a guesser, unnoticed at sign-in). Tests lower it.
var Cost = 12

// Password bounds: bcrypt reads at most 72 bytes, so a longer password would be cut silently.
const (
	MinPassword = 8
	MaxPassword = 72
)

// CheckPasswordRules says why a new password is refused, nil when it is fine.
func CheckPasswordRules(pw string) error {
	switch {
	case utf8.RuneCountInString(pw) < MinPassword:
		return fmt.Errorf("password too short: at least %d characters", MinPassword)
	case len(pw) > MaxPassword:
		return fmt.Errorf("password too long: at most %d bytes (bcrypt reads no more)", MaxPassword)
	}
	return nil
}

// HashPassword hashes a new password with bcrypt after CheckPasswordRules.
func HashPassword(pw string) (string, error) {
	if err := CheckPasswordRules(pw); err != nil {
		return "", err
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), Cost)
	if err != nil {
		return "", err
	}
	return string(h), nil
}

// dummyHash is compared against when the user is unknown or has no password, so a sign-in takes
// as long for a name that does not exist as for a wrong password (no user enumeration by time).
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("poolflow-no-such-user"), bcrypt.MinCost)

// PasswordMatches reports whether pw is the password hash was made from; an empty hash (no
// password set) matches nothing, after the same work.
func PasswordMatches(hash, pw string) bool {
	if hash == "" {
		_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(pw))
		return false
	}
	err := bcrypt.CompareHashAndPassword([]byte(hash), []byte(pw))
	if err != nil && !errors.Is(err, bcrypt.ErrMismatchedHashAndPassword) {
		return false // a malformed hash: nobody gets in with it
	}
	return err == nil
}
