package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/poolflow/poolflow/executor"
	"github.com/poolflow/poolflow/store"
)

// TestClassify: each domain error a handler can meet becomes its status, wrapped or not.
func TestClassify(t *testing.T) {
	s := &Server{}
	wrap := func(err error) error { return fmt.Errorf("insert pools: %w", err) }
	cases := []struct {
		name string
		err  error
		want int
	}{
		{"request", &executor.RequestError{Field: "conf", Msg: "not an object"}, http.StatusBadRequest},
		{"schema refused a value", wrap(fmt.Errorf("%w: CHECK constraint failed: slots >= -1", store.ErrConstraint)), http.StatusBadRequest},
		{"unavailable", wrap(store.ErrUnavailable), http.StatusServiceUnavailable},
		{"conflict", wrap(store.ErrConflict), http.StatusConflict},
		{"refused", fmt.Errorf("%w: pool db is full", executor.ErrRefused), http.StatusConflict},
		{"not found", wrap(store.ErrNotFound), http.StatusNotFound},
		{"deadline", context.DeadlineExceeded, http.StatusServiceUnavailable},
		{"anything else", errors.New("boom"), http.StatusInternalServerError},
	}
	for _, c := range cases {
		if got, detail := s.classify(c.err); got != c.want {
			t.Errorf("%s: %d %q, want %d", c.name, got, detail, c.want)
		}
	}
}
