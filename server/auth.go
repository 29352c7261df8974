package server

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// requireToken guards a route with the bearer token when one is configured. The comparison is
// constant-time so the token cannot be guessed byte by byte from response times.
func (s *Server) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Token == "" {
			next.ServeHTTP(w, r)
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(s.cfg.Token)) != 1 {
			s.fail(w, r, &apiError{status: http.StatusUnauthorized,
				detail: "this route needs the header Authorization: Bearer <token> (POOLFLOW_API_TOKEN)"})
			return
		}
		next.ServeHTTP(w, r)
	})
}
