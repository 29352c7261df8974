package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/poolflow/poolflow/auth"

	"github.com/poolflow/poolflow/config"
	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/store"
)

// problem is the error body, Airflow's problem shape.
type problem struct {
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// apiError is an error that already knows its status.
type apiError struct {
	status int
	detail string
}

func (e *apiError) Error() string { return e.detail }

func badRequest(field, format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, detail: field + ": " + fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &apiError{status: http.StatusNotFound, detail: fmt.Sprintf(format, args...)}
}

func conflict(format string, args ...any) error {
	return &apiError{status: http.StatusConflict, detail: fmt.Sprintf(format, args...)}
}

// unavailableDetail is the body of every 503 caused by the store (§4.9).
const unavailableDetail = "pool state is unavailable"

func writeProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(problem{Title: http.StatusText(status), Status: status, Detail: detail})
}

// fail maps an error to its status explicitly: not found 404, refused by a pool or in conflict
// 409, store unavailable 503; anything else is a 500 and is logged.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, detail := s.classify(err)
	if status == http.StatusInternalServerError {
		s.log.Error("api: request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	} else if status == http.StatusServiceUnavailable && errors.Is(err, store.ErrUnavailable) {
		s.log.Warn("api: store unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="poolflow"`)
	}
	writeProblem(w, status, detail)
}

func (s *Server) classify(err error) (int, string) {
	var ae *apiError
	var re *executor.RequestError
	var denied *auth.Denied
	switch {
	case errors.As(err, &ae):
		return ae.status, ae.detail
	case errors.As(err, &denied):
		if denied.Anonymous {
			return http.StatusUnauthorized, denied.Error()
		}
		return http.StatusForbidden, denied.Error()
	case errors.As(err, &re):
		return http.StatusBadRequest, re.Error()
	case errors.Is(err, store.ErrUnavailable):
		return http.StatusServiceUnavailable, unavailableDetail
	case errors.Is(err, executor.ErrRefused), errors.Is(err, store.ErrConflict):
		return http.StatusConflict, trimSentinel(err)
	case errors.Is(err, config.ErrPoolInUse), errors.Is(err, config.ErrFilePool):
		return http.StatusConflict, err.Error()
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, store.ErrConstraint):
		// The schema refused a value the request carried (a CHECK, a foreign key): the request
		// is at fault, and the message names the column or constraint.
		return http.StatusBadRequest, err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, unavailableDetail
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads this answer.
		return http.StatusServiceUnavailable, "request cancelled"
	}
	if _, derr := s.daemon(); derr != nil && s.cfg.Daemon != nil {
		// The loop stopped under the request (shutdown): not a server fault.
		return http.StatusServiceUnavailable, derr.Error()
	}
	return http.StatusInternalServerError, "internal error"
}

// trimSentinel drops the "refused: " or "conflict: " prefix the sentinels put before the pool's
// own message, so the 409 body is that message.
func trimSentinel(err error) string {
	msg := err.Error()
	for _, p := range []string{executor.ErrRefused.Error() + ": ", store.ErrConflict.Error() + ": "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return msg
}

// writeJSON answers status with v as JSON. HTML characters stay as written: the API is read by
// programs, and messages such as "<nil> > int" should read as the pool or rule wrote them.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
