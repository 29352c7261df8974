package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// TokenPrefix starts every API token, so a leaked one is recognisable (secret scanners) and
// told apart from today's configured token.
const TokenPrefix = "pf_"

// NewToken makes an API token's secret (32 random bytes), the hash the store keeps and the
// prefix a listing shows.
func NewToken() (secret, hash, prefix string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics rather than return weak bytes)
	secret = TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	return secret, HashToken(secret), secret[:len(TokenPrefix)+6]
}

// HashToken is the stored form of a token's secret. A token has 256 random bits, so one
// SHA-256 is enough (a slow hash guards guessable passwords, not random keys) and a request's
// token is found by its hash with an index.
func HashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// ParseExpiry reads --expires: a Go duration (720h), a number of days (90d) or "never" ("" too).
func ParseExpiry(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "never" {
		return 0, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("expires %q: want a number of days (90d), a duration (720h) or never", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("expires %q: want a number of days (90d), a duration (720h) or never", s)
	}
	return d, nil
}

// CheckName says why a user or token name is refused: names appear in the audit log, URLs and
// the CLI's columns, so they are short and printable, without spaces, commas or colons (which
// separate roles and teams).
func CheckName(what, name string) error {
	if name == "" {
		return fmt.Errorf("%s name is empty", what)
	}
	if len(name) > 64 {
		return fmt.Errorf("%s name %q is too long (at most 64 bytes)", what, name)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) || strings.ContainsRune(",:/", r) {
			return fmt.Errorf("%s name %q: %q is not allowed (no spaces, commas, colons or slashes)", what, name, r)
		}
	}
	return nil
}
