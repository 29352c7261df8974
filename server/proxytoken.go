package server

import (
	"context"
	"sync"
	"time"

	"github.com/poolflow/poolflow/auth"
	"github.com/poolflow/poolflow/store"
)

// The log of an attempt another daemon ran is read from that daemon (logproxy.go) with the
// caller's credentials. A UI user signed in with a password has no token to send along, so the
// server makes one for them: a token of theirs named proxyTokenName that expires after
// proxyTokenLife, reused for half that, so the other daemon checks the same user's permission.
// Nobody revokes these tokens, so the transaction that makes one deletes every user's expired
// ones: the table holds at most a couple per user who read a log lately.

const (
	proxyTokenName = "ui-log-proxy"
	proxyTokenLife = 10 * time.Minute
)

type proxyTokens struct {
	mu     sync.Mutex
	tokens map[string]proxyToken // by user
}

type proxyToken struct {
	secret string
	until  time.Time
}

// proxyCredential is the bearer token a read from another daemon sends for ctx's principal:
// the configured token for auth.Legacy, a short-lived token of the user for a user, "" when
// none is needed (authentication is off) or none can be had.
func (s *Server) proxyCredential(ctx context.Context) string {
	p, ok := PrincipalOf(ctx)
	if !ok {
		return ""
	}
	switch {
	case p.Kind == auth.KindLegacy:
		return s.cfg.Token
	case p.Kind != auth.KindUser:
		return ""
	}
	now := s.now()
	s.proxy.mu.Lock()
	defer s.proxy.mu.Unlock()
	if tk, ok := s.proxy.tokens[p.Name]; ok && now.Before(tk.until) {
		return tk.secret
	}
	secret, hash, prefix := auth.NewToken()
	tk := store.Token{User: p.Name, Name: proxyTokenName, Hash: hash, Prefix: prefix, CreatedAt: now.UTC(),
		ExpiresAt: now.Add(proxyTokenLife).UTC()}
	err := s.writer.WithTx(ctx, func(tx store.Tx) error {
		if _, err := tx.DeleteExpiredTokens(proxyTokenName, now); err != nil {
			return err
		}
		return tx.InsertToken(&tk)
	})
	if err != nil {
		s.log.Warn("api: no token to read a log from another daemon with", "user", p.Name, "err", err)
		return ""
	}
	if s.proxy.tokens == nil {
		s.proxy.tokens = map[string]proxyToken{}
	}
	s.proxy.tokens[p.Name] = proxyToken{secret: secret, until: now.Add(proxyTokenLife / 2)}
	return secret
}
