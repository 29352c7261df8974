package server

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/gorilla/mux"
)

// Paging as in Airflow: limit (default 100) and offset.
const (
	defaultLimit = 100
	maxLimit     = 1000
)

type page struct{ limit, offset int }

func pageOf(r *http.Request) (page, error) {
	p := page{limit: defaultLimit}
	q := r.URL.Query()
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			return p, badRequest("limit", "want a whole number from 1 to %d, got %q", maxLimit, v)
		}
		p.limit = n
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return p, badRequest("offset", "want a whole number of at least 0, got %q", v)
		}
		p.offset = n
	}
	return p, nil
}

// slice returns the page's window of n items as [lo, hi).
func (p page) slice(n int) (int, int) {
	lo := min(p.offset, n)
	return lo, min(lo+p.limit, n)
}

// boolQuery reads an optional boolean query parameter.
func boolQuery(r *http.Request, name string) (value, set bool, err error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, false, nil
	}
	switch strings.ToLower(v) {
	case "true", "1", "yes":
		return true, true, nil
	case "false", "0", "no":
		return false, true, nil
	}
	return false, false, badRequest(name, "want true or false, got %q", v)
}

func pathVar(r *http.Request, name string) string { return mux.Vars(r)[name] }
